/**
 * The one place that knows which HTTP status each error code carries. Adapters never
 * pick a status: they write the {@link GateResponse} the core built from a {@link GateError}.
 *
 * @see docs/platform-rules.md "Error bodies and status codes"
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-5.2 (OAuth error codes)
 */

/**
 * Codes of the platform's error body `{"code","error":true,"message","data"}`, and the
 * status each one is sent with.
 */
export const PLATFORM_ERROR_STATUS = {
  /** Malformed request: a bad `Authorization` header, two credentials at once. */
  invalid_request: 400,
  /** HTTP Basic credentials (username/password or API key/secret) that do not match. */
  invalid_credentials: 401,
  /** An OAuth access token that is unknown, expired or revoked. */
  invalid_token: 401,
  /** Credentials of a method the gate has turned off: `Basic` with `basic: false`, `OAuth` or `Bearer` with `oauth: false`. */
  authentication_method_disabled: 401,
  /** The route needs an authenticated user and the request has none. */
  authentication_required: 403,
  /** An invalid or conflicting application token, or a right the user lacks. */
  permission_denied: 403,
  /** Credentials sent over a connection that is not https. */
  https_required: 403,
  /** An authenticated request without the application token the gate requires. */
  app_token_required: 403,
  /** An `X-App-Token` naming another application than the one the OAuth access token was issued to. */
  app_token_mismatch: 403,
  /**
   * The request counts against an application an operator suspended (its app token, Basic
   * with its app token, or an OAuth token issued to it); the message gives the reason.
   * Nothing of the application is deleted: it is served again once resumed.
   */
  application_suspended: 403,
  /**
   * An endpoint that manages the account itself (its API keys, its connected apps) was
   * called with credentials the user gave to something else: an OAuth access token (held by
   * a third-party application) or an API key (held by a script). Only the user's own
   * sign-in, the password or a browser session, may read or change these.
   */
  first_party_credentials_required: 403,
  /**
   * A change to the account (the API key, application and connected-apps endpoints) sent by
   * a page of another origin: `Sec-Fetch-Site` other than `same-origin` or `none`, or else an
   * `Origin` that is not the request's own, nor one of `trustedOrigins`. Whatever the
   * credentials: a browser attaches Basic credentials and cookies to a forged request alike.
   */
  same_origin_required: 403,
  /** (Management API) the record to change does not exist: {@link NotFoundError}. */
  not_found: 404,
  method_not_allowed: 405,
  /** A record that must be unique already exists (a taken username). */
  conflict: 409,
  /** The user has registered as many applications as `applications.maxPerUser` allows; delete one first. */
  application_limit_reached: 409,
  /** A request body that did not arrive within `bodyTimeoutMs`; the connection is closed. */
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  /** The throttle refused the request; `Retry-After` says when to come back. */
  too_many_requests: 429,
  /** Anything unexpected. The wire never carries the cause. */
  internal: 500,
  /**
   * A deployment mistake: a loopback or private peer says the client used https
   * (`X-Forwarded-Proto`, `Forwarded: proto=`) but no proxy is trusted (`trustProxy`), so
   * the gate cannot tell whether credentials travelled safely and refuses rather than
   * revoke them or blame the client.
   */
  proxy_not_trusted: 500,
  /** The store failed or timed out and the gate could not decide. */
  service_unavailable: 503,
  /** Too many password verifications are already waiting in this process; `Retry-After` says when to retry. */
  busy: 503,

  // The platform's API key endpoints (`/api/api_keys`), with the platform's own codes.
  /**
   * The platform's code for a wrong key secret. The gate answers a wrong secret with
   * `invalid_credentials` on every route, these included, so that one rule covers them all;
   * the code is here so that clients matching on the platform's list find it.
   */
  'API_KEY.INVALID_SECRET': 401,
  /**
   * The platform's code for a user who may not manage keys. The gate refuses credentials
   * that may not manage the account (an OAuth token, an API key) with
   * `first_party_credentials_required`, one code on every self-service endpoint; this one
   * is here so that clients matching on the platform's list find it.
   */
  'API_KEY.INSUFFICIENT_RIGHTS': 403,
  /** The create request has no `keyName`. */
  'API_KEY.MISSING_FIELD': 400,
  /** The user has an active key with that name. */
  'API_KEY.NAME_TAKEN': 409,
  /** `keyName` is longer than 200 characters. */
  'API_KEY.NAME_TOO_LONG': 400,
  /** No key with that id among the user's keys. */
  'API_KEY.NOT_FOUND': 404,
  /** The key was deleted already. */
  'API_KEY.TOKEN_DELETED': 410,
  /** The user has as many active keys as the cap allows (`apiKeyEndpoints.maxActiveKeys`). */
  'API_KEY.TOKEN_LIMIT_REACHED': 409,
  /** `limit` is not a whole number from 1 to 100. */
  'API_KEY.INVALID_PAGE_SIZE': 400,
  /** `sortBy` is not `last_used_at`, `created_at`, `deleted_at` or `name`. */
  'API_KEY.INVALID_SORT_COLUMN': 400,
} as const satisfies Record<string, number>

