/**
 * The storage contract: everything the gate keeps, behind small interfaces a Redis,
 * PostgreSQL or any other backend can implement. It comes in slices, one per feature, each
 * in its own file under `contract/`:
 *
 * | slice | interface | needed by |
 * | --- | --- | --- |
 * | applications | {@link ApplicationStore} | every gate |
 * | rates | {@link RateStore} | every gate (from `store`, or from `rateStore`) |
 * | users | {@link UserStore} | `basic`, `oauth`, `currentUser`, `apiKeyEndpoints`, `connectedApps` |
 * | API keys | {@link ApiKeyStore} | `basic`, `apiKeyEndpoints` |
 * | OAuth | {@link OAuthStore} | `oauth`, `connectedApps` |
 *
 * {@link GateStore} is all of them: a store that implements it serves every feature.
 * `createGate` asks only for the slices of the features that are on (see `slices.ts`).
 *
 * Every method may answer synchronously or with a promise. Records are plain JSON-safe
 * objects; times are epoch milliseconds.
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
 * against a new backend: it is the definition of "implements the contract", slice by slice.
 */
import type { ApiKeyStore } from './contract/api-keys.js'
import type { ApplicationStore } from './contract/applications.js'
import type { OAuthStore } from './contract/oauth.js'
import type { RateStore } from './contract/rates.js'
import type { RequestLookupStore } from './contract/request-lookup.js'
import type { UserStore } from './contract/users.js'
import type { UsageStore } from './usage-contract.js'

export type { Awaitable, StoreEventSink, StoreLifecycle } from './contract/lifecycle.js'
export type { ApplicationRecord, ApplicationPatch, ApplicationStore, ApplicationLimits, ApplicationInsertResult, ApplicationFilter } from './contract/applications.js'
export { assertNotSuspended, isSuspended, suspensionMessage } from './contract/applications.js'
export type { UserRecord, UserPatch, UserStore } from './contract/users.js'
export type { ApiKeyRecord, ApiKeyPatch, ApiKeyLimits, ApiKeyInsertResult, ApiKeySortField, ApiKeyQuery, ApiKeyStore } from './contract/api-keys.js'
export type { AccessTokenRecord, AuthorizationCodeRecord, SessionRecord, AccessTokenFilter, GrantRecord, OAuthStore } from './contract/oauth.js'
export type { RateStore } from './contract/rates.js'
export type { CredentialLookup, LimitsLookup, RateStep, RateStepLookup, RequestLookup, RequestLookupResult, RequestLookupStore } from './contract/request-lookup.js'
export type { LimitResult, LimitStep, QuotaLimitStep, RateLimitStep } from './contract/rates.js'

/**
 * What the gate needs from a backend that serves every feature: the intersection of the
 * slices. Usage (`addUsage`, `getUsage`, `topUsage`) is an optional slice: see
 * {@link UsageStore}; without it the gate counts nothing. `lookupRequest` is an optional
 * capability (see {@link RequestLookupStore}): a request's store work in one round trip.
 *
 * @example
 * class MyStore implements GateStore {
 *   getApplication(appToken) { return db.query('select ... where app_token = $1', [appToken]) }
 *   // ...
 * }
 * const gate = createGate({ store: new MyStore() })
 */
export interface GateStore extends ApplicationStore, RateStore, UserStore, ApiKeyStore, OAuthStore, Partial<UsageStore>, RequestLookupStore {}

/**
 * A store of some slices: always applications, and whichever others the gate's features
 * need (rates too, unless `rateStore` holds them). `createGate` checks, when it is made,
 * that the store has every method of the slices the features that are on need, and
 * refuses it with a `TypeError` naming the slice, the methods and the options otherwise.
 *
 * @example
 * class SmallStore implements ApplicationStore, RateStore { ... }
 * createGate({ store: new SmallStore(), basic: false, oauth: false, currentUser: false, apiKeyEndpoints: false, connectedApps: false })
 */
export type PartialGateStore = ApplicationStore & Partial<Omit<GateStore, keyof ApplicationStore>>
