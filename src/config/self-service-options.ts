/**
 * The options of the self-service endpoints that are not about applications: the API key
 * endpoints, and the budget every self-service request of one user is counted against.
 * Re-exported by `./options.ts`.
 */
import type { RatePolicyOptions } from './rate-policy-options.js'

/**
 * The platform's API key endpoints: `GET`/`POST <path>` and `GET`/`DELETE <path>/<keyId>`.
 * @see docs/guides/api-key-endpoints.md
 */
export interface ApiKeyEndpointOptions {
  /** Default `/api/api_keys`. */
  path?: string
  /** How many active (not deleted) keys a user may hold; one more is `API_KEY.TOKEN_LIMIT_REACHED`. Default 100. */
  maxActiveKeys?: number
  /**
   * How many keys a user may hold in all, deleted ones kept for `deletedKeyRetentionMs`
   * included: one more is `API_KEY.TOKEN_LIMIT_REACHED`. Bounds what one account can make
   * the store keep, and what listing with `includeDeleted` reads. Default 1000.
   */
  maxKeys?: number
  /**
   * How long a deleted key is kept (listed with `includeDeleted`, counted by `maxKeys`)
   * before the store purges it, in ms. Also applies to keys revoked by `gate.apiKeys.revoke`
   * or for travelling over http. Default 30 days.
   */
  deletedKeyRetentionMs?: number
}

/**
 * The budget of one user's requests to the self-service endpoints (the API key endpoints,
 * `/api/applications` and its usage reads, connected apps): at most `limit` units per
 * `windowMs` (GCRA, on the rate store, keyed `self-service:<user id>`). A request costs one
 * unit; a usage read one more per 100 buckets it spans (a day by the minute: 15). One more
 * is `too_many_requests` (429) with `Retry-After` and `RateLimit` headers.
 *
 * These endpoints are the user's own, not an application's: no app token's throttle applies
 * to them (a password needs no `X-App-Token` there), so a developer can read why their
 * application is throttled while it is. Default 60 per minute; `false` turns it off.
 * @see docs/guides/applications.md
 */
export type SelfServiceBudgetOption = RatePolicyOptions | false
