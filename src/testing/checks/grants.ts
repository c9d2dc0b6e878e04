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
    'notes a use of a grant only while it exists: moves its last use forward, and never creates one',
    async (store) => {
      const userId = freshUserId()
      const app = freshAppToken()
      await store.touchGrant(userId, app, 2_000)
      assert.equal(await store.getGrant(userId, app), undefined, 'touching a grant that was never recorded must not create it')
      await store.recordGrant(userId, app, 1_000)
      await store.touchGrant(userId, app, 5_000)
      await store.touchGrant(userId, app, 3_000)
      assert.deepEqual(await store.getGrant(userId, app), { userId, appToken: app, firstAuthorizedAt: 1_000, lastUsedAt: 5_000 })
      await store.deleteGrant(userId, app)
      await store.touchGrant(userId, app, 9_000)
      assert.equal(await store.getGrant(userId, app), undefined, 'touching a deleted grant must not bring it back')
    },
  ],
  [
    'leaves no grant alive when uses of it race its revocation',
    async (store) => {
      // A revoked application must stay revoked: a use noted meanwhile (a read of the grant,
      // then a write) would bring the grant back, and with it the skipped consent.
      for (let round = 0; round < 10; round++) {
        const userId = freshUserId()
        const app = freshAppToken()
        await store.recordGrant(userId, app, 1_000)
        const touch = (i: number) => store.touchGrant(userId, app, 2_000 + i)
        await Promise.all([...Array.from({ length: 10 }, (_, i) => touch(i)), store.deleteGrant(userId, app), ...Array.from({ length: 10 }, (_, i) => touch(10 + i))])
        assert.equal(await store.getGrant(userId, app), undefined, `round ${round}: the grant is alive again after its deletion`)
        assert.deepEqual(await store.listGrants(userId), [])
      }
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
