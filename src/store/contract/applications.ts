/**
 * The applications slice: registered applications, looked up by app token on every request
 * that carries one. Every gate needs it.
 */
import { PlatformError } from '../../errors.js'
import type { Awaitable, StoreLifecycle } from './lifecycle.js'

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
  /**
   * The id of the user who registered it on the portal (the self-service endpoints, a
   * developer settings page); `null` for an application an operator registered. Never
   * changes after registration.
   */
  readonly ownerId: string | null
  /**
   * SHA-256 (hex) of the secret token before the last rotation, still accepted until
   * {@link previousSecretExpiresAt} so a deployed client can be updated without an outage;
   * `null` when there is none.
   */
  readonly previousSecretHash: string | null
  /** When {@link previousSecretHash} stops being accepted (epoch ms); `null` with it. */
  readonly previousSecretExpiresAt: number | null
  /**
   * When an operator suspended the application (epoch ms), or `null` while it is active:
   * its requests, tokens and new grants are refused until it is resumed, and nothing of it
   * is deleted. Set and cleared together with {@link suspensionReason}. A record saved
   * before the field existed reads as active.
   */
  readonly suspendedAt: number | null
  /** Why it is suspended, as the operator wrote it (shown to its clients and its owner); `null` with {@link suspendedAt}. */
  readonly suspensionReason: string | null
  /**
   * The name of the plan an operator put the application on, or `null` for the configured
   * default plan. A record saved before the field existed reads as `null`.
   */
  readonly plan: string | null
  readonly createdAt: number
  readonly updatedAt: number
}

/** The fields of an application that can change after registration (its owner cannot). */
export type ApplicationPatch = Partial<
  Pick<
    ApplicationRecord,
    'name' | 'secretHash' | 'previousSecretHash' | 'previousSecretExpiresAt' | 'callbackPrefix' | 'limit' | 'suspendedAt' | 'suspensionReason' | 'plan' | 'updatedAt'
  >
>

/** Whether an operator suspended the application; a record from a store that predates suspension is active. */
export function isSuspended(record: ApplicationRecord): boolean {
  return record.suspendedAt !== null && record.suspendedAt !== undefined
}

/** What a refused client is told: that the application is suspended, and the operator's reason. */
export function suspensionMessage(record: ApplicationRecord): string {
  return `This application is suspended: ${record.suspensionReason ?? 'no reason was given'}`
}

/**
 * Refuses a request that counts against a suspended application, whatever its credentials
 * (its app token, Basic with its app token, an OAuth token issued to it).
 * @returns `record` when it is active, or `null` (no application): a step can pass it on
 * @throws {PlatformError} 403 `application_suspended`, the reason in its message
 */
export function assertNotSuspended<T extends ApplicationRecord | null>(record: T): T {
  if (record !== null && isSuspended(record)) throw new PlatformError('application_suspended', suspensionMessage(record))
  return record
}

/**
 * The bound {@link ApplicationStore.insertApplication} checks for an application a user
 * registers, in the same atomic step as the insert.
 */
export interface ApplicationLimits {
  /** Refuse (`'owner-limit'`) when the record's owner has this many applications. */
  readonly maxPerOwner: number
}

/** What {@link ApplicationStore.insertApplication} did: `'created'`, or `'owner-limit'` (nothing saved). */
export type ApplicationInsertResult = 'created' | 'owner-limit'

/** Which applications {@link ApplicationStore.listApplications} lists. */
export interface ApplicationFilter {
  /** Only the applications this user registered. */
  readonly ownerId: string
}

/** The applications slice of the contract. */
export interface ApplicationStore extends StoreLifecycle {
  /**
   * Saves a new application. With `limits` (a user registering their own), atomically
   * with the insert: refuses when the record's owner already has `maxPerOwner`
   * applications. One step (a script, a transaction holding a per-owner lock), never a
   * count followed by an insert: of 30 concurrent registrations with room for 5, exactly
   * 5 succeed. Without `limits` (an operator, an import) it only saves.
   * @returns `'created'`, or why nothing was saved
   * @throws when an application with the same app token exists
   */
  insertApplication(record: ApplicationRecord, limits?: ApplicationLimits): Awaitable<ApplicationInsertResult>
  /** The application with this app token, or `undefined`. Called on every request that carries a token. */
  getApplication(appToken: string): Awaitable<ApplicationRecord | undefined>
  /**
   * Every application, ordered by `createdAt`, oldest first (not insertion order: the
   * conformance kit saves a later `createdAt` first); with a filter, only the owner's, in
   * the same order, read through an index of the owner's applications, never a scan of all
   * of them. An owner's list is bounded by the cap of the self-service endpoints, so it is
   * not paged.
   */
  listApplications(filter?: ApplicationFilter): Awaitable<ApplicationRecord[]>
  /** Applies `patch` and returns the new record, or `undefined` when there is no such application. */
  updateApplication(appToken: string, patch: ApplicationPatch): Awaitable<ApplicationRecord | undefined>
  /** Deletes an application; `false` when there was none. */
  deleteApplication(appToken: string): Awaitable<boolean>
}
