/**
 * What the gate tells the host application. The gate is a typed emitter
 * (tiny-typed-emitter over node:events): `gate.on('throttled', e => ...)`.
 *
 * Every event about a request carries its `requestId`, the `X-Request-Id` its client got;
 * the events about the store and the usage counts concern no one request and carry none.
 *
 * No event ever carries a secret: passwords, key secrets, codes and access tokens never
 * appear. App tokens are public identifiers and appear in full where they name a
 * registered application; a token nobody registered appears only as a short prefix.
 */
import type { NearLimitEvent, UsageDroppedEvent, UsageFlushFailedEvent } from './usage/events.js'

/** A request the gate answered with 429. */
export interface ThrottledEvent {
  /**
   * `application`, `anonymous`, `login` (a username's sign-in attempts), `login-address`
   * (an address's failed password attempts, across usernames), `client` (an OAuth
   * client's authentication attempts), `oauth` (posts to the OAuth endpoints) or
   * `self-service` (a user's requests to the self-service endpoints, `selfServiceBudget`).
   */
  readonly policy: string
  /** The app token of the throttled application, when there is one. */
  readonly appToken: string | undefined
  readonly ip: string
  /** The request's id (`X-Request-Id`), or `undefined` with `requestId: false`. */
  readonly requestId: string | undefined
  readonly retryAfterMs: number
}

/** A request that named an application token no application has. */
export interface InvalidAppTokenEvent {
  /** The first characters of the token, enough to recognise it in logs. */
  readonly tokenPrefix: string
  readonly ip: string
  /** The request's id (`X-Request-Id`), or `undefined` with `requestId: false`. */
  readonly requestId: string | undefined
}

/**
 * A store failed or timed out: once when an outage starts, not once per request (see
 * `storeRecovered` for its end).
 */
export interface StoreErrorEvent {
  /** The store method that failed (`consumeRate`, `getApplication`, ...). */
  readonly operation: string
  readonly error: unknown
  /**
   * What the gate did about it: `failed` (answered 503), `allowed` (fail-open),
   * `fallback` (throttled in memory), `ignored` (a bookkeeping write such as an API key's
   * `lastUsedAt` was dropped; the request was served).
   */
  readonly outcome: 'failed' | 'allowed' | 'fallback' | 'ignored'
  /** Which store: `records` (`store`), `rates` (a separate `rateStore`), or `records+rates` (one store for both). */
  readonly store: 'records' | 'rates' | 'records+rates'
}

/** A store that failed answers again: the outage `storeError` announced is over. */
export interface StoreRecoveredEvent {
  readonly store: 'records' | 'rates' | 'records+rates'
  /** How long it was down, in ms. */
  readonly downMs: number
  /** How many calls failed during the outage (those refused without being tried included). */
  readonly failedCalls: number
}

/** A rate key dropped from a bounded store while it still held state. */
export interface RateKeyEvictedEvent {
  readonly key: string
}

/** Credentials that did not verify. */
export interface AuthenticationFailedEvent {
  /** `client` is an OAuth client authenticating at the token or revocation endpoint. */
  readonly method: 'password' | 'api-key' | 'oauth' | 'client'
  readonly ip: string
  /** The request's id (`X-Request-Id`), or `undefined` with `requestId: false`. */
  readonly requestId: string | undefined
  /** The normalised username, for password attempts. Never the password, key secret or token. */
  readonly username: string | undefined
}

/** An access token was revoked by the gate itself. */
export interface TokenRevokedEvent {
  /** It was sent over plain http. */
  readonly reason: 'insecure-transport'
  readonly userId: string
  /** The application the token was issued to. */
  readonly appToken: string
  readonly ip: string
  /** The request's id (`X-Request-Id`), or `undefined` with `requestId: false`. */
  readonly requestId: string | undefined
}

/** An API key was revoked by the gate itself. */
export interface ApiKeyRevokedEvent {
  /** Its right secret was sent over plain http. */
  readonly reason: 'insecure-transport'
  readonly keyId: string
  readonly userId: string
  readonly ip: string
  /** The request's id (`X-Request-Id`), or `undefined` with `requestId: false`. */
  readonly requestId: string | undefined
}

