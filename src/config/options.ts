/**
 * The options of {@link createGate}, as users write them, and the configuration a gate
 * runs on once they are resolved ({@link ResolvedConfig}). Types only: the defaults are in
 * config/defaults.ts, the resolution and its `TypeError`s in config/resolve.ts.
 * @see docs/reference/options.md
 */
import type { GateRequest } from '../http/request.js'
import type { HashQueueLimits } from '../secrets/hash-queue.js'
import type { OAuthPages } from './pages-option.js'
import type { CurrentUserOptions, OAuthPaths } from './endpoint-paths.js'
import type { ScryptParams } from '../secrets/passwords.js'
import type { ProxyHeadersOption, TrustProxyOption } from '../http/proxy.js'
import type { RequestIds, RequestIdOptions } from '../http/request-id.js'
import type { GateLog, GateLogger } from '../log/logger.js'
import type { Awaitable, GateStore, PartialGateStore, RateStore } from '../store/store.js'
import type { ResolvedUsage, UsageOptions } from '../usage/options.js'
import type { NearLimitOptions, ResolvedNearLimit } from '../usage/near-limit.js'
import type { MeterProviderLike, MetricsOptions } from '../telemetry/metrics.js'
import type { ApiKeyEndpointOptions, SelfServiceBudgetOption } from './self-service-options.js'
import type { RatePolicyOptions } from './rate-policy-options.js'
import type { ResolvedPlan } from './plans.js'
import type { ResolvedLocalCounting } from './local-counting.js'
import type { StoreFailureMode, ThrottleOptions } from './throttle-options.js'

export type { ApiKeyEndpointOptions, SelfServiceBudgetOption } from './self-service-options.js'
export type { RatePolicyOptions }

export type { AnonymousPolicyOptions, StoreFailureMode, ThrottleOptions } from './throttle-options.js'

/** HTTP Basic authentication (usernames and passwords, API keys). */
export interface BasicOptions {
  /**
   * Refuse a Basic-authenticated request without an application token (403
   * `app_token_required`), as the spec's strict reading says. `false` follows the
   * platform's later behaviour and lets it through. Default `true`.
   */
  requireAppToken?: boolean
  /** Send `WWW-Authenticate: Basic` with a 401 (browsers then show a login dialog). Default `false`. */
  challenge?: boolean
  /** How long a verified username and password stay verified in this process, in ms; 0 turns the cache off. Default 300 000. */
  cacheTtlMs?: number
  /** Budget of failed password attempts per username before further attempts get 429. Default 10 per 15 minutes; `false` turns it off. */
  failures?: RatePolicyOptions | false
  /**
   * Budget of failed password attempts per client address, across all usernames (IPv6 per
   * /56). Attempts a username's lockout refused count too. Once it is spent, every
   * password attempt from the address gets 429, a right one included. Default 20 per 15
   * minutes; `false` turns it off.
   */
  addressFailures?: RatePolicyOptions | false
  /**
   * How many password verifications (scrypt) run at once in this process, and how many may
   * wait; past that an attempt gets 503 `busy` with `Retry-After`. One address has one
   * verification running at a time, and waiting addresses take turns. Default
   * `{ concurrency: 2, queue: 64, queuePerAddress: 4 }`.
   */
  hashing?: Partial<HashQueueLimits>
  /** scrypt cost for new password hashes. Default `{ logN: 14, blockSize: 8, parallelization: 1 }`. */
  scrypt?: Partial<ScryptParams>
}

