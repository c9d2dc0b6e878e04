/**
 * Resolves the options of `createGate` into the one full, validated configuration a gate
 * runs on, one function per section of the options. The caller's object is never changed;
 * a bad value is a `TypeError` that names the option (and, for a misspelt name, the
 * nearest valid one). The defaults come from config/defaults.ts.
 * @see docs/reference/options.md
 */
import { compileTrustProxy } from '../http/proxy.js'
import { resolveRequestIds, type RequestIdOptions } from '../http/request-id.js'
import { resolveLogger, type GateLog } from '../log/logger.js'
import type { OAuthPages } from './pages-option.js'
import type { HashQueueLimits } from '../secrets/hash-queue.js'
import { DEFAULT_SCRYPT, type ScryptParams } from '../secrets/passwords.js'
import { MemoryStore } from '../store/memory/store.js'
import {
  DEFAULT_ACCESS_TOKEN_TTL_MS,
  DEFAULT_ANONYMOUS_IPV6_SUBNET,
  DEFAULT_ANONYMOUS_LIMIT,
  DEFAULT_ANONYMOUS_SCOPE,
  DEFAULT_API_KEY_PATH,
  DEFAULT_APPLICATIONS_PATH,
  DEFAULT_MAX_APPLICATIONS_PER_USER,
  DEFAULT_REGISTRATIONS,
  DEFAULT_SELF_SERVICE_BUDGET,
  DEFAULT_SECRET_GRACE_MS,
  MAX_SECRET_GRACE_MS,
  DEFAULT_APPLICATION_CACHE_MS,
  DEFAULT_APPLICATION_LIMIT,
  DEFAULT_BODY_TIMEOUT_MS,
  DEFAULT_CLIENT_FAILURES,
  DEFAULT_CODE_TTL_MS,
  DEFAULT_CONNECTED_APPS_PATHS,
  DEFAULT_CURRENT_USER_PATHS,
  DEFAULT_DELETED_KEY_RETENTION_MS,
  DEFAULT_HASHING,
  DEFAULT_LOGIN_ADDRESS_FAILURES,
  DEFAULT_LOGIN_FAILURES,
  DEFAULT_MAX_ACTIVE_KEYS,
  DEFAULT_MAX_KEYS,
  DEFAULT_MAX_SESSIONS_PER_USER,
  DEFAULT_OAUTH_PATHS,
  DEFAULT_OAUTH_THROTTLE,
  DEFAULT_OAUTH_TOKEN_BUDGET,
  DEFAULT_ON_STORE_ERROR,
  DEFAULT_PASSWORD_CACHE_TTL_MS,
  DEFAULT_PROXY_HEADERS,
  DEFAULT_REALM,
  DEFAULT_SESSION_TTL_MS,
  DEFAULT_STORE_TIMEOUT_MS,
  MAX_CODE_TTL_MS,
} from './defaults.js'
import type {
  AnonymousPolicyOptions,
  ApiKeyEndpointOptions,
  ApplicationOptions,
  BasicOptions,
  ConnectedAppsOptions,
  GateOptions,
  OAuthOptions,
  ResolvedConfig,
  ThrottleOptions,
} from './options.js'
import { dependentOption } from './features.js'
import type { CurrentUserOptions, OAuthPaths } from './endpoint-paths.js'
import { isIssuer, resolveTrustedOrigins } from './origins.js'
import { resolveUsage } from '../usage/options.js'
import { resolveNearLimit } from '../usage/near-limit.js'
import { resolveMetrics } from '../telemetry/metrics.js'
import type { GateStore, RateStore } from '../store/store.js'
import { booleanOption, optionNames, optionsObject, paths, positiveInteger, rejectUnknownKeys, secretGrace, singlePath } from '../util/validate.js'
import { budget, resolvePolicy } from './rate-policy.js'
import { DEFAULT_PLAN, resolvePlan, resolvePlans } from './plans.js'
import { resolveLocalCounting } from './local-counting.js'
import type { RatePolicyOptions } from './rate-policy-options.js'

