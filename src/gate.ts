/**
 * The gate: `createGate(options)` and the one function every adapter calls,
 * {@link Gate.handle}, which takes a plain request and says either "continue, with this
 * context and these headers" or "answer with this response".
 */
import { TypedEmitter } from 'tiny-typed-emitter'
import { AccessTokens } from './management/access-tokens.js'
import { ApplicationCache } from './pipeline/application-cache.js'
import { ApiKeyEndpoints } from './endpoints/api-keys.js'
import { ApiKeys } from './management/api-keys.js'
import { extractAppToken, isPlausibleAppToken } from './pipeline/app-token.js'
import { Applications, toApplication, type Application } from './management/applications.js'
import { Authenticator, toGateUser, type Authentication, type AuthMethod, type GateUser, type TokenLookup } from './pipeline/authenticate.js'
import { credentialsSentIn, NOTHING_SENT, readCredentials, type Credentials } from './http/authorization-header.js'
import { andThen, isPromiseLike } from './util/awaitable.js'
import { currentUserJson, currentUserXml } from './endpoints/current-user.js'
import { GateError, PlatformError } from './errors.js'
import type { Emit, GateEvents, StoreErrorEvent } from './events.js'
import { compileGuard, type Guard, type GuardRule } from './pipeline/guard.js'
import { errorResponse, pathOf, platformErrorResponse, type GateRequest, type GateResponse } from './http/request.js'
import { OAuthServer, type OAuthEndpoint } from './oauth/server.js'
import { resolveOptions, type GateOptions, type ResolvedConfig } from './config/options.js'
import { claimsHttps, hasProxyHeaders, isPrivateAddress, resolveClient, type ClientInfo } from './http/proxy.js'
import { sha256 } from './secrets/tokens.js'
import { Grants } from './management/grants.js'
import { LoginSessions } from './endpoints/sign-in-session.js'
import { SelfService, type SelfServiceRoute } from './endpoints/self-service.js'
import { guardStore } from './store/guarded-store.js'
import { StoreHealth, type StoreRole } from './store/store-health.js'
import type { AccessTokenRecord, ApplicationRecord, Awaitable, GateStore, StoreEventSink } from './store/store.js'
import { Throttle, type ThrottleInfo, type ThrottlePass } from './pipeline/throttle.js'
import { Users } from './management/users.js'
import { GateUsage } from './usage/usage.js'

/** What the gate found out about a request: `req.gate` in Express and node:http, `ctx.state.gate` in Koa. */
export interface GateContext {
  /**
   * The application the request counted against: the one its app token names, or, for an
   * OAuth request without one, the application its access token was issued to (unless
   * `throttle.oauthTokenBudget` is `'anonymous'`); `null` for an anonymous request.
   */
  readonly application: Application | null
  /** The throttle's verdict, or `null` when no policy applied. */
  readonly throttle: ThrottleInfo | null
  /** Whether the client's connection is https (from the socket, or a trusted proxy). */
  readonly secure: boolean
  /** The client's address (from the socket, or a trusted proxy). */
  readonly clientIp: string
  /** The authenticated user, or `null`. */
  readonly user: GateUser | null
  /** How the user authenticated: `password`, `api-key`, `oauth`, or `none`. */
  readonly auth: AuthMethod
  /** The API key used, when `auth` is `api-key`. */
  readonly apiKeyId: string | null
  /** The access token's application and expiry (epoch ms), when `auth` is `oauth`. */
  readonly accessToken: { readonly appToken: string; readonly expiresAt: number } | null
  /** The request carried an access token over plain http, and the gate revoked it. */
  readonly revokedInsecureToken: boolean
}

/** What {@link Gate.handle} decided. */
export type GateOutcome =
  /** Let the request through: expose `context`, set `headers`, call the next handler. */
  | { readonly type: 'next'; readonly context: GateContext; readonly headers: Readonly<Record<string, string>> }
  /** The gate answers: write `response` and stop. */
  | { readonly type: 'respond'; readonly response: GateResponse }

const INVALID_APP_TOKEN = 'Invalid app_token specified'

/** What a path the gate answers itself is. */
type CurrentUserRoute = { readonly kind: 'current-user'; readonly format: 'json' | 'xml' }
/** The API key and connected-apps endpoints: answered after the access checks, like the current user. */
type OwnAccessRoute = { readonly kind: 'self-service'; readonly target: SelfServiceRoute }
/** A path answered after the gate's access checks. */
type CheckedRoute = CurrentUserRoute | OwnAccessRoute
type Route = { readonly kind: 'oauth'; readonly endpoint: OAuthEndpoint } | CheckedRoute

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({})
const respond = (response: GateResponse): GateOutcome => ({ type: 'respond', response })

