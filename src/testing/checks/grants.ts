/**
 * Grants (connected apps), of the OAuth slice: recorded once, their last use moved only forward,
 * forgotten once.
 */
import assert from 'node:assert/strict'
import { group, type StoreCheck } from '../check.js'
import { freshAppToken, freshUserId } from '../fixtures.js'

export const grantChecks: readonly StoreCheck[] = group('grants', ['oauth'], [
  [
    'records a grant once and moves only its last use forward',
    async (store) => {
      const userId = freshUserId()
      const app = freshAppToken()
      assert.equal(await store.getGrant(userId, app), undefined)
      await store.recordGrant(userId, app, 1_000)
      assert.deepEqual(await store.getGrant(userId, app), { userId, appToken: app, firstAuthorizedAt: 1_000, lastUsedAt: 1_000 })
      await store.recordGrant(userId, app, 5_000)
      await store.recordGrant(userId, app, 3_000)
      assert.deepEqual(await store.getGrant(userId, app), { userId, appToken: app, firstAuthorizedAt: 1_000, lastUsedAt: 5_000 })
    },
  ],
  [
    "lists a user's grants oldest first and no one else's",
    async (store) => {
      const userId = freshUserId()
      const [a, b] = [freshAppToken(), freshAppToken()]
      await store.recordGrant(userId, b, 2_000)
      await store.recordGrant(userId, a, 1_000)
      await store.recordGrant(freshUserId(), a, 500)
      assert.deepEqual(await store.listGrants(userId), [
        { userId, appToken: a, firstAuthorizedAt: 1_000, lastUsedAt: 1_000 },
        { userId, appToken: b, firstAuthorizedAt: 2_000, lastUsedAt: 2_000 },
      ])
      assert.deepEqual(await store.listGrants(freshUserId()), [])
    },
  ],
  [
    'forgets a grant once, and a later one starts afresh',
    async (store) => {
      const userId = freshUserId()
      const app = freshAppToken()
      await store.recordGrant(userId, app, 1_000)
      assert.equal(await store.deleteGrant(userId, app), true)
      assert.equal(await store.deleteGrant(userId, app), false)
      assert.equal(await store.getGrant(userId, app), undefined)
      await store.recordGrant(userId, app, 9_000)
      assert.equal((await store.getGrant(userId, app))?.firstAuthorizedAt, 9_000)
    },
  ],
  [
    'keeps one grant with the latest use when many records of it race',
    async (store) => {
      const userId = freshUserId()
      const app = freshAppToken()
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.recordGrant(userId, app, 1_000 + i)))
      const list = await store.listGrants(userId)
      assert.equal(list.length, 1)
      assert.equal(list[0]?.lastUsedAt, 1_019)
    },
  ],
])