/** Every top-level option of `createGate`. */
export const GATE_OPTION_NAMES = optionNames<GateOptions>({
  store: true, rateStore: true, applicationCacheMs: true, apiKeyEndpoints: true, connectedApps: true, applications: true, throttle: true, trustProxy: true, proxyHeaders: true, trustedOrigins: true, legacyAppTokenParam: true, storeTimeoutMs: true, bodyTimeoutMs: true,
  basic: true, oauth: true, currentUser: true, realm: true, usage: true, nearLimit: true, selfServiceBudget: true,
  metrics: true, logger: true, requestId: true,
})
const REQUEST_ID_OPTION_NAMES = optionNames<RequestIdOptions>({ header: true, trustIncoming: true })
const THROTTLE_OPTION_NAMES = optionNames<ThrottleOptions>({ application: true, anonymous: true, legacyHeaders: true, onStoreError: true, oauthTokenBudget: true, plans: true, local: true })
const BASIC_OPTION_NAMES = optionNames<BasicOptions>({ requireAppToken: true, challenge: true, cacheTtlMs: true, failures: true, addressFailures: true, hashing: true, scrypt: true })
const OAUTH_OPTION_NAMES = optionNames<OAuthOptions>({
  acceptBearer: true, accessTokenTtlMs: true, codeTtlMs: true, requirePkce: true, issuer: true, paths: true, sessionTtlMs: true, maxSessionsPerUser: true,
  allowLoopbackCallbacks: true, rememberConsent: true, authenticateUser: true, loginUrl: true, pages: true, clientFailures: true, throttle: true,
})

/** Resolves and validates the options. @throws {TypeError} naming the bad option. */
export function resolveOptions(options: GateOptions = {}): ResolvedConfig {
  if (typeof options !== 'object' || options === null) throw new TypeError('open-data-gate: options must be an object')
  rejectUnknownKeys('', options, GATE_OPTION_NAMES)
  const log = resolveLogger(options.logger)
  const throttle = resolveThrottle(options.throttle)
  const proxies = resolveProxies(options)
  const storeTimeoutMs = options.storeTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS
  positiveInteger('storeTimeoutMs', storeTimeoutMs)
  // A lease answered within the store's timeout is never expired when it comes (src/pipeline/leases.ts).
  if (throttle.local !== null && throttle.local.ttlMs < storeTimeoutMs) throw new TypeError(`open-data-gate: throttle.local.ttlMs (${throttle.local.ttlMs}) must be at least storeTimeoutMs (${storeTimeoutMs})`)
  const bodyTimeoutMs = options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS
  positiveInteger('bodyTimeoutMs', bodyTimeoutMs)
  const { store, rateStore } = resolveStores(options, log)
  const applicationCacheMs = options.applicationCacheMs ?? DEFAULT_APPLICATION_CACHE_MS
  if (!Number.isSafeInteger(applicationCacheMs) || applicationCacheMs < 0) {
    throw new TypeError(`open-data-gate: applicationCacheMs must be 0 or a positive integer, got ${JSON.stringify(applicationCacheMs)}`)
  }
  const basic = resolveBasic(options.basic)
  const oauth = resolveOAuth(options.oauth)
  // A feature that only works with another is off by default while that one is off (config/features.ts).
  const apiKeyEndpoints = resolveApiKeyEndpoints(dependentOption('apiKeyEndpoints', options.apiKeyEndpoints, options.basic !== false, 'basic'))
  const connectedApps = resolveConnectedApps(dependentOption('connectedApps', options.connectedApps, options.oauth !== false, 'oauth'))
  const currentUser = resolveCurrentUser(dependentOption('currentUser', options.currentUser, options.basic !== false || options.oauth !== false, 'basic or oauth'))
  const realm = options.realm ?? DEFAULT_REALM
  if (typeof realm !== 'string' || !/^[\x20-\x7e]*$/.test(realm) || realm.includes('"')) throw new TypeError('open-data-gate: realm must be printable ASCII without quotes')
  return {
    store,
    rateStore,
    applicationCacheMs,
    application: throttle.application,
    anonymous: throttle.anonymous,
    legacyHeaders: throttle.legacyHeaders,
    onStoreError: throttle.onStoreError,
    oauthTokenBudget: throttle.oauthTokenBudget,
    plans: throttle.plans,
    defaultPlan: throttle.defaultPlan,
    local: throttle.local,
    trust: proxies.trust,
    trustsAnyProxy: proxies.trustsAnyProxy,
    trustsEveryProxy: proxies.trustsEveryProxy,
    proxyHeaders: proxies.proxyHeaders,
    trustedOrigins: resolveTrustedOrigins(options.trustedOrigins, oauth.issuer),
    legacyAppTokenParam: booleanOption('legacyAppTokenParam', options.legacyAppTokenParam, true),
    storeTimeoutMs,
    bodyTimeoutMs,
    basic,
    oauth,
    currentUser,
    apiKeyEndpoints,
    deletedKeyRetentionMs: resolveDeletedKeyRetention(options.apiKeyEndpoints),
    connectedApps,
    applications: resolveApplications(options.applications, options.basic !== false || options.oauth !== false),
    selfServiceBudget: budget(resolvePolicy('selfServiceBudget', options.selfServiceBudget, DEFAULT_SELF_SERVICE_BUDGET, 'app')),
    realm,
    usage: resolveUsage(options.usage),
    nearLimit: resolveNearLimit(options.nearLimit),
    meterProvider: resolveMetrics(options.metrics),
    log,
    requestIds: resolveRequestIds(options.requestId, proxies.trust, (name, value) => rejectUnknownKeys(name, value, REQUEST_ID_OPTION_NAMES)),
  }
}