const CURRENT_USER_GUARD = compileGuard({ auth: 'required' })

/**
 * The access layer. Create it once, mount it with an adapter, manage applications
 * through {@link Gate.applications}, and listen to its events.
 */
export class Gate extends TypedEmitter<GateEvents> {
  /** Register and manage applications. */
  readonly applications: Applications
  /** Create and manage accounts, and check a sign-in from your own form (`users.signIn`). */
  readonly users: Users
  /** Create, rotate and revoke users' API keys. */
  readonly apiKeys: ApiKeys
  /** Issue and revoke OAuth access tokens. */
  readonly tokens: AccessTokens
  /** Connected apps: the applications a user authorized, and revoking them. */
  readonly grants: Grants
  /** The store as the gate calls it: with a timeout, failing with `StoreError`. */
  readonly store: GateStore
  /** Usage per application: `query`, `top`, `flush` (docs/guides/usage.md). */
  readonly usage: GateUsage
  readonly #config: ResolvedConfig
  readonly #throttle: Throttle
  readonly #auth: Authenticator
  readonly #oauth: OAuthServer
  readonly #selfService: SelfService
  readonly #routes = new Map<string, Route>()
  readonly #applicationCache: ApplicationCache
  readonly #applicationViews = new WeakMap<ApplicationRecord, Application>()
  #warnedAboutProxyHeaders = false

