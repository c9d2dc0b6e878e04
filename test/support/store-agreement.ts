/**
 * A store on a database answers the newer contract queries (API key pages, connected
 * apps, session caps, live tokens) exactly as MemoryStore, the reference, does: the same
 * records go into both, every query goes to both, and the answers must be equal. It
 * complements the conformance suite with many combinations, above all the key pages,
 * where SQL ordering (collations, NULLs, row comparisons) can silently differ from JS.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { MemoryStore, type ApiKeyQuery, type ApiKeyRecord, type GateStore } from '../../src/index.js'

const fresh = (label: string) => `${label}-${randomBytes(6).toString('hex')}`

export function describeAgreementWithMemoryStore(name: string, getStore: () => GateStore): void {
  describe(`${name} agrees with MemoryStore`, () => {
    it('pages through a user’s API keys in every order, with and without revoked keys and a name search', async () => {
      const store = getStore()
      const reference = new MemoryStore()
      const userId = fresh('u')
      // Ties on every sort field, missing times, names differing only in case or by
      // code units (lower case sorts after upper case; 'é' after 'z').
      const names = ['etl', 'ETL nightly', 'backup', 'Backup', 'zeta', 'éclair', 'etl', 'a b', 'A', 'mixed Etl job']
      const keys: ApiKeyRecord[] = names.map((keyName, i) => ({
        keyId: `${userId}-k${String((i * 7) % 10)}`,
        userId,
        name: keyName,
        secretHash: 'f'.repeat(64),
        createdAt: 1_700_000_000_000 + (i % 4) * 1000,
        lastUsedAt: i % 3 === 0 ? null : 1_700_000_500_000 + (i % 2) * 1000,
        revokedAt: i % 4 === 1 ? 1_700_000_900_000 + (i % 3) : null,
      }))
      for (const key of keys) {
        await store.insertApiKey(key)
        reference.insertApiKey(key)
      }
      await store.insertApiKey({ ...(keys[0] as ApiKeyRecord), keyId: fresh('other'), userId: fresh('someone-else') })

      // Without a query: every key, oldest first (the order of keys created in one millisecond is not specified).
      const all = await store.listApiKeys(userId)
      expect(all.map((k) => k.createdAt)).toEqual([...keys.map((k) => k.createdAt)].sort((a, b) => a - b))
      expect([...all].sort((a, b) => (a.keyId < b.keyId ? -1 : 1))).toEqual([...keys].sort((a, b) => (a.keyId < b.keyId ? -1 : 1)))
      for (const sortBy of ['createdAt', 'lastUsedAt', 'revokedAt', 'name'] as const) {
        for (const order of ['asc', 'desc'] as const) {
          for (const includeRevoked of [true, false]) {
            for (const nameSearch of [undefined, 'etl', 'B', `${userId}-k3`, 'nothing like it']) {
              for (const limit of [3, 100]) {
                const query: ApiKeyQuery = { limit, sortBy, order, includeRevoked, ...(nameSearch === undefined ? {} : { nameSearch }) }
                // Every page, each from the last key of the one before.
                let after: string | undefined
                for (let page = 0; page < 6; page++) {
                  const paged = { ...query, ...(after === undefined ? {} : { after }) }
                  const expected = reference.listApiKeys(userId, paged)
                  expect(await store.listApiKeys(userId, paged), JSON.stringify(paged)).toEqual(expected)
                  if (expected.length < limit) break
                  after = expected.at(-1)?.keyId
                }
              }
            }
          }
        }
      }
      const someone = { limit: 10, sortBy: 'createdAt', order: 'asc', includeRevoked: true } as const
      expect(await store.listApiKeys(userId, { ...someone, after: 'no-such-key' })).toEqual([])
      expect(await store.listApiKeys(fresh('u'), { ...someone, after: keys[0]?.keyId })).toEqual([])
    })

    it('keeps the newest sessions of a user when trimming, ties broken by hash, and no one else’s', async () => {
      const store = getStore()
      const reference = new MemoryStore()
      const userId = fresh('u')
      const other = fresh('u')
      const now = Date.now()
      for (let i = 0; i < 7; i++) {
        for (const record of [
          { sessionHash: `${userId}-s${(i * 3) % 7}`, userId, passwordStamp: 'p', createdAt: now - Math.floor(i / 2) * 1000, expiresAt: now + 60_000 },
          { sessionHash: `${other}-s${i}`, userId: other, passwordStamp: 'p', createdAt: now, expiresAt: now + 60_000 },
        ]) {
          await store.insertSession(record)
          reference.insertSession(record)
        }
      }
      expect(await store.trimSessions(userId, 3)).toBe(reference.trimSessions(userId, 3))
      for (let i = 0; i < 7; i++) {
        expect(await store.getSession(`${userId}-s${i}`)).toEqual(reference.getSession(`${userId}-s${i}`))
        expect(await store.getSession(`${other}-s${i}`)).toBeDefined()
      }
      expect(await store.trimSessions(userId, 3)).toBe(0)
      expect(await store.trimSessions(userId, 0)).toBe(3)
    })

    it('records, lists and forgets grants, and never moves lastUsedAt back', async () => {
      const store = getStore()
      const userId = fresh('u')
      await store.recordGrant(userId, 'app-b', 2000)
      await store.recordGrant(userId, 'app-a', 1000)
      await store.recordGrant(userId, 'app-a', 5000)
      await store.recordGrant(userId, 'app-a', 3000)
      await store.recordGrant(fresh('u'), 'app-a', 1)
      expect(await store.listGrants(userId)).toEqual([
        { userId, appToken: 'app-a', firstAuthorizedAt: 1000, lastUsedAt: 5000 },
        { userId, appToken: 'app-b', firstAuthorizedAt: 2000, lastUsedAt: 2000 },
      ])
      expect(await store.getGrant(userId, 'app-b')).toEqual({ userId, appToken: 'app-b', firstAuthorizedAt: 2000, lastUsedAt: 2000 })
      await Promise.all([1, 2, 3, 4, 5].map((n) => store.recordGrant(userId, 'app-c', n * 1000)))
      expect(await store.getGrant(userId, 'app-c')).toMatchObject({ lastUsedAt: 5000 })
      expect(await store.deleteGrant(userId, 'app-a')).toBe(true)
      expect(await store.deleteGrant(userId, 'app-a')).toBe(false)
      expect(await store.getGrant(userId, 'app-a')).toBeUndefined()
    })

    it('lists a user’s live tokens oldest first, and revokes one application’s tokens of one user', async () => {
      const store = getStore()
      const userId = fresh('u')
      const now = Date.now()
      const token = (tokenHash: string, appToken: string, createdAt: number, expiresAt = now + 60_000) =>
        store.insertAccessToken({ tokenHash, userId, appToken, codeHash: null, createdAt, expiresAt, revokedAt: null })
      await token(fresh('t3'), 'app-a', now - 1000)
      await token(fresh('t1'), 'app-b', now - 3000)
      await token(fresh('t2'), 'app-a', now - 2000)
      await token(fresh('expired'), 'app-b', now - 9000, now - 1)
      await store.insertAccessToken({ tokenHash: fresh('theirs'), userId: fresh('u'), appToken: 'app-a', codeHash: null, createdAt: now, expiresAt: now + 60_000, revokedAt: null })
      expect((await store.listAccessTokens(userId)).map((t) => t.appToken)).toEqual(['app-b', 'app-a', 'app-a'])
      expect(await store.revokeAccessTokens({ userId, appToken: 'app-a' }, now)).toBe(2)
      expect((await store.listAccessTokens(userId)).map((t) => t.appToken)).toEqual(['app-b'])
      expect(await store.revokeAccessTokens({ userId, appToken: 'app-a' }, now)).toBe(0)
    })
  })
}