/**
 * An application's client secret was sent over plain http, and it was a right one. The
 * current secret is not rotated (that would break the application at once): rotate it with
 * `gate.applications.rotateSecret(appToken, { graceMs: 0 })` and give the application the
 * new one. The previous secret of a rotation, still in its grace, is retired at once (the
 * application already has its new one).
 */
export interface ClientSecretExposedEvent {
  readonly appToken: string
  /** Which secret was seen: `'current'` (still valid: rotate it), or `'previous'` (retired by the gate now). */
  readonly secret: 'current' | 'previous'
  readonly ip: string
  /** The request's id (`X-Request-Id`), or `undefined` with `requestId: false`. */
  readonly requestId: string | undefined
}

/** An authorization code was presented again after its first exchange. */
export interface CodeReplayedEvent {
  /** The application the code was issued to. */
  readonly appToken: string
  readonly userId: string
  readonly ip: string
  /** The request's id (`X-Request-Id`), or `undefined` with `requestId: false`. */
  readonly requestId: string | undefined
  /** How many tokens issued from the code this replay revoked. */
  readonly revokedTokens: number
}

/**
 * An operator suspended an application (`gate.applications.suspend`, `open-data-gate apps
 * suspend`), or changed the reason of a suspension. Told by the gate that made the change;
 * every other instance refuses the application once the store's change notice reaches it.
 */
export interface ApplicationSuspendedEvent {
  readonly appToken: string
  readonly reason: string
  /** When the suspension began (epoch ms): kept when only its reason changed. */
  readonly since: number
  /** The reason this one replaced, when the application was suspended already; `null` when it was active. */
  readonly previousReason: string | null
}

/** An operator resumed a suspended application: it is served again, with everything it had. */
export interface ApplicationResumedEvent {
  readonly appToken: string
  /** The reason it had been suspended for. */
  readonly reason: string
  /** When the suspension had begun (epoch ms). */
  readonly since: number
}

/** Something unexpected: the client got a generic 500, the cause comes here. */
export interface InternalErrorEvent {
  readonly error: unknown
  readonly method: string
  readonly path: string
  /** The id of the request answered 500 (`X-Request-Id`), or `undefined` with `requestId: false` or outside a request. */
  readonly requestId: string | undefined
}

/** Every event of a gate and its payload. */
export interface GateEvents {
  throttled: (event: ThrottledEvent) => void
  invalidAppToken: (event: InvalidAppTokenEvent) => void
  storeError: (event: StoreErrorEvent) => void
  storeRecovered: (event: StoreRecoveredEvent) => void
  rateKeyEvicted: (event: RateKeyEvictedEvent) => void
  authenticationFailed: (event: AuthenticationFailedEvent) => void
  tokenRevoked: (event: TokenRevokedEvent) => void
  apiKeyRevoked: (event: ApiKeyRevokedEvent) => void
  clientSecretExposed: (event: ClientSecretExposedEvent) => void
  codeReplayed: (event: CodeReplayedEvent) => void
  applicationSuspended: (event: ApplicationSuspendedEvent) => void
  applicationResumed: (event: ApplicationResumedEvent) => void
  internalError: (event: InternalErrorEvent) => void
  nearLimit: (event: NearLimitEvent) => void
  usageDropped: (event: UsageDroppedEvent) => void
  usageFlushFailed: (event: UsageFlushFailedEvent) => void
}

/**
 * Tells the events about a failure the client is answered for: `storeError` for an
 * outage, `internalError` for anything unexpected, nothing for a refusal on purpose.
 */
export type ReportFailure = (error: unknown, request: FailedRequest | undefined) => void

/** The request a failure is told about: its method and URL, and its id when known. */
export interface FailedRequest {
  readonly method: string
  readonly url: string
  /** `X-Request-Id`, or `null`/`undefined` when it has none. */
  readonly requestId?: string | null | undefined
}

/** The gate's typed `emit`, handed to the parts that report events. */
export type Emit = <E extends keyof GateEvents>(event: E, ...args: Parameters<GateEvents[E]>) => void