  constructor(options: GateOptions = {}) {
    super()
    const config = resolveOptions(options)
    this.#config = config
    const emit: Emit = (event, ...args) => this.#emitSafely(event, ...args)
    const separateRates = config.rateStore !== config.store
    const outcome = storeFailureOutcome(config.onStoreError)
    const recordsRole: StoreRole = separateRates ? 'records' : 'records+rates'
    this.store = guardStore(config.store, config.storeTimeoutMs, new StoreHealth(recordsRole, emit, outcome))
    const rateStore = separateRates ? guardStore(config.rateStore, config.storeTimeoutMs, new StoreHealth('rates', emit, outcome)) : this.store
    this.#applicationCache = new ApplicationCache(this.store, config.applicationCacheMs, STALE_IF_ERROR_MS)
    const sink: StoreEventSink = {
      rateKeyEvicted: (key) => emit('rateKeyEvicted', { key }),
      applicationChanged: (appToken) => this.#applicationCache.forget(appToken),
    }
    config.store.attach?.(sink)
    if (separateRates) config.rateStore.attach?.(sink)
    this.applications = new Applications(this.store, (appToken) => this.#applicationCache.forget(appToken), config.oauth.allowLoopbackCallbacks)
    this.usage = new GateUsage(config.usage, config.store, config.storeTimeoutMs, emit)
    this.#throttle = new Throttle(config, rateStore, emit, this.usage)
    this.#auth = new Authenticator(config, this.store, this.#throttle, emit)
    this.users = new Users(this.store, config.basic.scrypt, (username, password, client) => this.#auth.signIn(username, password, client))
    this.apiKeys = new ApiKeys(this.store, config.deletedKeyRetentionMs)
    this.tokens = new AccessTokens(this.store, config.oauth.accessTokenTtlMs)
    this.grants = new Grants(this.store)
    const sessions = new LoginSessions(this.store, config.oauth.sessionTtlMs, config.oauth.maxSessionsPerUser)
    this.#oauth = new OAuthServer(config, this.store, this.#throttle, this.#auth, this.tokens, this.grants, sessions, emit, (error, request) => this.#report(error, request))
    const keyLimits = { maxActiveKeys: config.apiKeyEndpoints?.maxActiveKeys ?? 0, maxKeys: config.apiKeyEndpoints?.maxKeys ?? 0, deletedKeyRetentionMs: config.deletedKeyRetentionMs }
    this.#selfService = new SelfService(config, this.store, sessions, new ApiKeyEndpoints(this.store, keyLimits, config.bodyTimeoutMs), this.grants)
    const routes: Array<[string, Route]> = [
      ...config.currentUser.json.map((path): [string, Route] => [path, { kind: 'current-user', format: 'json' }]),
      ...config.currentUser.xml.map((path): [string, Route] => [path, { kind: 'current-user', format: 'xml' }]),
      ...Object.entries(config.oauth.paths)
        .filter((entry): entry is [OAuthEndpoint, string] => entry[1] !== null)
        .map(([endpoint, path]): [string, Route] => [path, { kind: 'oauth', endpoint }]),
      ...this.#selfService.collections().map(([path, target]): [string, Route] => [path, { kind: 'self-service', target }]),
      ...(config.connectedApps.page === null ? [] : [[config.connectedApps.page, { kind: 'oauth', endpoint: 'grants' }] as [string, Route]]),
    ]
    for (const [path, route] of routes) {
      if (this.#routes.has(path)) throw new TypeError(`open-data-gate: the path ${path} is configured for two endpoints`)
      this.#routes.set(path, route)
    }
    if (config.oauth.allowLoopbackCallbacks) {
      process.emitWarning(
        'open-data-gate: oauth.allowLoopbackCallbacks is on, so applications may register http://localhost, http://127.0.0.1 and http://[::1] Callback Prefixes. For local development only: turn it off in production.',
        { code: 'ODG_LOOPBACK_CALLBACKS' },
      )
    }
  }

  /**
   * Decides what happens to a request. Never throws and never rejects: every failure
   * becomes a response. It answers synchronously when the store does (the in-memory
   * store), so a request pays for no promise it does not need: `await` the result.
   * @see adapters/node.ts for how an adapter uses it
   */
  handle(request: GateRequest): Awaitable<GateOutcome> {
    try {
      const outcome = this.#decide(request)
      return isPromiseLike(outcome) ? Promise.resolve(outcome).catch((error: unknown) => this.#refuse(error, request)) : outcome
    } catch (error) {
      return this.#refuse(error, request)
    }
  }

  #refuse(error: unknown, request: GateRequest): GateOutcome {
    return { type: 'respond', response: this.errorResponse(error, request) }
  }

  #decide(request: GateRequest): Awaitable<GateOutcome> {
    const client = this.#client(request)
    // A private peer vouching for https while no proxy is trusted is a proxy the operator
    // forgot to configure: the gate cannot know how the credentials travelled, so it neither
    // revokes them nor tells a client who used https that it used http.
    // (Cheapest tests first: most requests carry no proxy header and stop at the second.)
    if (!client.secure && hasProxyHeaders(request) && this.#claimsHttpsUntrusted(request, client) && (request.headers.authorization !== undefined || this.#isSecureOnlyRoute(request))) {
      this.#warnOnUntrustedProxy(client, true)
      const refusal = new PlatformError(
        'proxy_not_trusted',
        'The request came through a proxy that is not trusted: set the gate option trustProxy to the proxy\'s address so the gate can see that the client used https',
      )
      return this.#refusedBeforeRoute(refusal, request)
    }
    // A credential sent in clear is revoked before anything else can refuse the request (an
    // unknown or deleted app token, two app tokens, a malformed header, two Authorization
    // headers, the throttle, an OAuth endpoint): spec, OAuth 2.0 step 7. Whatever form it came
    // in: any Authorization header, malformed or not, the query, a parsed body. Access tokens
    // and API keys with their right secret; never a password.
    if (!client.secure) {
      const sent = credentialsSentIn(request, request.parsedBody?.())
      if (sent !== NOTHING_SENT) {
        return this.#auth.revokeSentInClear(sent, client).then(
          (revoked) => this.#route(request, client, revoked > 0),
          (error: unknown) => this.#refusedBeforeRoute(error, request),
        )
      }
    }
    return this.#route(request, client, false)
  }

  /**
   * A request refused before it reached its route (a proxy left untrusted, the store failing
   * while revoking a token sent in clear) is answered in the shape of the endpoint it was
   * for: a page at authorize and the connected-apps page, RFC 6749 JSON at the token
   * endpoint; the data API's error everywhere else.
   */
  #refusedBeforeRoute(error: unknown, request: GateRequest): GateOutcome {
    const route = this.#routes.size === 0 ? undefined : this.#routes.get(pathOf(request.url))
    if (route?.kind !== 'oauth') throw error
    return respond(this.#oauth.failure(route.endpoint, error, request))
  }

  /** The OAuth endpoints and pages and the self-service endpoints: served over https only. */
  #isSecureOnlyRoute(request: GateRequest): boolean {
    const path = pathOf(request.url)
    const kind = this.#routes.get(path)?.kind ?? this.#ownAccessItem(path)?.kind
    return kind === 'oauth' || kind === 'self-service'
  }

