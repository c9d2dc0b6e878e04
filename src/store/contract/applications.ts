/**
 * The applications slice: registered applications, looked up by app token on every request
 * that carries one. Every gate needs it.
 */
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
  readonly createdAt: number
  readonly updatedAt: number
}

/** The fields of an application that can change after registration. */
export type ApplicationPatch = Partial<Pick<ApplicationRecord, 'name' | 'secretHash' | 'callbackPrefix' | 'limit' | 'updatedAt'>>

/** The applications slice of the contract. */
export interface ApplicationStore extends StoreLifecycle {
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
}
