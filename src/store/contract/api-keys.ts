/**
 * The API keys slice: a user's keys, each a key id and secret used as HTTP Basic
 * credentials. Needed by HTTP Basic (`basic`) and the API key endpoints (`apiKeyEndpoints`).
 */
import type { Awaitable, StoreLifecycle } from './lifecycle.js'

/** An API key: a key id and secret used as HTTP Basic credentials in place of a username and password. */
export interface ApiKeyRecord {
  /** Public identifier: the Basic user part. */
  readonly keyId: string
  readonly userId: string
  readonly name: string
  /** SHA-256 (hex) of the key secret. */
  readonly secretHash: string
  readonly createdAt: number
  readonly lastUsedAt: number | null
  /** When the key was revoked; a revoked key stays listable and never works again. */
  readonly revokedAt: number | null
}

/** The fields of an API key that can change. */
export type ApiKeyPatch = Partial<Pick<ApiKeyRecord, 'name' | 'secretHash' | 'lastUsedAt' | 'revokedAt'>>

/**
 * The bounds {@link ApiKeyStore.insertApiKey} checks for a key a user creates, in the same
 * atomic step as the insert: of any number of concurrent creates for one user, no more
 * succeed than the bounds leave room for, and no two active keys of a user share a name.
 */
export interface ApiKeyLimits {
  /** Refuse (`'active-limit'`) when the user has this many keys not revoked. */
  readonly maxActive: number
  /**
   * Refuse (`'total-limit'`) when the user has this many keys in all: active ones and
   * revoked ones whose purge time (see {@link ApiKeyStore.revokeApiKey}) has not passed.
   */
  readonly maxTotal: number
}

/**
 * What {@link ApiKeyStore.insertApiKey} did: `'created'`, or why it refused (nothing saved):
 * an active key of the user has the same name, or a bound of {@link ApiKeyLimits} is reached.
 */
export type ApiKeyInsertResult = 'created' | 'name-taken' | 'active-limit' | 'total-limit'

/** How {@link ApiKeyStore.listApiKeys} sorts: by this field, ties broken by `keyId`, both in `order`. */
export type ApiKeySortField = 'createdAt' | 'lastUsedAt' | 'revokedAt' | 'name'

/**
 * One page of a user's API keys, as the platform's `GET /api/api_keys` asks for it.
 * The store sorts and pages (SQL `ORDER BY ... LIMIT` with a row-comparison seek, Redis
 * sorted sets read by rank): a page costs about `limit` reads, however many keys the user
 * has, never a read of every key. A `nameSearch` reads the user's keys in order from the
 * seek point until the page is full; a store may stop after a bound it documents.
 */
export interface ApiKeyQuery {
  /** At most this many keys, 1 to 100. */
  readonly limit: number
  /** Sort by this field; a `null` time sorts as 0, `name` compares by UTF-16 code units (SQL `COLLATE "C"`). */
  readonly sortBy: ApiKeySortField
  readonly order: 'asc' | 'desc'
  /**
   * Keyset pagination: the `keyId` of the last key of the previous page; the page holds
   * the keys after it in this order. An unknown key id, or another user's, gives `[]`.
   */
  readonly after?: string | undefined
  /** Only keys whose name contains this (case-insensitively), or whose `keyId` equals it. */
  readonly nameSearch?: string | undefined
  /** Also list revoked keys. */
  readonly includeRevoked: boolean
}

/** The API keys slice of the contract. */
export interface ApiKeyStore extends StoreLifecycle {
  /**
   * Saves a new key. With `limits` (a user creating a key), atomically with the insert:
   * refuses when an active key of the same user has the same name (exactly, case and all),
   * or when a bound is reached; keys whose purge time has passed count for nothing (the
   * store may delete them here). One step (a Lua script, a transaction holding a per-user
   * lock), never a read of the counts followed by an insert: of 60 concurrent creates with
   * room for 5, exactly 5 succeed. Without `limits` (an operator, an import) it only saves.
   * @returns `'created'`, or why nothing was saved
   * @throws when a key with the same id exists
   */
  insertApiKey(record: ApiKeyRecord, limits?: ApiKeyLimits): Awaitable<ApiKeyInsertResult>
  /** Called on every API-key-authenticated request. */
  getApiKey(keyId: string): Awaitable<ApiKeyRecord | undefined>
  /**
   * A user's keys. Without a query: all of them, revoked ones included, oldest first.
   * With one: the page it asks for (see {@link ApiKeyQuery}).
   */
  listApiKeys(userId: string, query?: ApiKeyQuery): Awaitable<ApiKeyRecord[]>
  updateApiKey(keyId: string, patch: ApiKeyPatch): Awaitable<ApiKeyRecord | undefined>
  /**
   * Atomically revokes a key at `at` if it is not revoked yet (a compare-and-set), and lets
   * the store forget it once `purgeAt` has passed: from then on it is not counted by
   * {@link insertApiKey}, and the store deletes it (an expiry, a sweep, or the next insert
   * or listing of the user's keys), so a user's deleted keys do not pile up.
   * @returns the revoked key when this call revoked it; `undefined` when it was unknown or already revoked
   */
  revokeApiKey(keyId: string, at: number, purgeAt: number): Awaitable<ApiKeyRecord | undefined>
}