/** OAuth 2.0: the authorization server and access tokens. */
export interface OAuthOptions {
  /** Accept `Authorization: Bearer <token>` beside the platform's `OAuth <token>`. Default `true`. */
  acceptBearer?: boolean
  /** Lifetime of issued access tokens in ms. Default 24 hours. */
  accessTokenTtlMs?: number
  /** Lifetime of authorization codes in ms, at most 10 minutes. Default 60 s. */
  codeTtlMs?: number
  /** Refuse authorize requests without a PKCE S256 challenge. Default `false`. */
  requirePkce?: boolean
  /**
   * The issuer URL announced in the metadata, and the base of the endpoint URLs there.
   * Default: `https://` and the request's Host. Set it in production.
   */
  issuer?: string
  paths?: OAuthPaths
  /** How long a sign-in on the gate's own login page lasts, in ms. Default 1 hour. */
  sessionTtlMs?: number
  /** Live sign-ins per user on the gate's own login page; a new one ends the oldest past this. Default 10. */
  maxSessionsPerUser?: number
  /**
   * Also allow Callback Prefixes (and redirect URIs) on `http://localhost`,
   * `http://127.0.0.1` and `http://[::1]`, any port, as RFC 8252 §7.3 does for loopback
   * redirects, so a developer can try sign-in on a laptop without a certificate. Nothing
   * else relaxes: every other prefix must still be https. The gate warns at startup
   * (`ODG_LOOPBACK_CALLBACKS`) while this is on. Default `false`; never in production.
   */
  allowLoopbackCallbacks?: boolean
  /**
   * Tells the gate who is signed in to the host application, from the host's own session:
   * return the gate user id, or nothing. When it returns nothing the gate's own sign-in
   * is used (or the user is sent to `loginUrl`).
   */
  authenticateUser?: (request: GateRequest) => Awaitable<string | null | undefined>
  /**
   * The host's own login page. When nobody is signed in, the user is sent there with
   * `return_to` set to the authorize URL, instead of seeing the gate's login page.
   */
  loginUrl?: string
  /** The host's own login, consent and error pages. */
  pages?: OAuthPages
  /**
   * Skip the consent page when the signed-in user has already authorized this application
   * (a grant that was not revoked since): the user is sent straight back with a code.
   * Default `false`: the consent page is shown on every authorize. Turn it on only for
   * applications whose whole Callback Prefix you trust: with it, a redirect_uri under the
   * prefix receives a code without the user seeing anything (RFC 9700 §4.11).
   */
  rememberConsent?: boolean
  /** Budget of failed client authentications per client and address; once spent, even the right secret is refused. Default 10 per 15 minutes. */
  clientFailures?: RatePolicyOptions | false
  /**
   * Budget of posts to the OAuth endpoints (sign-in, consent, token, revocation) per
   * client address: a sign-in costs a scrypt run, and names are cheap to vary. Default
   * 60 per minute; `false` turns it off.
   */
  throttle?: RatePolicyOptions | false
}

/**
 * Applications developers register and manage themselves: the self-service endpoints
 * (`GET`/`POST <path>`, `PATCH`/`DELETE <path>/<appToken>`, `POST <path>/<appToken>/secret`,
 * `GET <path>/<appToken>/usage`), their bounds, and the grace of a rotated secret.
 * @see docs/guides/applications.md
 */
export interface ApplicationOptions {
  /** Where the self-service endpoints live; `false` turns them off (the grace still applies). Default `/api/applications`. */
  path?: string | false
  /**
   * How many applications one user may have registered themselves (the endpoints, and a
   * host's page through `gate.applications.registerOwn`); one more is
   * `application_limit_reached` (409). Checked by the store in the same step as the insert.
   * Default 20.
   */
  maxPerUser?: number
  /**
   * The registration budget per user: at most `limit` registrations per `windowMs` (GCRA,
   * on the rate store, like the other budgets); one more is `too_many_requests` (429) with
   * `Retry-After`. Default 10 per hour; `false` turns it off.
   */
  registrations?: RatePolicyOptions | false
  /**
   * How long a secret replaced by `rotateSecret` (or `POST <path>/<appToken>/secret`) keeps
   * working at the token and revocation endpoints, in ms, so a deployed client can be updated
   * first; 0 retires it at once; at most 7 days; a rotation may give its own. Default 1 hour.
   */
  secretGraceMs?: number
}

/** Where the signed-in user sees and revokes the applications they authorized; `false` turns one off. */
export interface ConnectedAppsOptions {
  /** The JSON endpoints: `GET <path>`, `DELETE <path>/<appToken>`. Default `/api/oauth/grants`. */
  path?: string | false
  /** The HTML page, on the gate's login session. Default `/oauth/grants`. */
  page?: string | false
}