type ResolvedThrottle = Pick<ResolvedConfig, 'application' | 'anonymous' | 'legacyHeaders' | 'onStoreError' | 'oauthTokenBudget' | 'plans' | 'defaultPlan' | 'local'>

/** `throttle`: the application and anonymous budgets, and what the throttle does around them. */
function resolveThrottle(input: GateOptions['throttle']): ResolvedThrottle {
  const throttle = input === false ? { application: false as const, anonymous: false as const } : (input ?? {})
  if (input !== false) optionsObject('throttle', throttle, THROTTLE_OPTION_NAMES)
  // A list is a default plan of several limits (src/config/plans.ts); one limit stays the single-limit policy it always was.
  const defaultPlan = Array.isArray(throttle.application) ? resolvePlan('throttle.application', DEFAULT_PLAN, throttle.application) : null
  const application = defaultPlan === null ? resolvePolicy('throttle.application', throttle.application as RatePolicyOptions | false | undefined, DEFAULT_APPLICATION_LIMIT, 'app') : null
  const plans = resolvePlans(throttle.plans)
  const anonymousInput = throttle.anonymous
  const anonymousBase = resolvePolicy('throttle.anonymous', anonymousInput, DEFAULT_ANONYMOUS_LIMIT, 'anon')
  let anonymous: ResolvedConfig['anonymous'] = null
  if (anonymousBase !== null) {
    const options: Partial<AnonymousPolicyOptions> = anonymousInput === undefined || anonymousInput === false ? {} : anonymousInput
    rejectUnknownKeys('throttle.anonymous', options, optionNames<AnonymousPolicyOptions>({ limit: true, windowMs: true, scope: true, ipv6Subnet: true }))
    const scope = options.scope ?? DEFAULT_ANONYMOUS_SCOPE
    if (scope !== 'shared' && scope !== 'ip') throw new TypeError(`open-data-gate: throttle.anonymous.scope must be 'shared' or 'ip', got ${JSON.stringify(scope)}`)
    const ipv6Subnet = options.ipv6Subnet ?? DEFAULT_ANONYMOUS_IPV6_SUBNET
    if (!Number.isInteger(ipv6Subnet) || ipv6Subnet < 1 || ipv6Subnet > 128) {
      throw new TypeError(`open-data-gate: throttle.anonymous.ipv6Subnet must be an integer from 1 to 128, got ${String(ipv6Subnet)}`)
    }
    anonymous = { ...anonymousBase, scope, ipv6Subnet }
  }
  const onStoreError = throttle.onStoreError ?? DEFAULT_ON_STORE_ERROR
  if (!['fail-open', 'fail-closed', 'memory'].includes(onStoreError)) {
    throw new TypeError(`open-data-gate: throttle.onStoreError must be 'fail-open', 'fail-closed' or 'memory', got ${JSON.stringify(onStoreError)}`)
  }
  const oauthTokenBudget = throttle.oauthTokenBudget ?? DEFAULT_OAUTH_TOKEN_BUDGET
  if (oauthTokenBudget !== 'application' && oauthTokenBudget !== 'anonymous') {
    throw new TypeError(`open-data-gate: throttle.oauthTokenBudget must be 'application' or 'anonymous', got ${JSON.stringify(oauthTokenBudget)}`)
  }
  const local = resolveLocalCounting(throttle.local, plans, defaultPlan, application !== null || defaultPlan !== null)
  return { application, anonymous, legacyHeaders: booleanOption('throttle.legacyHeaders', throttle.legacyHeaders, false), onStoreError, oauthTokenBudget, plans, defaultPlan, local }
}

