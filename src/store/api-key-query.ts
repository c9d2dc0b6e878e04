/**
 * The meaning of an {@link ApiKeyQuery}, as plain functions: what MemoryStore runs, and what
 * a store written in another language (SQL, Lua) must agree with.
 */
import type { ApiKeyQuery, ApiKeyRecord } from './store.js'

/** Whether a key belongs on a page of this query (before seeking): revoked filter and name search. */
export function matchesApiKeyQuery(key: ApiKeyRecord, query: Pick<ApiKeyQuery, 'includeRevoked' | 'nameSearch'>): boolean {
  if (!query.includeRevoked && key.revokedAt !== null) return false
  const search = query.nameSearch
  if (search === undefined || search === '') return true
  return key.keyId === search || key.name.toLowerCase().includes(search.toLowerCase())
}

/**
 * Orders two keys as the query sorts them: by the sort field (a `null` time as 0, names by
 * UTF-16 code units), ties by `keyId`, both in the query's direction.
 */
export function compareApiKeys(a: ApiKeyRecord, b: ApiKeyRecord, query: Pick<ApiKeyQuery, 'sortBy' | 'order'>): number {
  const x = sortValue(a, query.sortBy)
  const y = sortValue(b, query.sortBy)
  const byField = x < y ? -1 : x > y ? 1 : 0
  const ascending = byField !== 0 ? byField : a.keyId < b.keyId ? -1 : a.keyId > b.keyId ? 1 : 0
  return query.order === 'asc' ? ascending : -ascending
}

function sortValue(key: ApiKeyRecord, field: ApiKeyQuery['sortBy']): number | string {
  if (field === 'name') return key.name
  return key[field] ?? 0
}