  /** Whether a loopback or private peer says the client used https while no proxy is trusted. */
  #claimsHttpsUntrusted(request: GateRequest, client: ClientInfo): boolean {
    return !this.#config.trustsAnyProxy && isPrivateAddress(client.ip) && claimsHttps(request)
  }

  #route(request: GateRequest, client: ClientInfo, revokedInsecureToken: boolean): Awaitable<GateOutcome> {
    const path = pathOf(request.url)
    const route: Route | undefined = this.#routes.get(path) ?? this.#ownAccessItem(path)
    // The OAuth endpoints authenticate clients and users themselves, and need no app token.
    if (route?.kind === 'oauth') return andThen(this.#oauth.handle(route.endpoint, request, client), respond)
    // Spelled out rather than andThen(...): no closure is made when the store answers at once.
    const application = this.#application(request, client)
    if (isPromiseLike(application)) return Promise.resolve(application).then((found) => this.#counted(request, client, found, route, revokedInsecureToken))
    return this.#counted(request, client, application, route, revokedInsecureToken)
  }

  /** {@link #access}, its outcome or refusal counted in the usage of the application (src/usage). */
  #counted(request: GateRequest, client: ClientInfo, application: ApplicationRecord | null, route: CheckedRoute | undefined, revokedInsecureToken: boolean): Awaitable<GateOutcome> {
    try {
      return this.usage.decided(application, this.#access(request, client, application, route, revokedInsecureToken))
    } catch (error) {
      throw this.usage.refused(application, error)
    }
  }

  /** `/api/api_keys/<keyId>` and `/api/oauth/grants/<appToken>`, or `undefined`. */
  #ownAccessItem(path: string): OwnAccessRoute | undefined {
    const target = this.#selfService.match(path)
    return target === undefined ? undefined : { kind: 'self-service', target }
  }

  /** The application the request names, or `null`; a token nobody registered is a 403. */
  #application(request: GateRequest, client: ClientInfo): Awaitable<ApplicationRecord | null> {
    const token = extractAppToken(request, this.#config.legacyAppTokenParam)
    if (token === undefined) return null
    if (!isPlausibleAppToken(token)) return this.#invalidAppToken(token, client)
    return andThen(this.#applicationCache.get(token), (record) => record ?? this.#invalidAppToken(token, client))
  }

  #invalidAppToken(token: string, client: ClientInfo): never {
    this.usage.unknownAppToken()
    this.#emitSafely('invalidAppToken', { tokenPrefix: token.slice(0, 6), ip: client.ip })
    throw new PlatformError('permission_denied', INVALID_APP_TOKEN)
  }

  /** Throttle, then credentials; most requests carry none and stay synchronous. */
  #access(
    request: GateRequest,
    client: ClientInfo,
    application: ApplicationRecord | null,
    route: CheckedRoute | undefined,
    revokedInsecureToken: boolean,
  ): Awaitable<GateOutcome> {
    const credentials = readCredentials(request, this.#config.oauth.acceptBearer)
    if (credentials !== undefined) return this.#authenticated(request, client, application, credentials, route)
    const pass = this.#throttle.check(application, client)
    if (isPromiseLike(pass)) return Promise.resolve(pass).then((settled) => this.#outcome(request, client, application, settled, null, revokedInsecureToken, route))
    return this.#outcome(request, client, application, pass, null, revokedInsecureToken, route)
  }

  /**
   * Credentials are checked for transport and form before the throttle (cheap, and a
   * token sent in clear must be revoked even if the request is then refused), and
   * verified after it, so a throttled client cannot make the server run scrypt.
   */
  #authenticated(
    request: GateRequest,
    client: ClientInfo,
    application: ApplicationRecord | null,
    credentials: Credentials,
    route: CheckedRoute | undefined,
  ): Awaitable<GateOutcome> {
    if (!client.secure) {
      // An API key whose secret travelled in clear was revoked by #decide (a password cannot be: the user changes it).
      if (credentials.kind === 'basic') throw new PlatformError('https_required', 'Authenticated requests must use https: credentials sent over an insecure connection are denied')
      return this.#unauthenticated(request, client, application, route, true)
    }
    if (credentials.kind === 'basic' && application === null && this.#config.basic.requireAppToken) {
      throw new PlatformError('app_token_required', 'Requests authenticated with HTTP Basic must include an application token in the X-App-Token header')
    }
    if (credentials.kind === 'token' && (application !== null || this.#config.oauthTokenBudget === 'application')) {
      // One hash and one read serve both the budget and the verification after the throttle.
      return andThen(this.store.getAccessToken(sha256(credentials.token)), (record) =>
        andThen(this.#tokenApplication(record, application), (budget) => this.#throttleThenVerify(request, client, budget, credentials, route, { record })),
      )
    }
    return this.#throttleThenVerify(request, client, application, credentials, route, undefined)
  }

  #throttleThenVerify(
    request: GateRequest,
    client: ClientInfo,
    application: ApplicationRecord | null,
    credentials: Credentials,
    route: CheckedRoute | undefined,
    token: TokenLookup | undefined,
  ): Awaitable<GateOutcome> {
    return andThen(this.#throttle.check(application, client), (pass) =>
      andThen(this.#auth.verify(credentials, client, token), (authentication) => this.#outcome(request, client, application, pass, authentication, false, route)),
    )
  }

  /**
   * The application an OAuth-authenticated request counts against: the one its access
   * token was issued to (a store read by the token's hash, no scrypt), which an
   * `X-App-Token` must not contradict. A token that does not verify changes nothing here:
   * the request is counted as it came, and verification refuses it after the throttle.
   * @throws {PlatformError} 403 `app_token_mismatch`
   */
  #tokenApplication(record: AccessTokenRecord | undefined, sent: ApplicationRecord | null): Awaitable<ApplicationRecord | null> {
    if (record === undefined || record.revokedAt !== null || record.expiresAt <= Date.now()) return sent
    if (sent !== null) {
      if (sent.appToken === record.appToken) return sent
      throw new PlatformError('app_token_mismatch', 'The X-App-Token names another application than the one the access token was issued to')
    }
    return andThen(this.#applicationCache.get(record.appToken), (found) => found ?? null)
  }

  /** A token sent in clear (already revoked by #decide, if it was live): the request goes on unauthenticated. */
  #unauthenticated(request: GateRequest, client: ClientInfo, application: ApplicationRecord | null, route: CheckedRoute | undefined, revoked: boolean): Awaitable<GateOutcome> {
    return andThen(this.#throttle.check(application, client), (pass) => this.#outcome(request, client, application, pass, null, revoked, route))
  }

  #outcome(
    request: GateRequest,
    client: ClientInfo,
    application: ApplicationRecord | null,
    pass: ThrottlePass | null,
    authentication: Authentication | null,
    revokedInsecureToken: boolean,
    route: CheckedRoute | undefined,
  ): Awaitable<GateOutcome> {
    const token = authentication?.token ?? null
    const context: GateContext = {
      application: application === null ? null : this.#publicApplication(application),
      throttle: pass === null ? null : pass.info,
      secure: client.secure,
      clientIp: client.ip,
      user: authentication === null ? null : toGateUser(authentication.user),
      auth: authentication === null ? 'none' : authentication.method,
      apiKeyId: authentication === null ? null : authentication.apiKeyId,
      accessToken: token === null ? null : { appToken: token.appToken, expiresAt: token.expiresAt },
      revokedInsecureToken,
    }
    const headers = pass === null ? NO_HEADERS : pass.headers
    if (route === undefined) return { type: 'next', context, headers }
    if (route.kind === 'self-service') {
      return this.#selfService.handle(route.target, request, context).then((response) => ({ type: 'respond', response: { ...response, headers: { ...headers, ...response.headers } } }))
    }
    const response = this.#currentUser(route.format, request, context)
    return { type: 'respond', response: { ...response, headers: { ...headers, ...response.headers } } }
  }

  /**
   * Compiles a route guard, for the adapters' `expressGuard`, `koaGuard` and `nodeGuard`.
   * @example
   * const privateData = gate.guard({ auth: 'required' })
   * const error = privateData(req.gate) // a PlatformError to answer with, or undefined
   */
  guard(rule: GuardRule): Guard {
    return compileGuard(rule)
  }

  /** The public view of an application record, made once per record rather than per request. */
  #publicApplication(record: ApplicationRecord): Application {
    let view = this.#applicationViews.get(record)
    if (view === undefined) {
      view = Object.freeze(toApplication(record))
      this.#applicationViews.set(record, view)
    }
    return view
  }

  /** The current-user endpoints, answered once the request has passed the access checks. */
  #currentUser(format: 'json' | 'xml', request: GateRequest, context: GateContext): GateResponse {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      throw new PlatformError('method_not_allowed', `${request.method} is not allowed here; use GET`, { headers: { allow: 'GET, HEAD' } })
    }
    const refusal = CURRENT_USER_GUARD(context)
    if (refusal !== undefined) throw refusal
    const user = context.user as GateUser
    return format === 'xml' ? currentUserXml(user) : currentUserJson(user)
  }

  /**
   * The response for any error: a {@link GateError} in its own shape and status,
   * anything else a generic 500 (the cause goes to the `internalError` event, never to
   * the client).
   */
  errorResponse(error: unknown, request?: Pick<GateRequest, 'method' | 'url'>): GateResponse {
    this.#report(error, request)
    if (error instanceof GateError) return errorResponse(error)
    return platformErrorResponse(new PlatformError('internal', 'Internal server error'))
  }

  /**
   * The one place that decides which failures become `internalError` events. (A store's
   * failures are told once per outage, as `storeError`, by its guard.)
   */
  #report(error: unknown, request: Pick<GateRequest, 'method' | 'url'> | undefined): void {
    if (!(error instanceof GateError)) {
      this.#emitSafely('internalError', { error, method: request?.method ?? '', path: request === undefined ? '' : pathOf(request.url) })
    }
  }

  /**
   * Every event the gate emits goes through here: a listener that throws must not turn a
   * request into a 500, nor escape from inside a response; it becomes a process warning.
   */
  #emitSafely<E extends keyof GateEvents>(event: E, ...args: Parameters<GateEvents[E]>): void {
    try {
      this.emit(event, ...args)
    } catch (error) {
      process.emitWarning(`open-data-gate: a '${event}' listener threw: ${error instanceof Error ? error.message : String(error)}`, {
        code: 'ODG_LISTENER_THREW',
      })
    }
  }

  /** Writes the usage counts left in this process, then releases the stores' connections and timers. */
  async close(): Promise<void> {
    await this.usage.close()
    await this.#config.store.close?.()
    if (this.#config.rateStore !== this.#config.store) await this.#config.rateStore.close?.()
  }

  #client(request: GateRequest): ClientInfo {
    const client = resolveClient(request, this.#config.trust, this.#config.proxyHeaders)
    if (!this.#config.trustsAnyProxy && !this.#warnedAboutProxyHeaders && hasProxyHeaders(request) && isPrivateAddress(client.ip)) {
      this.#warnOnUntrustedProxy(client, false)
    }
    return client
  }

  /**
   * Once per gate: proxy headers arriving from a private or loopback peer while no proxy
   * is trusted usually mean a reverse proxy the operator forgot to configure, and then
   * every client shares the proxy's address and looks insecure.
   */
  #warnOnUntrustedProxy(client: ClientInfo, refused: boolean): void {
    if (this.#warnedAboutProxyHeaders) return
    this.#warnedAboutProxyHeaders = true
    process.emitWarning(
      `open-data-gate: a request from ${client.ip} carries proxy headers, but trustProxy is false, so they are ignored` +
        (refused ? ' (and a request that says the client used https is refused with 500 proxy_not_trusted rather than treated as plain http)' : '') +
        '. If the app runs behind a reverse proxy, set trustProxy to its address.',
      { code: 'ODG_UNTRUSTED_PROXY_HEADERS' },
    )
  }
}

/** How long past its freshness a cached application still answers while the store is failing. */
const STALE_IF_ERROR_MS = 300_000

/** What the gate does when a call of this operation fails, as `storeError` reports it. */
function storeFailureOutcome(mode: ResolvedConfig['onStoreError']): (operation: string) => StoreErrorEvent['outcome'] {
  const rates = mode === 'fail-open' ? 'allowed' : mode === 'memory' ? 'fallback' : 'failed'
  return (operation) => (operation === 'consumeRate' ? rates : operation === 'updateApiKey' ? 'ignored' : 'failed')
}

/**
 * Creates a gate.
 * @example
 * const gate = createGate({
 *   throttle: {
 *     application: { limit: 1000, windowMs: 3_600_000 },
 *     anonymous: { limit: 60, windowMs: 3_600_000, scope: 'shared' },
 *   },
 *   trustProxy: ['10.0.0.0/8'],
 * })
 * @throws {TypeError} naming the option, for an invalid option
 */
export function createGate(options?: GateOptions): Gate {
  return new Gate(options)
}
