/**
 * The storage contract: everything the gate keeps, behind one small interface a Redis,
 * PostgreSQL or any other backend can implement. Every method may answer synchronously
 * or with a promise. Records are plain JSON-safe objects; times are epoch milliseconds.
 *
 * Operations the gate relies on being atomic say so: a backend must run each of them as
 * one indivisible step (a Lua script, one SQL statement, a compare-and-set, or a
 * transaction that locks what it reads with `SELECT ... FOR UPDATE`), never as a read
 * followed by a write.
 *
 * Keys (app tokens, ids, usernames, hashes) are case-sensitive: compare them exactly. In
 * SQL that means a binary collation (`COLLATE "C"`, `utf8mb4_bin`): MySQL's and MariaDB's
 * default collations would find `ABC` under `abc`.
 *
 * Secrets never reach the store in clear: it holds SHA-256 hashes of high-entropy
 * secrets and scrypt hashes of passwords, and looks records up by those hashes.
 *
 * Every `update*` method applies only the fields in its patch, atomically (a field-level
 * update such as SQL `UPDATE ... SET` or Redis `HSET`, never a read-merge-write): the gate
 * writes an API key's `lastUsedAt` in the background while an operator may revoke it.
 *
 * Run the conformance kit, `open-data-gate/testing` (`checkStore`, `describeStore`),
 * against a new backend: it is the definition of "implements the contract".
 */
import type { RateResult } from '../limits/gcra.js'
import type { UsageStore } from './usage-contract.js'

/** A value or a promise of it. */
export type Awaitable<T> = T | Promise<T>

/** A registered application. */
export interface ApplicationRecord {
  /** The app token (`client_id` in OAuth). Public: it identifies, never authenticates. */
  readonly appToken: string
  readonly name: string
  /** SHA-256 (hex) of the secret token (`client_secret`). */
  readonly secretHash: string
  /** Absolute https URL every OAuth `redirect_uri` must start with; `null` when OAuth is not used. */
  readonly callbackPrefix: string | null
  /** Per-application override of the application throttle limit ("higher limits by request"). */
  readonly limit: number | null
  readonly createdAt: number
  readonly updatedAt: number
}

/** The fields of an application that can change after registration. */
export type ApplicationPatch = Partial<Pick<ApplicationRecord, 'name' | 'secretHash' | 'callbackPrefix' | 'limit' | 'updatedAt'>>

/** An account. */
export interface UserRecord {
  /** Platform-style id, like `abcd-1234`. */
  readonly id: string
  /**
   * The sign-in name as the gate prepared it (RFC 8265 UsernameCaseMapped: width mapped,
   * lower case, NFC; a name saved before that rule: NFC, lower case); unique.
   */
  readonly username: string
  /**
   * The username's UTS #39 skeleton (what it looks like), set by the gate on every new
   * user: two users whose names look alike share one. A store keeps it and finds users by
   * it ({@link GateStore.getUserBySkeleton}); absent or `null` on a record saved before it
   * existed. Never shown to anyone.
   */
  readonly usernameSkeleton?: string | null
  readonly screenName: string
  readonly displayName: string
  readonly email: string
  /** What the user may do, as the host application names it. */
  readonly rights: readonly string[]
  /** scrypt hash with its salt and parameters, or `null` for an account without a password (single sign-on). */
  readonly passwordHash: string | null
  readonly createdAt: number
  readonly updatedAt: number
}

/** The fields of a user that can change. */
export type UserPatch = Partial<Pick<UserRecord, 'screenName' | 'displayName' | 'email' | 'rights' | 'passwordHash' | 'updatedAt'>>

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

/** An OAuth access token. */
export interface AccessTokenRecord {
  /** SHA-256 (hex) of the token: the token itself is never stored. */
  readonly tokenHash: string
  readonly userId: string
  /** The application the token was issued to (its `client_id`). */
  readonly appToken: string
  /** SHA-256 of the authorization code it was issued from, if any: a replayed code revokes it. */
  readonly codeHash: string | null
  readonly createdAt: number
  readonly expiresAt: number
  readonly revokedAt: number | null
}

/** An OAuth authorization code, bound to everything the token request must match. */
export interface AuthorizationCodeRecord {
  /** SHA-256 (hex) of the code. */
  readonly codeHash: string
  /** The application it was issued to. */
  readonly appToken: string
  readonly userId: string
  /** The redirect_uri of the authorize request, exactly as sent. */
  readonly redirectUri: string
  /** The PKCE S256 challenge, or `null` when the request had none. */
  readonly codeChallenge: string | null
  readonly createdAt: number
  readonly expiresAt: number
  /** When it was exchanged; set once, by {@link GateStore.consumeAuthorizationCode}. */
  readonly usedAt: number | null
}

