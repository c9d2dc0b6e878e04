/**
 * The storage contract: everything the gate keeps, behind one small interface a Redis,
 * PostgreSQL or any other backend can implement. Every method may answer synchronously
 * or with a promise. Records are plain JSON-safe objects; times are epoch milliseconds.
 *
 * Operations the gate relies on being atomic say so: a backend must run each of them as
 * one indivisible step (a Lua script, one SQL statement, a compare-and-set), never as a
 * read followed by a write.
 *
 * Secrets never reach the store in clear: it holds SHA-256 hashes of high-entropy
 * secrets and scrypt hashes of passwords, and looks records up by those hashes.
 *
 * Run `test/store-conformance.ts` against a new backend: it is the definition of
 * "implements the contract".
 */
import type { RateResult } from '../gcra.js'

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

/** Notifications a store gives the gate (wired by {@link GateStore.attach}). */
export interface StoreEventSink {
  /** A rate key was dropped to make room, before its window ran out: its client starts afresh. */
  rateKeyEvicted(key: string): void
}

/**
 * What the gate needs from a backend.
 *
 * @example
 * class MyStore implements GateStore {
 *   getApplication(appToken) { return db.query('select ... where app_token = $1', [appToken]) }
 *   // ...
 * }
 * const gate = createGate({ store: new MyStore() })
 */
export interface GateStore {
  /**
   * Saves a new application.
   * @throws when an application with the same app token exists (the gate retries with a new token)
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
   * One atomic throttling step for `key`: `limit` requests per `windowMs`, consuming
   * `cost` units (0 reads without consuming). Implement with {@link gcraStep} semantics,
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