/** A code of the platform's error body. */
export type PlatformErrorCode = keyof typeof PLATFORM_ERROR_STATUS

/**
 * RFC 6749 error codes and the status the token, revocation and metadata endpoints send
 * them with. At the authorize endpoint they travel in a redirect instead.
 */
export const OAUTH_ERROR_STATUS = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  unsupported_response_type: 400,
  access_denied: 403,
  /**
   * Not RFC 6749's: a body the token or revocation endpoint reads did not arrive within
   * `bodyTimeoutMs`, answered in RFC 6749's shape with the status that says so; the
   * connection is closed.
   */
  request_timeout: 408,
  server_error: 500,
  temporarily_unavailable: 503,
} as const satisfies Record<string, number>

/** An RFC 6749 / RFC 7009 error code. */
export type OAuthErrorCode = keyof typeof OAUTH_ERROR_STATUS

/**
 * Codes only the gate's HTML pages (sign-in, consent, connected apps) answer with, and their
 * status: a person reads the page, no client branches on them. Every other error page names
 * a code of {@link PLATFORM_ERROR_STATUS} (`method_not_allowed`, `https_required`,
 * `request_timeout`, `invalid_request`, ...), so that a page and an API refusing the same
 * thing answer the same status.
 */
export const PAGE_ERROR_STATUS = {
  /** A form posted without its CSRF token, or with one that does not match its cookie: the form expired, or was not sent from the page. */
  form_expired: 403,
} as const satisfies Record<string, number>

/** A code an error page names: one of the platform's, or one of the pages' own. */
export type PageErrorCode = PlatformErrorCode | keyof typeof PAGE_ERROR_STATUS

/** Every code a {@link GateError} can carry. */
export type GateErrorCode = PlatformErrorCode | OAuthErrorCode

interface GateErrorOptions {
  cause?: unknown
  /** Headers the response must carry (`Retry-After`, `WWW-Authenticate`). */
  headers?: Record<string, string>
  /** The platform body's `data`: what the client can act on (the limits a 429 names). */
  data?: unknown
}

/**
 * The base of every error the gate raises on purpose. `code` is stable and safe to
 * branch on; `status` comes from the one table above.
 *
 * @example
 * try { await gate.applications.update(token, { callbackPrefix: 'http://x' }) }
 * catch (error) { if (error instanceof GateError) console.log(error.code) }
 */
export class GateError extends Error {
  readonly code: GateErrorCode
  readonly headers: Record<string, string> | undefined
  /** The platform body's `data`, when the error has any. */
  readonly data: unknown

  constructor(code: GateErrorCode, message: string, options: GateErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = new.target.name
    this.code = code
    this.headers = options.headers
    this.data = options.data
  }

  /** The HTTP status this error is answered with. */
  get status(): number {
    return statusOf(this.code)
  }
}

/**
 * An error of the platform's access rules, answered with the platform's body
 * `{"code","error":true,"message","data"}` and `X-Error-Code` / `X-Error-Message`.
 */
export class PlatformError extends GateError {
  declare readonly code: PlatformErrorCode
  constructor(code: PlatformErrorCode, message: string, options?: GateErrorOptions) {
    super(code, message, options)
  }
}

