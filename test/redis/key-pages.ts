/**
 * A user with thousands of API keys, almost all deleted, and the pages a client reads of
 * them: what the Redis suites measure the cost of a page with.
 */
import type { ApiKeyQuery, ApiKeyRecord, GateStore } from '../../src/index.js'

/** Saves `total` keys of a fresh user, the first `active` of them live, the rest deleted; returns the user id. */
export async function userWithManyKeys(store: GateStore, total: number, active: number): Promise<string> {
  const userId = `many-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`
  const at = 1_700_000_000_000
  const key = (i: number): ApiKeyRecord => ({
    keyId: `k${String(i).padStart(5, '0')}${userId}`,
    userId,
    name: `key ${i}`,
    secretHash: 'b'.repeat(64),
    createdAt: at + i,
    lastUsedAt: i % 2 === 0 ? null : at + 10 * i,
    revokedAt: i < active ? null : at + 20 * i,
  })
  for (let start = 0; start < total; start += 250) {
    await Promise.all(Array.from({ length: Math.min(250, total - start) }, (_, i) => store.insertApiKey(key(start + i))))
  }
  return userId
}

/** The pages the endpoints read: the first page and the next in two orders, deleted keys left out and in. */
export function pagesOf(userId: string): Array<(store: GateStore, after?: string) => Promise<ApiKeyRecord[]>> {
  const page = (query: Omit<ApiKeyQuery, 'after'>) => async (store: GateStore, after?: string) => store.listApiKeys(userId, { ...query, after })
  return [
    page({ limit: 20, sortBy: 'createdAt', order: 'asc', includeRevoked: false }),
    page({ limit: 20, sortBy: 'lastUsedAt', order: 'desc', includeRevoked: false }),
    page({ limit: 20, sortBy: 'name', order: 'asc', includeRevoked: true }),
    page({ limit: 20, sortBy: 'revokedAt', order: 'desc', includeRevoked: true }),
  ]
}