/** Options of {@link createGate}. */
export interface GateOptions {
  /**
   * Where records and rate counters live. Default: a new {@link MemoryStore} (`null` is
   * refused; with `NODE_ENV=production` a memory store warns once, `ODG_MEMORY_STORE_IN_PRODUCTION`). A
   * {@link GateStore} serves every feature; a store of fewer slices serves the features
   * that need no more (applications and rates: app tokens and throttling, with `basic`,
   * `oauth` and what needs them off). A store lacking a slice a feature that is on needs
   * is refused with a `TypeError` naming both.
   * @see docs/reference/store-contract.md
   */
  store?: PartialGateStore
  /**
   * Where rate counters live, when not in `store`: for example records in a
   * `PostgresStore` and rates in a `RedisStore`. Anything with `consumeRate` and
   * `resetRate`. Default: `store`.
   */
  rateStore?: RateStore
  /**
   * How long this process may answer from its own copy of an application record, in ms,
   * before reading it from the store again; 0 reads it on every request. Any change to an
   * application drops the copy at once, on every instance whose store announces changes
   * (RedisStore, PostgresStore). Only asynchronous stores are cached. Default 5000.
   */
  applicationCacheMs?: number
  /** Throttling; `false` turns it off entirely. */
  throttle?: ThrottleOptions | false
  /** Which peers may speak for the client through proxy headers. Default `false`. */
  trustProxy?: TrustProxyOption
  /** Which proxy headers trusted proxies set. Default `'x-forwarded'`. */
  proxyHeaders?: ProxyHeadersOption
  /**
   * Origins besides the gate's own (`https://portal.example.org`) whose pages may change the
   * account through the API key, application and connected-apps endpoints: a portal front
   * end served from another origin. Default none: a change whose `Sec-Fetch-Site` is not
   * `same-origin`, or whose `Origin` is another, is refused (403 `same_origin_required`).
   * @see docs/guides/api-key-endpoints.md
   */
  trustedOrigins?: readonly string[]
  /** Accept the SODA 1.0 query parameter `app_token` beside `$$app_token`. Default `true`. */
  legacyAppTokenParam?: boolean
  /**
   * A store call that takes longer fails with a `StoreError`. Default 1000 ms. Time this
   * process's event loop was blocked does not count: a reply that came in meanwhile is
   * read before the call is judged, and a call the blocked loop held up gets time to be
   * heard (never more than three times this in all).
   */
  storeTimeoutMs?: number
  /**
   * How long the gate waits for a request body it reads itself (the OAuth endpoints'
   * posts), in ms; a body not there by then is answered 408 and the connection closed.
   * Default 10 000.
   */
  bodyTimeoutMs?: number
  /**
   * HTTP Basic authentication (passwords and API keys). `false` turns it off: an
   * `Authorization: Basic` header is then answered 401 `authentication_method_disabled`,
   * the store needs no users or API keys for it, and the API key endpoints are off unless
   * asked for. Password sign-in on the OAuth pages, when on, keeps Basic's default budgets and scrypt cost.
   */
  basic?: BasicOptions | false
  /**
   * The OAuth 2.0 authorization server and its access tokens. `false` turns it off: no
   * OAuth endpoint is served, an `Authorization: OAuth` or `Bearer` header is answered 401
   * `authentication_method_disabled`, the store needs no OAuth slice for it, and connected
   * apps are off unless asked for.
   */
  oauth?: OAuthOptions | false
  /** The current-user endpoints; `false` turns them off. Off by default with both `basic` and `oauth` off. */
  currentUser?: CurrentUserOptions | false
  /** The platform's API key endpoints; `false` turns them off. Off by default with `basic: false`. */
  apiKeyEndpoints?: ApiKeyEndpointOptions | false
  /** Connected apps, as JSON and as a page; `false` turns both off. Off by default with `oauth: false`. */
  connectedApps?: ConnectedAppsOptions | false
  /**
   * Applications developers own: the self-service endpoints, the cap and budget per user,
   * the grace of a rotated secret. `false` turns the endpoints off (the grace keeps its
   * default). The endpoints are off by default with both `basic` and `oauth` off (no one could sign in).
   */
  applications?: ApplicationOptions | false
  /** What one user may ask of the self-service endpoints (`{ limit, windowMs }`, or `false`): {@link SelfServiceBudgetOption}. */
  selfServiceBudget?: SelfServiceBudgetOption
  /** The realm named in `WWW-Authenticate` challenges. Default `'api'`. */
  realm?: string
  /** Usage counting per application (docs/guides/usage.md); on by default, `false` turns it off. */
  usage?: UsageOptions | false
  /**
   * Alerts when an application crosses 80%, 90% and 100% of its limit (configurable): the
   * `nearLimit` event, once per threshold per window across the instances sharing the store,
   * a metric, and optionally a signed webhook to the operator (docs/guides/usage.md). On by
   * default (the event and the metric); `false` turns it off.
   */
  nearLimit?: NearLimitOptions | false
  /**
   * OpenTelemetry metrics (docs/guides/telemetry.md). By default the gate records into the
   * global meter provider of `@opentelemetry/api` when it is installed and an SDK
   * registered one; `{ meterProvider }` names another; `false` records nothing.
   */
  metrics?: MetricsOptions | false
  /**
   * Where the gate says what went wrong: a store outage (its first failure, with a hint
   * where one applies, and its recovery), a 500 and why, and its warnings about the
   * configuration. Any object with `error`, `warn`, `info` and `debug` methods (`console`,
   * winston, pino, bunyan), called with a message and fields (pino, bunyan: fields first). Default: process
   * warnings, one line on stderr each, with a code; `false` says nothing.
   * @see docs/guides/operating.md
   */
  logger?: GateLogger | false
  /**
   * The request id (`X-Request-Id`) on every answer, on the context, in events and log
   * lines: generated, or a trusted proxy's. `false` turns it off.
   * @see docs/guides/operating.md
   */
  requestId?: RequestIdOptions | false
}

