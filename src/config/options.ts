/**
 * The options of {@link createGate}, and their resolution into one full, validated
 * configuration at construction. The caller's object is never changed; a bad value is a
 * `TypeError` that names the option.
 */
import type { GateRequest } from '../http/request.js'
import type { HashQueueLimits } from '../secrets/hash-queue.js'
import type { OAuthPages } from '../oauth/pages.js'
import { DEFAULT_SCRYPT, type ScryptParams } from '../secrets/passwords.js'
import { compileTrustProxy, type ProxyHeadersOption, type TrustProxyOption } from '../http/proxy.js'
import { STORE_METHODS } from '../store/guarded-store.js'
import { MemoryStore } from '../store/memory/store.js'
import type { Awaitable, GateStore, RateStore } from '../store/store.js'
import { resolveUsage, type ResolvedUsage, type UsageOptions } from '../usage/options.js'

/** `limit` requests per `windowMs`, with a burst of up to `limit`. */
export interface RatePolicyOptions {
  /** Requests per window, a positive integer. */
  limit: number
  /** The window in milliseconds, a positive integer. */
  windowMs: number
}

/** The budget of requests that carry no application token. */
export interface AnonymousPolicyOptions extends RatePolicyOptions {
  /**
   * `'shared'`: one pool for every request without a token (the spec's reading).
   * `'ip'`: one pool per client address (what the platform does today). Default `'ip'`.
   */
  scope?: 'shared' | 'ip'
  /** With `scope: 'ip'`, IPv6 clients are counted per prefix of this many bits. Default 56. */
  ipv6Subnet?: number
}

/** What to do when the store fails or times out during a throttling step. */
export type StoreFailureMode =
  /** Let the request through unthrottled (Kong, Envoy). */
  | 'fail-open'
  /** Answer 503 `service_unavailable` (express-rate-limit, @fastify/rate-limit). */
  | 'fail-closed'
  /** Throttle in this process's memory until the store answers again. */
  | 'memory'

/** Throttling options. */
export interface ThrottleOptions {
  /** Per registered application, keyed by its app token. Default 1000 per hour; `false` turns it off. */
  application?: RatePolicyOptions | false
  /** Requests without a token. Default 60 per hour per client address; `false` turns it off. */
  anonymous?: AnonymousPolicyOptions | false
  /** Also send the legacy `X-RateLimit-Limit/-Remaining/-Reset` headers. Default `false`. */
  legacyHeaders?: boolean
  /** Default `'memory'`. */
  onStoreError?: StoreFailureMode
  /**
   * Which budget a request authenticated with an OAuth access token, and without an
   * `X-App-Token`, counts against. `'application'` (the default): the application the
   * token was issued to, since the token is that application's credential (the spec counts
   * usage "for that application"). `'anonymous'`: the anonymous budget, the literal reading
   * (no application token, no application).
   */
  oauthTokenBudget?: 'application' | 'anonymous'
}

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