/** `trustProxy` and `proxyHeaders`: which peers may speak for the client, and in which headers. */
function resolveProxies(options: GateOptions): Pick<ResolvedConfig, 'trust' | 'trustsAnyProxy' | 'trustsEveryProxy' | 'proxyHeaders'> {
  const proxyHeaders = options.proxyHeaders ?? DEFAULT_PROXY_HEADERS
  if (proxyHeaders !== 'x-forwarded' && proxyHeaders !== 'forwarded') {
    throw new TypeError(`open-data-gate: proxyHeaders must be 'x-forwarded' or 'forwarded', got ${JSON.stringify(proxyHeaders)}`)
  }
  const trustProxy = options.trustProxy ?? false
  return { trust: compileTrustProxy(trustProxy), trustsAnyProxy: trustProxy !== false, trustsEveryProxy: trustProxy === true, proxyHeaders }
}

/**
 * `store` and `rateStore`. With no store the gate keeps everything in a new
 * {@link MemoryStore} of its own (the one module here that picks an implementation).
 */
function resolveStores(options: GateOptions, log: GateLog): Pick<ResolvedConfig, 'store' | 'rateStore'> {
  // `null` is not "left out": a store that failed to load must not become a store of this process.
  if (options.store === null) throw new TypeError('open-data-gate: store must be a GateStore, got null; leave store out for an in-memory store')
  if (options.rateStore === null) throw new TypeError('open-data-gate: rateStore must be a store of rate counters, got null; leave rateStore out to count in store')
  const store = options.store ?? new MemoryStore()
  if (typeof store !== 'object' || store === null) throw new TypeError('open-data-gate: store must implement the GateStore interface')
  // Which slices the store must have depends on the features: the Gate checks it (store/slices.ts).
  const rateStore = (options.rateStore ?? store) as RateStore
  if (rateStore !== store && (typeof rateStore !== 'object' || rateStore === null || typeof rateStore.consumeRate !== 'function' || typeof rateStore.resetRate !== 'function')) {
    throw new TypeError('open-data-gate: rateStore must have consumeRate and resetRate (a GateStore, or a store of rate counters only)')
  }
  if (process.env.NODE_ENV === 'production' && (store instanceof MemoryStore || rateStore instanceof MemoryStore)) warnOfMemoryInProduction(store instanceof MemoryStore, log)
  // A store of fewer slices than GateStore: the Gate checks that it has those its features need.
  return { store: store as GateStore, rateStore }
}

let warnedOfMemoryInProduction = false