/** A throttle policy after resolution. */
export interface ResolvedPolicy {
  /** The name in the `RateLimit` headers: `app`, `anon`, or a plan's one limit's name. */
  readonly name: string
  readonly limit: number
  readonly windowMs: number
}

/** The configuration a gate runs on. */
export interface ResolvedConfig {
  readonly store: GateStore
  /** The store of rate counters: `store` unless `rateStore` was given. */
  readonly rateStore: RateStore
  readonly applicationCacheMs: number
  /** The default plan's single limit, or `null` (off, or a default plan of several limits: {@link defaultPlan}). */
  readonly application: ResolvedPolicy | null
  /** The default plan when it is a list of limits (`throttle.application: [...]`); `null` otherwise. */
  readonly defaultPlan: ResolvedPlan | null
  /** `throttle.plans`, by name. */
  readonly plans: ReadonlyMap<string, ResolvedPlan>
  /** `throttle.local`: the plans and applications that count locally from leases, or `null` (off). */
  readonly local: ResolvedLocalCounting | null
  readonly anonymous: (ResolvedPolicy & { readonly scope: 'shared' | 'ip'; readonly ipv6Subnet: number }) | null
  readonly legacyHeaders: boolean
  readonly onStoreError: StoreFailureMode
  readonly oauthTokenBudget: 'application' | 'anonymous'
  readonly trust: (address: string, hop: number) => boolean
  readonly trustsAnyProxy: boolean
  /** `trustProxy: true`: every peer is a proxy whose headers are believed. */
  readonly trustsEveryProxy: boolean
  readonly proxyHeaders: ProxyHeadersOption
  /** `trustedOrigins` and `oauth.issuer`'s origin, serialized as `URL#origin`. */
  readonly trustedOrigins: ReadonlySet<string>
  readonly legacyAppTokenParam: boolean
  readonly storeTimeoutMs: number
  readonly bodyTimeoutMs: number
  readonly basic: {
    /** `false` with `basic: false`: the other fields keep their defaults, for password sign-in on the OAuth pages. */
    readonly enabled: boolean
    readonly requireAppToken: boolean
    readonly challenge: boolean
    readonly cacheTtlMs: number
    readonly failures: RatePolicyOptions | null
    readonly addressFailures: RatePolicyOptions | null
    readonly hashing: HashQueueLimits
    readonly scrypt: ScryptParams
  }
  readonly oauth: {
    /** `false` with `oauth: false`: every path is `null`. */
    readonly enabled: boolean
    readonly acceptBearer: boolean
    readonly accessTokenTtlMs: number
    readonly codeTtlMs: number
    readonly requirePkce: boolean
    readonly issuer: string | null
    readonly paths: { readonly [K in keyof OAuthPaths]-?: string | null }
    readonly sessionTtlMs: number
    readonly maxSessionsPerUser: number
    readonly allowLoopbackCallbacks: boolean
    readonly authenticateUser: OAuthOptions['authenticateUser'] | null
    readonly loginUrl: string | null
    readonly pages: OAuthPages
    readonly clientFailures: RatePolicyOptions | null
    readonly throttle: RatePolicyOptions | null
    readonly rememberConsent: boolean
  }
  readonly currentUser: { readonly json: readonly string[]; readonly xml: readonly string[] }
  readonly apiKeyEndpoints: { readonly path: string; readonly maxActiveKeys: number; readonly maxKeys: number } | null
  /** How long deleted API keys are kept, endpoints on or off. */
  readonly deletedKeyRetentionMs: number
  readonly connectedApps: { readonly path: string | null; readonly page: string | null }
  readonly applications: {
    /** `null` with the endpoints off. */
    readonly path: string | null
    readonly maxPerUser: number
    readonly registrations: RatePolicyOptions | null
    readonly secretGraceMs: number
  }
  /** The self-service endpoints' budget per user; `null` when off. */
  readonly selfServiceBudget: RatePolicyOptions | null
  readonly realm: string
  readonly usage: ResolvedUsage | null
  readonly nearLimit: ResolvedNearLimit | null
  /** The provider the gate's metrics go to; `'global'`: `@opentelemetry/api`'s, if any; `null`: none. */
  readonly meterProvider: MeterProviderLike | 'global' | null
  /** Where the gate's log lines go (`logger`). */
  readonly log: GateLog
  /** The request ids, or `null` with `requestId: false`. */
  readonly requestIds: RequestIds | null
}