/** Where the OAuth endpoints live; `false` turns one off. */
export interface OAuthPaths {
  /** Default `/oauth/authorize`. */
  authorize?: string | false
  /** Default `/oauth/access_token`. */
  token?: string | false
  /** RFC 7009 revocation. Default `/oauth/revoke`. */
  revoke?: string | false
  /** RFC 8414 metadata. Default `/.well-known/oauth-authorization-server`. */
  metadata?: string | false
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

/** Where the gate serves the current-user record; `false` turns the endpoints off. */
export interface CurrentUserOptions {
  /** Default `['/api/users/current.json', '/users/current.json']`. */
  json?: readonly string[]
  /** Default `['/users/current.xml']`. */
  xml?: readonly string[]
}

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

/** How long a deleted API key is kept before the store purges it, unless `apiKeyEndpoints.deletedKeyRetentionMs` says otherwise: 30 days. */
export const DEFAULT_DELETED_KEY_RETENTION_MS = 30 * 86_400_000

/** Where the signed-in user sees and revokes the applications they authorized; `false` turns one off. */
export interface ConnectedAppsOptions {
  /** The JSON endpoints: `GET <path>`, `DELETE <path>/<appToken>`. Default `/api/oauth/grants`. */
  path?: string | false
  /** The HTML page, on the gate's login session. Default `/oauth/grants`. */
  page?: string | false
}

/** Options of {@link createGate}. */
export interface GateOptions {
  /** Where records and rate counters live. Default: a new {@link MemoryStore}. */
  store?: GateStore
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
  /** Accept the SODA 1.0 query parameter `app_token` beside `$$app_token`. Default `true`. */
  legacyAppTokenParam?: boolean
  /** A store call that takes longer fails with a `StoreError`. Default 1000 ms. */
  storeTimeoutMs?: number
  /**
   * How long the gate waits for a request body it reads itself (the OAuth endpoints'
   * posts), in ms; a body not there by then is answered 408 and the connection closed.
   * Default 10 000.
   */
  bodyTimeoutMs?: number
  /** HTTP Basic authentication. */
  basic?: BasicOptions
  /** OAuth access tokens. */
  oauth?: OAuthOptions
  /** The current-user endpoints; `false` turns them off. */
  currentUser?: CurrentUserOptions | false
  /** The platform's API key endpoints; `false` turns them off. */
  apiKeyEndpoints?: ApiKeyEndpointOptions | false
  /** Connected apps, as JSON and as a page; `false` turns both off. */
  connectedApps?: ConnectedAppsOptions | false
  /** The realm named in `WWW-Authenticate` challenges. Default `'api'`. */
  realm?: string
  /** Usage counting per application (docs/guides/usage.md); on by default, `false` turns it off. */
  usage?: UsageOptions | false
}

/** A throttle policy after resolution. */
export interface ResolvedPolicy {
  /** The name in the `RateLimit` headers. */
  readonly name: 'app' | 'anon'
  readonly limit: number
  readonly windowMs: number
}

/** The configuration a gate runs on. */
export interface ResolvedConfig {
  readonly store: GateStore
  /** The store of rate counters: `store` unless `rateStore` was given. */
  readonly rateStore: RateStore
  readonly applicationCacheMs: number
  readonly application: ResolvedPolicy | null
  readonly anonymous: (ResolvedPolicy & { readonly scope: 'shared' | 'ip'; readonly ipv6Subnet: number }) | null
  readonly legacyHeaders: boolean
  readonly onStoreError: StoreFailureMode
  readonly oauthTokenBudget: 'application' | 'anonymous'
  readonly trust: (address: string, hop: number) => boolean
  readonly trustsAnyProxy: boolean
  readonly proxyHeaders: ProxyHeadersOption
  readonly legacyAppTokenParam: boolean
  readonly storeTimeoutMs: number
  readonly bodyTimeoutMs: number
  readonly basic: {
    readonly requireAppToken: boolean
    readonly challenge: boolean
    readonly cacheTtlMs: number
    readonly failures: RatePolicyOptions | null
    readonly addressFailures: RatePolicyOptions | null
    readonly hashing: HashQueueLimits
    readonly scrypt: ScryptParams
  }
  readonly oauth: {
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
  readonly realm: string
  readonly usage: ResolvedUsage | null
}

/** The names of an options type, checked complete by the compiler: a new option cannot be forgotten here. */
function optionNames<T>(names: Record<keyof T, true>): readonly string[] {
  return Object.keys(names)
}
const GATE_OPTION_NAMES = optionNames<GateOptions>({
  store: true, rateStore: true, applicationCacheMs: true, apiKeyEndpoints: true, connectedApps: true, throttle: true, trustProxy: true, proxyHeaders: true, legacyAppTokenParam: true, storeTimeoutMs: true, bodyTimeoutMs: true,
  basic: true, oauth: true, currentUser: true, realm: true, usage: true,
})
const THROTTLE_OPTION_NAMES = optionNames<ThrottleOptions>({ application: true, anonymous: true, legacyHeaders: true, onStoreError: true, oauthTokenBudget: true })
const BASIC_OPTION_NAMES = optionNames<BasicOptions>({ requireAppToken: true, challenge: true, cacheTtlMs: true, failures: true, addressFailures: true, hashing: true, scrypt: true })
const OAUTH_OPTION_NAMES = optionNames<OAuthOptions>({
  acceptBearer: true, accessTokenTtlMs: true, codeTtlMs: true, requirePkce: true, issuer: true, paths: true, sessionTtlMs: true, maxSessionsPerUser: true,
  allowLoopbackCallbacks: true, rememberConsent: true, authenticateUser: true, loginUrl: true, pages: true, clientFailures: true, throttle: true,
})

const DEFAULT_APPLICATION = { limit: 1000, windowMs: 3_600_000 }
const DEFAULT_ANONYMOUS = { limit: 60, windowMs: 3_600_000 }

/** Resolves and validates the options. @throws {TypeError} naming the bad option. */
export function resolveOptions(options: GateOptions = {}): ResolvedConfig {
  if (typeof options !== 'object' || options === null) throw new TypeError('open-data-gate: options must be an object')
  rejectUnknownKeys('', options, GATE_OPTION_NAMES)
  const throttle = options.throttle === false ? { application: false as const, anonymous: false as const } : (options.throttle ?? {})
  if (options.throttle !== false) optionsObject('throttle', throttle, THROTTLE_OPTION_NAMES)
  const application = resolvePolicy('throttle.application', throttle.application, DEFAULT_APPLICATION, 'app')
  const anonymousInput = throttle.anonymous
  const anonymousBase = resolvePolicy('throttle.anonymous', anonymousInput, DEFAULT_ANONYMOUS, 'anon')
  let anonymous: ResolvedConfig['anonymous'] = null
  if (anonymousBase !== null) {
    const input: Partial<AnonymousPolicyOptions> = anonymousInput === undefined || anonymousInput === false ? {} : anonymousInput
    rejectUnknownKeys('throttle.anonymous', input, optionNames<AnonymousPolicyOptions>({ limit: true, windowMs: true, scope: true, ipv6Subnet: true }))
    const scope = input.scope ?? 'ip'
    if (scope !== 'shared' && scope !== 'ip') throw new TypeError(`open-data-gate: throttle.anonymous.scope must be 'shared' or 'ip', got ${JSON.stringify(scope)}`)
    const ipv6Subnet = input.ipv6Subnet ?? 56
    if (!Number.isInteger(ipv6Subnet) || ipv6Subnet < 1 || ipv6Subnet > 128) {
      throw new TypeError(`open-data-gate: throttle.anonymous.ipv6Subnet must be an integer from 1 to 128, got ${String(ipv6Subnet)}`)
    }
    anonymous = { ...anonymousBase, scope, ipv6Subnet }
  }
  const onStoreError = throttle.onStoreError ?? 'memory'
  if (!['fail-open', 'fail-closed', 'memory'].includes(onStoreError)) {
    throw new TypeError(`open-data-gate: throttle.onStoreError must be 'fail-open', 'fail-closed' or 'memory', got ${JSON.stringify(onStoreError)}`)
  }
  const oauthTokenBudget = throttle.oauthTokenBudget ?? 'application'
  if (oauthTokenBudget !== 'application' && oauthTokenBudget !== 'anonymous') {
    throw new TypeError(`open-data-gate: throttle.oauthTokenBudget must be 'application' or 'anonymous', got ${JSON.stringify(oauthTokenBudget)}`)
  }
  const proxyHeaders = options.proxyHeaders ?? 'x-forwarded'
  if (proxyHeaders !== 'x-forwarded' && proxyHeaders !== 'forwarded') {
    throw new TypeError(`open-data-gate: proxyHeaders must be 'x-forwarded' or 'forwarded', got ${JSON.stringify(proxyHeaders)}`)
  }
  const storeTimeoutMs = options.storeTimeoutMs ?? 1000
  positiveInteger('storeTimeoutMs', storeTimeoutMs)
  const bodyTimeoutMs = options.bodyTimeoutMs ?? 10_000
  positiveInteger('bodyTimeoutMs', bodyTimeoutMs)
  const trustProxy = options.trustProxy ?? false
  const store = options.store ?? new MemoryStore()
  if (typeof store !== 'object' || store === null) throw new TypeError('open-data-gate: store must implement the GateStore interface')
  const missing = STORE_METHODS.filter((name) => typeof (store as unknown as Record<string, unknown>)[name] !== 'function')
  if (missing.length > 0) throw new TypeError(`open-data-gate: store must implement the GateStore interface; it lacks ${missing.join(', ')}`)
  const rateStore = options.rateStore ?? store
  if (typeof rateStore !== 'object' || rateStore === null || typeof rateStore.consumeRate !== 'function' || typeof rateStore.resetRate !== 'function') {
    throw new TypeError('open-data-gate: rateStore must have consumeRate and resetRate (a GateStore, or a store of rate counters only)')
  }
  const applicationCacheMs = options.applicationCacheMs ?? 5000
  if (!Number.isSafeInteger(applicationCacheMs) || applicationCacheMs < 0) {
    throw new TypeError(`open-data-gate: applicationCacheMs must be 0 or a positive integer, got ${JSON.stringify(applicationCacheMs)}`)
  }
  const basic = optionsObject('basic', options.basic ?? {}, BASIC_OPTION_NAMES)
  const cacheTtlMs = basic.cacheTtlMs ?? 300_000
  if (!Number.isSafeInteger(cacheTtlMs) || cacheTtlMs < 0) throw new TypeError(`open-data-gate: basic.cacheTtlMs must be 0 or a positive integer, got ${JSON.stringify(cacheTtlMs)}`)
  const failures = resolvePolicy('basic.failures', basic.failures, { limit: 10, windowMs: 900_000 }, 'app')
  const addressFailures = resolvePolicy('basic.addressFailures', basic.addressFailures, { limit: 20, windowMs: 900_000 }, 'app')
  if (basic.hashing !== undefined) optionsObject('basic.hashing', basic.hashing, optionNames<HashQueueLimits>({ concurrency: true, queue: true, queuePerAddress: true }))
  const hashing = { concurrency: 2, queue: 64, queuePerAddress: 4, ...basic.hashing }
  positiveInteger('basic.hashing.concurrency', hashing.concurrency)
  positiveInteger('basic.hashing.queue', hashing.queue)
  positiveInteger('basic.hashing.queuePerAddress', hashing.queuePerAddress)
  if (basic.scrypt !== undefined) optionsObject('basic.scrypt', basic.scrypt, optionNames<ScryptParams>({ logN: true, blockSize: true, parallelization: true }))
  const scrypt = { ...DEFAULT_SCRYPT, ...basic.scrypt }
  if (!Number.isInteger(scrypt.logN) || scrypt.logN < 10 || scrypt.logN > 22) throw new TypeError(`open-data-gate: basic.scrypt.logN must be an integer from 10 to 22, got ${JSON.stringify(scrypt.logN)}`)
  positiveInteger('basic.scrypt.blockSize', scrypt.blockSize)
  positiveInteger('basic.scrypt.parallelization', scrypt.parallelization)
  const oauth = optionsObject('oauth', options.oauth ?? {}, OAUTH_OPTION_NAMES)
  const accessTokenTtlMs = oauth.accessTokenTtlMs ?? 86_400_000
  positiveInteger('oauth.accessTokenTtlMs', accessTokenTtlMs)
  const codeTtlMs = oauth.codeTtlMs ?? 60_000
  positiveInteger('oauth.codeTtlMs', codeTtlMs)
  if (codeTtlMs > 600_000) throw new TypeError(`open-data-gate: oauth.codeTtlMs must be at most 600000 (10 minutes, RFC 6749 §4.1.2), got ${codeTtlMs}`)
  const sessionTtlMs = oauth.sessionTtlMs ?? 3_600_000
  positiveInteger('oauth.sessionTtlMs', sessionTtlMs)
  const maxSessionsPerUser = oauth.maxSessionsPerUser ?? 10
  positiveInteger('oauth.maxSessionsPerUser', maxSessionsPerUser)
  if (oauth.issuer !== undefined && !isIssuer(oauth.issuer)) {
    throw new TypeError(`open-data-gate: oauth.issuer must be an https URL without query or fragment, got ${JSON.stringify(oauth.issuer)}`)
  }
  if (oauth.authenticateUser !== undefined && typeof oauth.authenticateUser !== 'function') throw new TypeError('open-data-gate: oauth.authenticateUser must be a function')
  if (oauth.loginUrl !== undefined && (typeof oauth.loginUrl !== 'string' || !(oauth.loginUrl.startsWith('/') || URL.canParse(oauth.loginUrl)))) {
    throw new TypeError('open-data-gate: oauth.loginUrl must be a path or an absolute URL')
  }
  const pages = optionsObject('oauth.pages', oauth.pages ?? {}, optionNames<OAuthPages>({ siteName: true, login: true, consent: true, error: true }))
  for (const name of ['login', 'consent', 'error'] as const) {
    if (pages[name] !== undefined && typeof pages[name] !== 'function') throw new TypeError(`open-data-gate: oauth.pages.${name} must be a function returning HTML`)
  }
  if (pages.siteName !== undefined && (typeof pages.siteName !== 'string' || pages.siteName.trim() === '' || pages.siteName.length > 100)) {
    throw new TypeError('open-data-gate: oauth.pages.siteName must be a non-empty string of at most 100 characters')
  }
  const clientFailures = resolvePolicy('oauth.clientFailures', oauth.clientFailures, { limit: 10, windowMs: 900_000 }, 'app')
  const oauthThrottle = resolvePolicy('oauth.throttle', oauth.throttle, { limit: 60, windowMs: 60_000 }, 'anon')
  const oauthPaths = optionsObject('oauth.paths', oauth.paths ?? {}, optionNames<OAuthPaths>({ authorize: true, token: true, revoke: true, metadata: true }))
  const endpointPath = (name: keyof OAuthPaths, fallback: string): string | null => {
    const value = oauthPaths[name]
    if (value === false) return null
    if (value === undefined) return fallback
    return paths(`oauth.paths.${name}`, [value], [])[0] as string
  }
  const apiKeyEndpoints = resolveApiKeyEndpoints(options.apiKeyEndpoints)
  const connectedApps = resolveConnectedApps(options.connectedApps)
  const currentUser = options.currentUser === false ? { json: [], xml: [] } : optionsObject('currentUser', options.currentUser ?? {}, optionNames<CurrentUserOptions>({ json: true, xml: true }))
  const realm = options.realm ?? 'api'
  if (typeof realm !== 'string' || !/^[\x20-\x7e]*$/.test(realm) || realm.includes('"')) throw new TypeError('open-data-gate: realm must be printable ASCII without quotes')
  return {
    store,
    rateStore,
    applicationCacheMs,
    application,
    anonymous,
    legacyHeaders: booleanOption('throttle.legacyHeaders', throttle.legacyHeaders, false),
    onStoreError,
    oauthTokenBudget,
    trust: compileTrustProxy(trustProxy),
    trustsAnyProxy: trustProxy !== false,
    proxyHeaders,
    legacyAppTokenParam: booleanOption('legacyAppTokenParam', options.legacyAppTokenParam, true),
    storeTimeoutMs,
    bodyTimeoutMs,
    basic: {
      requireAppToken: booleanOption('basic.requireAppToken', basic.requireAppToken, true),
      challenge: booleanOption('basic.challenge', basic.challenge, false),
      cacheTtlMs,
      failures: failures === null ? null : { limit: failures.limit, windowMs: failures.windowMs },
      addressFailures: addressFailures === null ? null : { limit: addressFailures.limit, windowMs: addressFailures.windowMs },
      hashing,
      scrypt,
    },
    oauth: {
      acceptBearer: booleanOption('oauth.acceptBearer', oauth.acceptBearer, true),
      accessTokenTtlMs,
      codeTtlMs,
      requirePkce: booleanOption('oauth.requirePkce', oauth.requirePkce, false),
      issuer: oauth.issuer?.replace(/\/$/, '') ?? null,
      paths: {
        authorize: endpointPath('authorize', '/oauth/authorize'),
        token: endpointPath('token', '/oauth/access_token'),
        revoke: endpointPath('revoke', '/oauth/revoke'),
        metadata: endpointPath('metadata', '/.well-known/oauth-authorization-server'),
      },
      sessionTtlMs,
      maxSessionsPerUser,
      allowLoopbackCallbacks: booleanOption('oauth.allowLoopbackCallbacks', oauth.allowLoopbackCallbacks, false),
      authenticateUser: oauth.authenticateUser ?? null,
      loginUrl: oauth.loginUrl ?? null,
      pages,
      clientFailures: clientFailures === null ? null : { limit: clientFailures.limit, windowMs: clientFailures.windowMs },
      throttle: oauthThrottle === null ? null : { limit: oauthThrottle.limit, windowMs: oauthThrottle.windowMs },
      rememberConsent: booleanOption('oauth.rememberConsent', oauth.rememberConsent, false),
    },
    currentUser: {
      json: paths('currentUser.json', currentUser.json, ['/api/users/current.json', '/users/current.json']),
      xml: paths('currentUser.xml', currentUser.xml, ['/users/current.xml']),
    },
    apiKeyEndpoints,
    deletedKeyRetentionMs: resolveDeletedKeyRetention(options.apiKeyEndpoints),
    connectedApps,
    realm,
    usage: resolveUsage(options.usage),
  }
}

/**
 * `value` if it is a plain options object with only `known` keys.
 * @throws {TypeError} naming the option, or the unknown key and the nearest valid one
 */
export function optionsObject<T extends object>(name: string, value: T, known: readonly string[]): T {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError(`open-data-gate: ${name} must be an object`)
  rejectUnknownKeys(name, value, known)
  return value
}

/** @throws {TypeError} unless every entry is an absolute path. */
export function paths(name: string, value: readonly string[] | undefined, fallback: readonly string[]): readonly string[] {
  if (value === undefined) return fallback
  if (!Array.isArray(value) || !value.every((p) => typeof p === 'string' && p.startsWith('/') && !p.includes('?'))) {
    throw new TypeError(`open-data-gate: ${name} must be a list of paths starting with "/"`)
  }
  return value
}

function resolveApiKeyEndpoints(input: ApiKeyEndpointOptions | false | undefined): ResolvedConfig['apiKeyEndpoints'] {
  if (input === false) return null
  if (input !== undefined && (typeof input !== 'object' || input === null)) throw new TypeError('open-data-gate: apiKeyEndpoints must be { path, maxActiveKeys, maxKeys, deletedKeyRetentionMs } or false')
  if (input !== undefined) {
    rejectUnknownKeys('apiKeyEndpoints', input, optionNames<ApiKeyEndpointOptions>({ path: true, maxActiveKeys: true, maxKeys: true, deletedKeyRetentionMs: true }))
  }
  const path = input?.path === undefined ? '/api/api_keys' : singlePath('apiKeyEndpoints.path', input.path)
  const maxActiveKeys = input?.maxActiveKeys ?? 100
  positiveInteger('apiKeyEndpoints.maxActiveKeys', maxActiveKeys)
  const maxKeys = input?.maxKeys ?? Math.max(1000, maxActiveKeys)
  positiveInteger('apiKeyEndpoints.maxKeys', maxKeys)
  if (maxKeys < maxActiveKeys) throw new TypeError(`open-data-gate: apiKeyEndpoints.maxKeys (${maxKeys}) must be at least maxActiveKeys (${maxActiveKeys})`)
  return { path, maxActiveKeys, maxKeys }
}

function resolveDeletedKeyRetention(input: ApiKeyEndpointOptions | false | undefined): number {
  const retention = (input === false ? undefined : input?.deletedKeyRetentionMs) ?? DEFAULT_DELETED_KEY_RETENTION_MS
  positiveInteger('apiKeyEndpoints.deletedKeyRetentionMs', retention)
  return retention
}

function resolveConnectedApps(input: ConnectedAppsOptions | false | undefined): ResolvedConfig['connectedApps'] {
  if (input === false) return { path: null, page: null }
  if (input !== undefined && (typeof input !== 'object' || input === null)) throw new TypeError('open-data-gate: connectedApps must be { path, page } or false')
  if (input !== undefined) rejectUnknownKeys('connectedApps', input, optionNames<ConnectedAppsOptions>({ path: true, page: true }))
  const one = (name: 'path' | 'page', fallback: string): string | null => {
    const value = input?.[name]
    if (value === false) return null
    return value === undefined ? fallback : singlePath(`connectedApps.${name}`, value)
  }
  return { path: one('path', '/api/oauth/grants'), page: one('page', '/oauth/grants') }
}

/** @throws {TypeError} unless `value` is an absolute path without a query or a trailing slash. */
function singlePath(name: string, value: unknown): string {
  if (typeof value !== 'string' || !value.startsWith('/') || value.includes('?') || (value.length > 1 && value.endsWith('/'))) {
    throw new TypeError(`open-data-gate: ${name} must be a path starting with "/" (no query, no trailing "/"), got ${JSON.stringify(value)}`)
  }
  return value
}

function isIssuer(value: unknown): boolean {
  if (typeof value !== 'string' || !URL.canParse(value)) return false
  const url = new URL(value)
  return url.protocol === 'https:' && url.search === '' && url.hash === '' && !value.includes('?') && !value.includes('#')
}

function resolvePolicy(
  name: string,
  input: RatePolicyOptions | false | undefined,
  defaults: RatePolicyOptions,
  header: ResolvedPolicy['name'],
): ResolvedPolicy | null {
  if (input === false) return null
  if (input !== undefined && (typeof input !== 'object' || input === null)) {
    throw new TypeError(`open-data-gate: ${name} must be { limit, windowMs } or false`)
  }
  if (input !== undefined && !name.endsWith('anonymous')) rejectUnknownKeys(name, input, optionNames<RatePolicyOptions>({ limit: true, windowMs: true }))
  const limit = input?.limit ?? defaults.limit
  const windowMs = input?.windowMs ?? defaults.windowMs
  positiveInteger(`${name}.limit`, limit)
  positiveInteger(`${name}.windowMs`, windowMs)
  return { name: header, limit, windowMs }
}

/** @throws {TypeError} unless `value` is a positive safe integer. */
export function positiveInteger(name: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(`open-data-gate: ${name} must be a positive integer, got ${JSON.stringify(value)}`)
  }
}

function booleanOption(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') throw new TypeError(`open-data-gate: ${name} must be true or false, got ${JSON.stringify(value)}`)
  return value
}

/**
 * Refuses keys an options object does not know, so a misspelt option fails loudly instead
 * of leaving a default in place (`{ anonymous: { limt: 5 } }` would otherwise run with
 * the default limit).
 * @param name where the object sits (`throttle.anonymous`), or `''` for the top level
 * @throws {TypeError} naming the unknown key and the nearest valid one
 */
export function rejectUnknownKeys(name: string, value: object, known: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue
    const path = name === '' ? key : `${name}.${key}`
    const nearest = nearestName(key, known)
    const hint = nearest === undefined ? `valid names are ${known.map((k) => `\`${k}\``).join(', ')}` : `did you mean \`${nearest}\`?`
    throw new TypeError(`open-data-gate: unknown option \`${path}\`; ${hint}`)
  }
}

/** The known name closest to `key` by edit distance, if it is close enough to be a typo. */
function nearestName(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined
  let bestDistance = Infinity
  const lower = key.toLowerCase()
  for (const candidate of known) {
    const name = candidate.toLowerCase()
    // A name with a part left out (`oauthBudget` for `oauthTokenBudget`) counts as a typo too.
    const distance = lower.length >= 4 && lower.length * 2 >= name.length && isSubsequence(lower, name) ? 1 : editDistance(lower, name)
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined
}

/** Whether every character of `part` appears in `whole`, in order. */
function isSubsequence(part: string, whole: string): boolean {
  let i = 0
  for (let j = 0; j < whole.length && i < part.length; j++) if (whole[j] === part[i]) i++
  return i === part.length
}

/** Levenshtein distance: insertions, deletions and substitutions, one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1)
      row.push(Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, substitution))
    }
    previous = row
  }
  return previous[b.length] as number
}