/**
 * Once per process: a memory store in production is usually a shared store forgotten in
 * the configuration, and then every process counts and keeps its records on its own.
 */
function warnOfMemoryInProduction(records: boolean, log: GateLog): void {
  if (warnedOfMemoryInProduction) return
  warnedOfMemoryInProduction = true
  log.warn(
    `open-data-gate: NODE_ENV is production and the gate keeps its ${records ? 'records and rate counters' : 'rate counters'} in memory (MemoryStore): ` +
      `each process has its own ${records ? 'applications, users, keys, tokens and limits, lost when it stops' : 'limits'}. ` +
      'Give createGate a shared store (RedisStore, PostgresStore) unless one process on purpose is all there is.',
    { code: 'ODG_MEMORY_STORE_IN_PRODUCTION' },
  )
}

/** `basic`: HTTP Basic, the password cache, the login budgets and the password hashing. */
function resolveBasic(input: BasicOptions | false | undefined): ResolvedConfig['basic'] {
  // Off, the other fields keep their defaults: password sign-in on the OAuth pages uses them.
  const basic = optionsObject('basic', input === false ? {} : (input ?? {}), BASIC_OPTION_NAMES)
  const cacheTtlMs = basic.cacheTtlMs ?? DEFAULT_PASSWORD_CACHE_TTL_MS
  if (!Number.isSafeInteger(cacheTtlMs) || cacheTtlMs < 0) throw new TypeError(`open-data-gate: basic.cacheTtlMs must be 0 or a positive integer, got ${JSON.stringify(cacheTtlMs)}`)
  const failures = resolvePolicy('basic.failures', basic.failures, DEFAULT_LOGIN_FAILURES, 'app')
  const addressFailures = resolvePolicy('basic.addressFailures', basic.addressFailures, DEFAULT_LOGIN_ADDRESS_FAILURES, 'app')
  if (basic.hashing !== undefined) optionsObject('basic.hashing', basic.hashing, optionNames<HashQueueLimits>({ concurrency: true, queue: true, queuePerAddress: true }))
  const hashing = { ...DEFAULT_HASHING, ...basic.hashing }
  positiveInteger('basic.hashing.concurrency', hashing.concurrency)
  positiveInteger('basic.hashing.queue', hashing.queue)
  positiveInteger('basic.hashing.queuePerAddress', hashing.queuePerAddress)
  if (basic.scrypt !== undefined) optionsObject('basic.scrypt', basic.scrypt, optionNames<ScryptParams>({ logN: true, blockSize: true, parallelization: true }))
  const scrypt = { ...DEFAULT_SCRYPT, ...basic.scrypt }
  if (!Number.isInteger(scrypt.logN) || scrypt.logN < 10 || scrypt.logN > 22) throw new TypeError(`open-data-gate: basic.scrypt.logN must be an integer from 10 to 22, got ${JSON.stringify(scrypt.logN)}`)
  positiveInteger('basic.scrypt.blockSize', scrypt.blockSize)
  positiveInteger('basic.scrypt.parallelization', scrypt.parallelization)
  return {
    enabled: input !== false,
    requireAppToken: booleanOption('basic.requireAppToken', basic.requireAppToken, true),
    challenge: booleanOption('basic.challenge', basic.challenge, false),
    cacheTtlMs,
    failures: budget(failures),
    addressFailures: budget(addressFailures),
    hashing,
    scrypt,
  }
}

