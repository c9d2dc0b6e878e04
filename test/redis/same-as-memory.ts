/**
 * The same operations on MemoryStore and on another store, and the same answers: for the
 * parts of the contract where "the same as MemoryStore" is the whole specification (key
 * pages, grants, session caps, a user's tokens).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemoryStore, type ApiKeyQuery, type ApiKeyRecord, type GateStore } from '../../src/index.js'

export function describeSameAsMemoryStore(name: string, makeStore: () => GateStore & { close(): Promise<void> }): void {
  describe(`${name} answers exactly as MemoryStore does`, () => {
    let other: GateStore & { close(): Promise<void> }
    beforeAll(() => {
      other = makeStore()
    })
    afterAll(() => other.close())

    /** Runs `steps` on both stores and returns both results. */
    async function both<T>(steps: (store: GateStore) => Promise<T>): Promise<[T, T]> {
      return [await steps(new MemoryStore()), await steps(other)]
    }

    it('pages, sorts and searches API keys', async () => {
      const userId = `keys-${Date.now()}`
      const names = ['Nightly ETL', 'nightly backup', 'Ärger', 'zeta', 'alpha', 'ALPHA two', 'etl', 'b', 'B', '']
      const keys: ApiKeyRecord[] = Array.from({ length: 23 }, (_, i) => ({
        keyId: `k${String((i * 7) % 23).padStart(2, '0')}-${userId}`,
        userId,
        name: names[i % names.length] as string,
        secretHash: 'b'.repeat(64),
        createdAt: 1_700_000_000_000 + (i % 5) * 1000,
        lastUsedAt: i % 3 === 0 ? null : 1_750_000_000_000 + (i % 4),
        revokedAt: i % 4 === 0 ? 1_800_000_000_000 + (i % 2) : null,
      }))
      const queries: ApiKeyQuery[] = []
      for (const sortBy of ['createdAt', 'lastUsedAt', 'revokedAt', 'name'] as const) {
        for (const order of ['asc', 'desc'] as const) {
          for (const includeRevoked of [true, false]) {
            for (const nameSearch of [undefined, 'alpha', 'etl', keys[5]?.keyId]) queries.push({ limit: 4, sortBy, order, includeRevoked, nameSearch })
          }
        }
      }
      const [memory, redis] = await both(async (store) => {
        for (const key of keys) await store.insertApiKey(key)
        await store.insertApiKey({ ...(keys[0] as ApiKeyRecord), keyId: `other-${userId}`, userId: `other-${userId}` })
        // Without a query: every key (their order is checked below).
        const all = await store.listApiKeys(userId)
        const pages: string[][][] = [[all.map((k) => k.keyId).sort()]]
        for (const query of queries) {
          const walk: string[][] = []
          let after: string | undefined
          for (;;) {
            const page = await store.listApiKeys(userId, { ...query, after })
            walk.push(page.map((k) => k.keyId))
            if (page.length < query.limit) break
            after = page.at(-1)?.keyId
          }
          pages.push(walk)
        }
        pages.push([(await store.listApiKeys(userId, { ...(queries[0] as ApiKeyQuery), after: `other-${userId}` })).map((k) => k.keyId)])
        return pages
      })
      const oldestFirst = (await other.listApiKeys(userId)).map((k) => k.createdAt)
      expect(oldestFirst).toEqual([...oldestFirst].sort((a, b) => a - b))
      for (let i = 0; i < memory.length; i++) expect({ i, query: queries[i - 1], pages: redis[i] }).toEqual({ i, query: queries[i - 1], pages: memory[i] })
    })

    it('records, lists and deletes grants', async () => {
      const userId = `grants-${Date.now()}`
      const [memory, redis] = await both(async (store) => {
        await store.recordGrant(userId, 'app-b', 2000)
        await store.recordGrant(userId, 'app-a', 1000)
        await store.recordGrant(userId, 'app-a', 5000)
        await store.recordGrant(userId, 'app-a', 3000)
        await Promise.all([store.recordGrant(userId, 'app-c', 9000), store.recordGrant(userId, 'app-c', 8000)])
        const seen: unknown[] = [await store.listGrants(userId), await store.getGrant(userId, 'app-a'), await store.getGrant(userId, 'nope')]
        seen.push(await store.deleteGrant(userId, 'app-b'), await store.deleteGrant(userId, 'app-b'), await store.listGrants(userId))
        return seen
      })
      expect(redis).toEqual(memory)
    })

    it('keeps the newest sessions of a user when trimming', async () => {
      const userId = `sessions-${Date.now()}`
      const now = Date.now()
      const [memory, redis] = await both(async (store) => {
        for (const [hash, at] of [['s1', 1], ['s2', 2], ['s3', 2], ['s4', 3], ['s5', 0]] as const) {
          await store.insertSession({ sessionHash: `${userId}-${hash}`, userId, passwordStamp: 'p', createdAt: now + at, expiresAt: now + 60_000 })
        }
        await store.insertSession({ sessionHash: `${userId}-other`, userId: `${userId}-other`, passwordStamp: 'p', createdAt: now, expiresAt: now + 60_000 })
        const trimmed = [await store.trimSessions(userId, 2), await store.trimSessions(userId, 2)]
        const left = await Promise.all(['s1', 's2', 's3', 's4', 's5', 'other'].map(async (h) => (await store.getSession(`${userId}-${h}`)) !== undefined))
        return { trimmed, left }
      })
      expect(redis).toEqual(memory)
      expect(redis.left).toEqual([false, false, true, true, false, true])
    })

    it("lists a user's live tokens and revokes one user's tokens for one application", async () => {
      const userId = `tokens-${Date.now()}`
      const now = Date.now()
      const [memory, redis] = await both(async (store) => {
        const token = (n: number, appToken: string, createdAt: number, expiresAt = now + 60_000) =>
          store.insertAccessToken({ tokenHash: `${userId}-t${n}`, userId, appToken, codeHash: null, createdAt, expiresAt, revokedAt: null })
        await token(1, 'app-a', now + 3)
        await token(2, 'app-b', now + 1)
        await token(3, 'app-a', now + 2)
        await token(4, 'app-c', now - 5000, now - 1)
        await store.insertAccessToken({ tokenHash: `${userId}-x`, userId: `${userId}-x`, appToken: 'app-a', codeHash: null, createdAt: now, expiresAt: now + 60_000, revokedAt: null })
        const before = (await store.listAccessTokens(userId)).map((t) => t.tokenHash)
        const revoked = await Promise.all([store.revokeAccessTokens({ userId, appToken: 'app-a' }, now), store.revokeAccessTokens({ userId, appToken: 'app-a' }, now)])
        const after = (await store.listAccessTokens(userId)).map((t) => t.tokenHash)
        const other = (await store.getAccessToken(`${userId}-x`))?.revokedAt
        return { before, revoked: revoked[0] + revoked[1], after, other }
      })
      expect(redis).toEqual(memory)
      expect(redis.revoked).toBe(2)
    })
  })
}