/**
 * The throttle refused the request. `retryAfterMs` is exact; the response's `Retry-After`
 * is its ceiling in seconds, set here so that no refusal goes out without one.
 */
export class ThrottledError extends PlatformError {
  readonly retryAfterMs: number
  /** @param data the body's `data`: with a plan of several limits, `{ policies }` that refused (docs/guides/plans.md) */
  constructor(message: string, retryAfterMs: number, headers: Record<string, string> = {}, data?: unknown) {
    super('too_many_requests', message, { headers: { ...headers, 'retry-after': String(retryAfterSeconds(retryAfterMs)) }, data })
    this.retryAfterMs = retryAfterMs
  }
}

/**
 * A management call named a record that does not exist. The one rule of the management
 * API: calls that change a record (`update`, `rotateSecret`, `setPassword`,
 * `apiKeys.create` for a user, `apiKeys.rotate`) throw this for an unknown id; lookups
 * (`find`) answer `undefined`; removals (`delete`, `revoke`) answer `false`, since
 * removing what is not there leaves the state asked for.
 *
 * @example
 * try { await gate.applications.update(appToken, { limit: 10_000 }) }
 * catch (error) { if (error instanceof NotFoundError) console.log('no such application') }
 */
export class NotFoundError extends PlatformError {
  constructor(message: string) {
    super('not_found', message)
  }
}

/**
 * The store failed or did not answer in time. A different type from "limit reached" so
 * that callers can tell an outage from a refusal.
 *
 * Its answer carries `Retry-After`: `retryAfterMs` rounded up to seconds, which the gate's
 * store guard sets to `storeTimeoutMs` (one second by default). After a failed call the
 * guard sends the store no new call for as long as that call took, at most about the
 * timeout; a request retried after it may be the probe that finds the store back, and the
 * requests in between are answered at once without touching the store.
 */
export class StoreError extends PlatformError {
  readonly operation: string
  /** When a client may usefully retry, in ms (the response's `Retry-After` is its ceiling in seconds). */
  readonly retryAfterMs: number
  constructor(operation: string, cause: unknown, retryAfterMs = 1000) {
    super('service_unavailable', 'The service is temporarily unavailable, please retry', { cause, headers: { 'retry-after': String(retryAfterSeconds(retryAfterMs)) } })
    this.operation = operation
    this.retryAfterMs = retryAfterMs
  }
}

/**
 * The store answered, but refused the data of one call: a value it cannot hold (U+0000,
 * which PostgreSQL refuses in text; an unpaired surrogate), a value out of its range, a
 * broken constraint (PostgreSQL SQLSTATE classes 22 and 23, a Redis script error). Not an
 * outage: no `storeError` event, and other requests are served as before. The gate refuses
 * such input before it reaches the store, so on a request's path this is a bug of the
 * gate's (answered 500, reported as `internalError`); the management API throws it for an
 * id or name no store can hold.
 *
 * @example
 * try { await gate.users.find(id) }
 * catch (error) { if (error instanceof StoreDataError) console.log('not an id:', error.message) }
 */
export class StoreDataError extends Error {
  readonly operation: string
  constructor(operation: string, message: string, cause?: unknown) {
    super(`open-data-gate: ${operation}: ${message}`, cause === undefined ? undefined : { cause })
    this.name = 'StoreDataError'
    this.operation = operation
  }
}

/** An RFC 6749 error, answered as `{"error","error_description"}`. */
export class OAuthError extends GateError {
  declare readonly code: OAuthErrorCode
  constructor(code: OAuthErrorCode, description: string, options?: GateErrorOptions) {
    super(code, description, options)
  }
}

/** The status of a code, from the tables above. */
export function statusOf(code: GateErrorCode): number {
  return (PLATFORM_ERROR_STATUS as Record<string, number>)[code] ?? (OAUTH_ERROR_STATUS as Record<string, number>)[code] ?? 500
}

/** The status of an error page, from the tables above. */
export function pageStatusOf(code: PageErrorCode): number {
  return (PAGE_ERROR_STATUS as Record<string, number>)[code] ?? statusOf(code as PlatformErrorCode)
}

/** `Retry-After` in whole seconds, never 0 for a wait that has not ended. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000))
}