/** `oauth`: the authorization server, its tokens, its sign-in and its budgets. */
function resolveOAuth(input: OAuthOptions | false | undefined): ResolvedConfig['oauth'] {
  const oauth = optionsObject('oauth', input === false ? {} : (input ?? {}), OAUTH_OPTION_NAMES)
  const accessTokenTtlMs = oauth.accessTokenTtlMs ?? DEFAULT_ACCESS_TOKEN_TTL_MS
  positiveInteger('oauth.accessTokenTtlMs', accessTokenTtlMs)
  const codeTtlMs = oauth.codeTtlMs ?? DEFAULT_CODE_TTL_MS
  positiveInteger('oauth.codeTtlMs', codeTtlMs)
  if (codeTtlMs > MAX_CODE_TTL_MS) throw new TypeError(`open-data-gate: oauth.codeTtlMs must be at most 600000 (10 minutes, RFC 6749 §4.1.2), got ${codeTtlMs}`)
  const sessionTtlMs = oauth.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS
  positiveInteger('oauth.sessionTtlMs', sessionTtlMs)
  const maxSessionsPerUser = oauth.maxSessionsPerUser ?? DEFAULT_MAX_SESSIONS_PER_USER
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
  const clientFailures = resolvePolicy('oauth.clientFailures', oauth.clientFailures, DEFAULT_CLIENT_FAILURES, 'app')
  const throttle = resolvePolicy('oauth.throttle', oauth.throttle, DEFAULT_OAUTH_THROTTLE, 'anon')
  const oauthPaths = optionsObject('oauth.paths', oauth.paths ?? {}, optionNames<OAuthPaths>({ authorize: true, token: true, revoke: true, metadata: true }))
  const endpointPath = (name: keyof OAuthPaths): string | null => {
    const value = oauthPaths[name]
    if (value === false || input === false) return null
    if (value === undefined) return DEFAULT_OAUTH_PATHS[name]
    return paths(`oauth.paths.${name}`, [value], [])[0] as string
  }
  return {
    enabled: input !== false,
    acceptBearer: booleanOption('oauth.acceptBearer', oauth.acceptBearer, true),
    accessTokenTtlMs,
    codeTtlMs,
    requirePkce: booleanOption('oauth.requirePkce', oauth.requirePkce, false),
    issuer: oauth.issuer?.replace(/\/$/, '') ?? null,
    paths: {
      authorize: endpointPath('authorize'),
      token: endpointPath('token'),
      revoke: endpointPath('revoke'),
      metadata: endpointPath('metadata'),
    },
    sessionTtlMs,
    maxSessionsPerUser,
    allowLoopbackCallbacks: booleanOption('oauth.allowLoopbackCallbacks', oauth.allowLoopbackCallbacks, false),
    authenticateUser: oauth.authenticateUser ?? null,
    loginUrl: oauth.loginUrl ?? null,
    pages,
    clientFailures: budget(clientFailures),
    throttle: budget(throttle),
    rememberConsent: booleanOption('oauth.rememberConsent', oauth.rememberConsent, false),
  }
}

/** `currentUser`: where the current-user record is served, in JSON and in XML. */
function resolveCurrentUser(input: CurrentUserOptions | false | undefined): ResolvedConfig['currentUser'] {
  const currentUser = input === false ? { json: [], xml: [] } : optionsObject('currentUser', input ?? {}, optionNames<CurrentUserOptions>({ json: true, xml: true }))
  return {
    json: paths('currentUser.json', currentUser.json, [...DEFAULT_CURRENT_USER_PATHS.json]),
    xml: paths('currentUser.xml', currentUser.xml, [...DEFAULT_CURRENT_USER_PATHS.xml]),
  }
}

/** `apiKeyEndpoints`: where the API key endpoints live and how many keys a user may hold. */
function resolveApiKeyEndpoints(input: ApiKeyEndpointOptions | false | undefined): ResolvedConfig['apiKeyEndpoints'] {
  if (input === false) return null
  if (input !== undefined && (typeof input !== 'object' || input === null)) throw new TypeError('open-data-gate: apiKeyEndpoints must be { path, maxActiveKeys, maxKeys, deletedKeyRetentionMs } or false')
  if (input !== undefined) {
    rejectUnknownKeys('apiKeyEndpoints', input, optionNames<ApiKeyEndpointOptions>({ path: true, maxActiveKeys: true, maxKeys: true, deletedKeyRetentionMs: true }))
  }
  const path = input?.path === undefined ? DEFAULT_API_KEY_PATH : singlePath('apiKeyEndpoints.path', input.path)
  const maxActiveKeys = input?.maxActiveKeys ?? DEFAULT_MAX_ACTIVE_KEYS
  positiveInteger('apiKeyEndpoints.maxActiveKeys', maxActiveKeys)
  const maxKeys = input?.maxKeys ?? Math.max(DEFAULT_MAX_KEYS, maxActiveKeys)
  positiveInteger('apiKeyEndpoints.maxKeys', maxKeys)
  if (maxKeys < maxActiveKeys) throw new TypeError(`open-data-gate: apiKeyEndpoints.maxKeys (${maxKeys}) must be at least maxActiveKeys (${maxActiveKeys})`)
  return { path, maxActiveKeys, maxKeys }
}