/** A browser session of the gate's own login page. */
export interface SessionRecord {
  /** SHA-256 (hex) of the session cookie's value. */
  readonly sessionHash: string
  readonly userId: string
  /** SHA-256 of the user's password hash at sign-in: a password change ends the session. */
  readonly passwordStamp: string
  readonly createdAt: number
  readonly expiresAt: number
}

/**
 * Which access tokens {@link GateStore.revokeAccessTokens} revokes: all of one user, of one
 * application, of one code, or one user's tokens for one application (a "connected app").
 */
export type AccessTokenFilter =
  | { readonly userId: string; readonly appToken?: undefined }
  | { readonly appToken: string; readonly userId?: undefined }
  | { readonly userId: string; readonly appToken: string }
  | { readonly codeHash: string }

/**
 * A user's consent to an application: what "connected apps" lists. Created when the user
 * approves on the consent page (or a token is issued with `gate.tokens.issue`); deleting
 * it makes the next authorize ask for consent again.
 */
export interface GrantRecord {
  readonly userId: string
  readonly appToken: string
  readonly firstAuthorizedAt: number
  /** The latest approval, token issue or (at most daily) token use. */
  readonly lastUsedAt: number
}

/**
 * The bounds {@link GateStore.insertApiKey} checks for a key a user creates, in the same
 * atomic step as the insert: of any number of concurrent creates for one user, no more
 * succeed than the bounds leave room for, and no two active keys of a user share a name.
 */
export interface ApiKeyLimits {
  /** Refuse (`'active-limit'`) when the user has this many keys not revoked. */
  readonly maxActive: number
  /**
   * Refuse (`'total-limit'`) when the user has this many keys in all: active ones and
   * revoked ones whose purge time (see {@link GateStore.revokeApiKey}) has not passed.
   */
  readonly maxTotal: number
}

/**
 * What {@link GateStore.insertApiKey} did: `'created'`, or why it refused (nothing saved):
 * an active key of the user has the same name, or a bound of {@link ApiKeyLimits} is reached.
 */
export type ApiKeyInsertResult = 'created' | 'name-taken' | 'active-limit' | 'total-limit'

/** How {@link GateStore.listApiKeys} sorts: by this field, ties broken by `keyId`, both in `order`. */
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

/** Notifications a store gives the gate (wired by {@link GateStore.attach}). */
export interface StoreEventSink {
  /** A rate key was dropped to make room, before its window ran out: its client starts afresh. */
  rateKeyEvicted(key: string): void
  /**
   * An application was inserted, updated or deleted, by this instance or any other: the
   * gate drops its cached copy. A store shared by several processes calls it for changes
   * made anywhere (Redis pub/sub, PostgreSQL `LISTEN`/`NOTIFY`); a store only this process
   * sees calls it for its own changes, or not at all (the gate forgets its own writes).
   */
  applicationChanged(appToken: string): void
}

/**
 * What the gate needs of a store that only counts requests: the `rateStore` option, for a
 * deployment that keeps records in one store (PostgreSQL) and rate counters in another (Redis).
 */
export type RateStore = Pick<GateStore, 'consumeRate' | 'resetRate'> & Partial<Pick<GateStore, 'attach' | 'close'>>

/**
 * What the gate needs from a backend. Usage (`addUsage`, `getUsage`, `topUsage`) is an
 * optional slice: see {@link UsageStore}.
 *
 * @example
 * class MyStore implements GateStore {
 *   getApplication(appToken) { return db.query('select ... where app_token = $1', [appToken]) }
 *   // ...
 * }
 * const gate = createGate({ store: new MyStore() })
 */
export interface GateStore extends Partial<UsageStore> {
  /**
   * Saves a new application.
   * @throws when an application with the same app token exists
   */
  insertApplication(record: ApplicationRecord): Awaitable<void>
  /** The application with this app token, or `undefined`. Called on every request that carries a token. */
  getApplication(appToken: string): Awaitable<ApplicationRecord | undefined>
  /** Every application, oldest first. */
  listApplications(): Awaitable<ApplicationRecord[]>
  /** Applies `patch` and returns the new record, or `undefined` when there is no such application. */
  updateApplication(appToken: string, patch: ApplicationPatch): Awaitable<ApplicationRecord | undefined>
  /** Deletes an application; `false` when there was none. */
  deleteApplication(appToken: string): Awaitable<boolean>

