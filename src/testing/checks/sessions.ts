/**
 * Sign-in sessions, of the OAuth slice: saved, found, deleted once, trimmed to the newest of a
 * user, each counted once when trims race.
 */
import assert from 'node:assert/strict'
import { group, type StoreCheck } from '../check.js'
import { freshHash, freshUserId, session } from '../fixtures.js'

export const sessionChecks: readonly StoreCheck[] = group('sessions', ['oauth'], [
  [
    'saves, finds and deletes a session once',
    async (store) => {
      const hash = freshHash()
      const record = session(hash)
      await store.insertSession(record)
      assert.deepEqual(await store.getSession(hash), record)
      assert.equal(await store.getSession(freshHash()), undefined)
      assert.equal(await store.deleteSession(hash), true)
      assert.equal(await store.getSession(hash), undefined)
      assert.equal(await store.deleteSession(hash), false)
    },
  ],
  [
    "keeps only a user's newest sessions when trimmed (ties by hash), and no other user's are touched",
    async (store) => {
      const userId = freshUserId()
      const now = Date.now()
      const hashes = Array.from({ length: 5 }, () => freshHash())
      for (const [i, hash] of hashes.entries()) await store.insertSession(session(hash, { userId, createdAt: now - 5000 + i * 1000 }))
      // Two sessions of the same instant: the greater hash counts as the newer.
      const tied = [freshHash(), freshHash()].sort()
      for (const hash of tied) await store.insertSession(session(hash, { userId, createdAt: now - 10_000 }))
      const bystander = freshHash()
      await store.insertSession(session(bystander, { createdAt: now - 99_000 }))
      assert.equal(await store.trimSessions(userId, 6), 1, 'sessions deleted keeping 6 of 7')
      assert.equal(await store.getSession(tied[0]!), undefined, 'of two sessions created together, the lower hash goes first')
      assert.notEqual(await store.getSession(tied[1]!), undefined)
      assert.equal(await store.trimSessions(userId, 2), 4, 'sessions deleted keeping 2 of 6')
      for (const hash of [tied[1]!, ...hashes.slice(0, 3)]) assert.equal(await store.getSession(hash), undefined)
      for (const hash of hashes.slice(3)) assert.notEqual(await store.getSession(hash), undefined)
      assert.notEqual(await store.getSession(bystander), undefined, "another user's session is kept")
      assert.equal(await store.trimSessions(userId, 2), 0)
    },
  ],
  [
    'counts each session once when trims of one user race',
    async (store) => {
      const userId = freshUserId()
      const now = Date.now()
      for (let i = 0; i < 8; i++) await store.insertSession(session(freshHash(), { userId, createdAt: now - i * 1000 }))
      const counts = await Promise.all(Array.from({ length: 6 }, () => store.trimSessions(userId, 2)))
      assert.equal(
        counts.reduce((a, b) => a + b, 0),
        6,
        'sessions deleted by all trims together',
      )
    },
  ],
])