/** `apiKeyEndpoints.deletedKeyRetentionMs`: it applies with the endpoints off too (keys revoked by `gate.apiKeys`). */
function resolveDeletedKeyRetention(input: ApiKeyEndpointOptions | false | undefined): number {
  const retention = (input === false ? undefined : input?.deletedKeyRetentionMs) ?? DEFAULT_DELETED_KEY_RETENTION_MS
  positiveInteger('apiKeyEndpoints.deletedKeyRetentionMs', retention)
  return retention
}

/** `connectedApps`: where the JSON endpoints and the page live. */
function resolveConnectedApps(input: ConnectedAppsOptions | false | undefined): ResolvedConfig['connectedApps'] {
  if (input === false) return { path: null, page: null }
  if (input !== undefined && (typeof input !== 'object' || input === null)) throw new TypeError('open-data-gate: connectedApps must be { path, page } or false')
  if (input !== undefined) rejectUnknownKeys('connectedApps', input, optionNames<ConnectedAppsOptions>({ path: true, page: true }))
  const one = (name: 'path' | 'page'): string | null => {
    const value = input?.[name]
    if (value === false) return null
    return value === undefined ? DEFAULT_CONNECTED_APPS_PATHS[name] : singlePath(`connectedApps.${name}`, value)
  }
  return { path: one('path'), page: one('page') }
}

/**
 * `applications`: the self-service endpoints (off by default when no user can sign in), the
 * cap and registration budget per user, and the grace of a rotated secret (which applies
 * to `gate.applications.rotateSecret` with the endpoints off too).
 */
function resolveApplications(input: ApplicationOptions | false | undefined, signInPossible: boolean): ResolvedConfig['applications'] {
  if (input !== undefined && input !== false && (typeof input !== 'object' || input === null)) {
    throw new TypeError('open-data-gate: applications must be { path, maxPerUser, registrations, secretGraceMs } or false')
  }
  const given = input === false ? undefined : input
  if (given !== undefined) rejectUnknownKeys('applications', given, optionNames<ApplicationOptions>({ path: true, maxPerUser: true, registrations: true, secretGraceMs: true }))
  // The grace alone is no request for the endpoints: it serves gate.applications.rotateSecret too.
  const asksForEndpoints = given !== undefined && (given.path !== undefined || given.maxPerUser !== undefined || given.registrations !== undefined)
  const endpoints = dependentOption('applications', input === false || given?.path === false ? false : asksForEndpoints ? given : undefined, signInPossible, 'basic or oauth')
  const path = endpoints === false ? null : given?.path === undefined ? DEFAULT_APPLICATIONS_PATH : singlePath('applications.path', given.path)
  const maxPerUser = given?.maxPerUser ?? DEFAULT_MAX_APPLICATIONS_PER_USER
  positiveInteger('applications.maxPerUser', maxPerUser)
  const secretGraceMs = secretGrace('applications.secretGraceMs', given?.secretGraceMs ?? DEFAULT_SECRET_GRACE_MS, MAX_SECRET_GRACE_MS)
  return { path, maxPerUser, registrations: budget(resolvePolicy('applications.registrations', given?.registrations, DEFAULT_REGISTRATIONS, 'app')), secretGraceMs }
}
