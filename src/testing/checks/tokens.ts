/**
 * Access tokens, of the OAuth slice: saved by hash, revoked one by one or by user, application
 * and code, each counted once when revocations race.
 */
import assert from 'node:assert/strict'
import type { GateStore } from '../../store/store.js'
import { group, type StoreCheck } from '../check.js'
import { accessToken, freshAppToken, freshHash, freshUserId, LATER, LATEST } from '../fixtures.js'

const FILTER_FIELDS = ['userId', 'appToken', 'codeHash'] as const
const freshOf = { userId: freshUserId, appToken: freshAppToken, codeHash: freshHash }

export const tokenChecks: readonly StoreCheck[] = group('access tokens', ['oauth'], [
  [
    'saves and finds a token by its hash, and refuses a duplicate',
    async (store) => {
      const hash = freshHash()
      const record = accessToken(hash, { codeHash: freshHash() })
      await store.insertAccessToken(record)
      assert.deepEqual(await store.getAccessToken(hash), record)
      assert.equal(await store.getAccessToken(freshHash()), undefined)
      await assert.rejects(async () => store.insertAccessToken(record), 'a duplicate token hash must throw')
    },
  ],
  [
    'revokes a token once',
    async (store) => {
      const hash = freshHash()
      await store.insertAccessToken(accessToken(hash))
      assert.equal(await store.revokeAccessToken(hash, LATER), true)
      assert.equal((await store.getAccessToken(hash))?.revokedAt, LATER)
      assert.equal(await store.revokeAccessToken(hash, LATEST), false)
      assert.equal((await store.getAccessToken(hash))?.revokedAt, LATER, 'a second revocation must not move revokedAt')
      assert.equal(await store.revokeAccessToken(freshHash(), 1), false)
    },
  ],
  [
    'revokes exactly once when many revocations of one token race',
    async (store) => {
      const hash = freshHash()
      await store.insertAccessToken(accessToken(hash))
      const results = await Promise.all(Array.from({ length: 20 }, () => store.revokeAccessToken(hash, Date.now())))
      assert.equal(results.filter(Boolean).length, 1, 'revocations that returned true')
    },
  ],
  ...FILTER_FIELDS.map((field): readonly [string, (store: GateStore) => Promise<void>] => [
    `revokes every active token with the same ${field} and nothing else`,
    async (store) => {
      const shared = freshOf[field]()
      const mine = [freshHash(), freshHash(), freshHash()] as const
      const other = freshHash()
      for (const hash of mine) await store.insertAccessToken(accessToken(hash, { [field]: shared }))
      await store.insertAccessToken(accessToken(other, { [field]: freshOf[field]() }))
      await store.revokeAccessToken(mine[0], 5)
      const filter = { [field]: shared } as { userId: string }
      assert.equal(await store.revokeAccessTokens(filter, LATER), 2, 'tokens this call revoked')
      assert.equal((await store.getAccessToken(mine[0]))?.revokedAt, 5, 'an already revoked token keeps its revokedAt')
      assert.equal((await store.getAccessToken(mine[1]))?.revokedAt, LATER)
      assert.equal((await store.getAccessToken(mine[2]))?.revokedAt, LATER)
      assert.equal((await store.getAccessToken(other))?.revokedAt, null, 'a token of another ' + field + ' is untouched')
      assert.equal(await store.revokeAccessTokens(filter, LATEST), 0)
    },
  ]),
  [
    "revokes one user's tokens for one application, and not their others nor another user's",
    async (store) => {
      const userId = freshUserId()
      const app = freshAppToken()
      const target = [freshHash(), freshHash()]
      const otherApp = freshHash()
      const otherUser = freshHash()
      for (const hash of target) await store.insertAccessToken(accessToken(hash, { userId, appToken: app }))
      await store.insertAccessToken(accessToken(otherApp, { userId }))
      await store.insertAccessToken(accessToken(otherUser, { appToken: app }))
      assert.equal(await store.revokeAccessTokens({ userId, appToken: app }, LATER), 2)
      for (const hash of target) assert.equal((await store.getAccessToken(hash))?.revokedAt, LATER)
      assert.equal((await store.getAccessToken(otherApp))?.revokedAt, null)
      assert.equal((await store.getAccessToken(otherUser))?.revokedAt, null)
    },
  ],
  [
    'counts each token once when revocations by user, application, code and hash race',
    async (store) => {
      const userId = freshUserId()
      const app = freshAppToken()
      const codeHash = freshHash()
      const hashes = Array.from({ length: 12 }, () => freshHash())
      for (const [i, hash] of hashes.entries()) {
        await store.insertAccessToken(accessToken(hash, { userId, appToken: i % 2 === 0 ? app : freshAppToken(), codeHash: i % 3 === 0 ? codeHash : null }))
      }
      const at = Date.now()
      const counts = await Promise.all([
        ...Array.from({ length: 5 }, () => store.revokeAccessTokens({ userId }, at)),
        ...Array.from({ length: 3 }, () => store.revokeAccessTokens({ appToken: app }, at)),
        ...Array.from({ length: 3 }, () => store.revokeAccessTokens({ userId, appToken: app }, at)),
        ...Array.from({ length: 3 }, () => store.revokeAccessTokens({ codeHash }, at)),
        ...hashes.slice(0, 4).map(async (hash) => ((await store.revokeAccessToken(hash, at)) ? 1 : 0)),
      ])
      assert.equal(
        counts.reduce((a, b) => a + b, 0),
        hashes.length,
        'the revocations together must count every token exactly once',
      )
      assert.deepEqual(await store.listAccessTokens(userId), [], 'no token of the user is left live')
    },
  ],
  [
    "lists a user's live tokens oldest first, leaving out revoked ones and other users'",
    async (store) => {
      const userId = freshUserId()
      const now = Date.now()
      const older = accessToken(freshHash(), { userId, createdAt: now - 2000 })
      const newer = accessToken(freshHash(), { userId, createdAt: now - 1000 })
      const revoked = freshHash()
      await store.insertAccessToken(newer)
      await store.insertAccessToken(older)
      await store.insertAccessToken(accessToken(revoked, { userId }))
      await store.insertAccessToken(accessToken(freshHash()))
      await store.revokeAccessToken(revoked, now)
      assert.deepEqual(await store.listAccessTokens(userId), [older, newer])
      assert.deepEqual(await store.listAccessTokens(freshUserId()), [])
    },
  ],
])