  /**
   * Saves a new user.
   * @throws when a user with the same id or username exists
   */
  insertUser(record: UserRecord): Awaitable<void>
  getUser(id: string): Awaitable<UserRecord | undefined>
  /** Looks a user up by the normalised username. Called on every password-authenticated request. */
  getUserByUsername(username: string): Awaitable<UserRecord | undefined>
  /**
   * A user whose `usernameSkeleton` is this one (any of them when several are), or
   * `undefined`: the gate refuses a new username that looks like an existing one. Called
   * only when a user is created; index it. Optional: without it, look-alike usernames in
   * other scripts (`аda` in Cyrillic beside `ada`) are not refused; invisible characters,
   * width and case variants are refused either way.
   */
  getUserBySkeleton?(skeleton: string): Awaitable<UserRecord | undefined>
  updateUser(id: string, patch: UserPatch): Awaitable<UserRecord | undefined>
  /** Deletes a user; their keys and tokens stop working because they no longer resolve to a user. */
  deleteUser(id: string): Awaitable<boolean>
  /**
   * Every user, oldest first: for operators (`open-data-gate users list`), never on a
   * request's path. Optional: without it `gate.users.list()` says the store cannot list.
   */
  listUsers?(): Awaitable<UserRecord[]>

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

  /** @throws when a token with the same hash exists */
  insertAccessToken(record: AccessTokenRecord): Awaitable<void>
  /** Looks a token up by its hash. Called on every OAuth-authenticated request. May drop expired tokens. */
  getAccessToken(tokenHash: string): Awaitable<AccessTokenRecord | undefined>
  /**
   * Atomically marks one token revoked at `at`.
   * @returns `true` when this call revoked it, `false` when it was unknown or already revoked
   */
  revokeAccessToken(tokenHash: string, at: number): Awaitable<boolean>
  /**
   * Atomically revokes every active token of a user, an application, a user for one
   * application, or an authorization code: when the call returns, none of them works, and
   * of concurrent calls each token is counted by exactly one.
   * @returns how many tokens this call revoked
   */
  revokeAccessTokens(filter: AccessTokenFilter, at: number): Awaitable<number>
  /** A user's live tokens (not revoked, not expired), oldest first. */
  listAccessTokens(userId: string): Awaitable<AccessTokenRecord[]>

  /**
   * Atomically records a user's consent to an application at `at`: creates the grant with
   * `firstAuthorizedAt` and `lastUsedAt` both `at`, or, when it exists, sets
   * `lastUsedAt` to the later of the two (never moves it back).
   */
  recordGrant(userId: string, appToken: string, at: number): Awaitable<void>
  getGrant(userId: string, appToken: string): Awaitable<GrantRecord | undefined>
  /** A user's grants, oldest `firstAuthorizedAt` first. */
  listGrants(userId: string): Awaitable<GrantRecord[]>
  /** Forgets a grant; `false` when there was none. */
  deleteGrant(userId: string, appToken: string): Awaitable<boolean>

  /** @throws when a code with the same hash exists */
  insertAuthorizationCode(record: AuthorizationCodeRecord): Awaitable<void>
  /** The code with this hash, used or not (a used one is how a replay is recognised). May drop expired codes. */
  getAuthorizationCode(codeHash: string): Awaitable<AuthorizationCodeRecord | undefined>
  /**
   * Atomically marks a code used at `at`, if it is not yet: a compare-and-set. Of any
   * number of concurrent calls for one code, exactly one returns `true`.
   */
  consumeAuthorizationCode(codeHash: string, at: number): Awaitable<boolean>

  insertSession(record: SessionRecord): Awaitable<void>
  /** The session, or `undefined` once it has expired (`expiresAt` ≤ now); may drop expired sessions. */
  getSession(sessionHash: string): Awaitable<SessionRecord | undefined>
  deleteSession(sessionHash: string): Awaitable<boolean>
  /**
   * Atomically deletes all but the newest `keep` sessions of a user (newest by
   * `createdAt`, ties by `sessionHash`): the gate caps live sign-ins per user.
   * @returns how many sessions this call deleted
   */
  trimSessions(userId: string, keep: number): Awaitable<number>

  /**
   * One atomic throttling step for `key`: `limit` requests per `windowMs`, consuming
   * `cost` units (0 reads without consuming). Implement with {@link "open-data-gate"!gcraStep | gcraStep} semantics,
   * on the store's own clock so that every instance agrees.
   */
  consumeRate(key: string, limit: number, windowMs: number, cost: number): Awaitable<RateResult>
  /** Forgets a rate key (an operator lifting a block). */
  resetRate(key: string): Awaitable<void>

  /** Called once by the gate with the sink for the store's notifications. */
  attach?(sink: StoreEventSink): void
  /** Releases connections and timers. */
  close?(): Awaitable<void>
}
