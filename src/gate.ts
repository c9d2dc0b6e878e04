/**
 * The gate: `createGate(options)` and the one function every adapter calls,
 * {@link Gate.handle}, which takes a plain request and says either "continue, with this
 * context and these headers" or "answer with this response". This file wires the services
 * together; the request's way through them is the list of steps in `./pipeline/decide.ts`,
 * and its decision, made once, is observed in {@link Gate.handle}.
 */
import { TypedEmitter } from 'tiny-typed-emitter'
import { AccessTokens } from './management/access-tokens.js'
import { ApplicationCache } from './pipeline/application-cache.js'
import { ApiKeyEndpoints } from './endpoints/api-keys.js'
import { ApplicationEndpoints } from './endpoints/applications.js'
import { ApiKeys } from './management/api-keys.js'
import { Applications, registrationBudget } from './management/applications.js'
import { Authenticator } from './pipeline/authenticate.js'
import { ClearTextRevocation } from './pipeline/clear-text.js'
import type { GateOutcome } from './pipeline/context.js'
import { Pipeline } from './pipeline/decide.js'
import { RouteTable } from './pipeline/routes.js'
import { RequestState } from './pipeline/request-state.js'
import { registerCurrentUser, registerPage, registerSelfService } from './endpoints/routes.js'
import { registerOAuth } from './oauth/routes.js'
import { composedLookup } from './store/composed-lookup.js'
import { isPromiseLike } from './util/awaitable.js'
import { GateError } from './errors.js'
import type { Emit, FailedRequest, GateEvents, ReportFailure, StoreErrorEvent } from './events.js'
import { compileGuard, type Guard, type GuardRule } from './pipeline/guard.js'
import { pathOf, type GateRequest, type GateResponse } from './http/request.js'
import { errorResponse } from './http/responses.js'
import { OAuthBudget } from './oauth/budget.js'
import { OAuthServer } from './oauth/server.js'
import { ConnectedAppsPage } from './endpoints/connected-apps-page.js'
import type { GateOptions, ResolvedConfig } from './config/options.js'
import { resolveOptions } from './config/resolve.js'
import { Grants } from './management/grants.js'
import { LoginSessions } from './endpoints/sign-in-session.js'
import { SelfService } from './endpoints/self-service.js'
import { SelfServiceBudget } from './endpoints/self-service-budget.js'
import { SelfServiceAccess } from './pipeline/self-service-access.js'
import { guardStore } from './store/guarded-store.js'
import { StoreHealth, type StoreRole } from './store/store-health.js'
import type { Awaitable, GateStore, StoreEventSink } from './store/store.js'
import { Throttle } from './pipeline/throttle.js'
import { Users } from './management/users.js'
import { assertStoreServes } from './store/slices.js'
import { GateUsage } from './usage/usage.js'
import { NearLimitAlerts } from './usage/near-limit.js'
import { NearLimitReader } from './usage/near-limit-state.js'
import { DecisionTelemetry, type DecisionWatch } from './telemetry/decision-telemetry.js'
import { gateMeter } from './telemetry/metrics.js'
import { UsageTelemetry } from './telemetry/usage-telemetry.js'
import { globalMeter } from './telemetry/otel-api.js'
import { StoreTelemetry } from './telemetry/store-telemetry.js'
import { messageOf } from './log/logger.js'
import { logEvent } from './log/event-lines.js'
import type { RequestIds } from './http/request-id.js'

// The types of `req.gate` and of `gate.handle()`'s answer, where the package has always exported them.
export type { GateContext, GateOutcome } from './pipeline/context.js'

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
  /** Usage per application: `query`, `top`, `flush` (docs/guides/usage.md). */
  readonly usage: GateUsage
  /** The store as the gate calls it: with a timeout, failing with `StoreError`. */
  readonly store: GateStore
  readonly #config: ResolvedConfig
  readonly #applicationCache: ApplicationCache
  readonly #pipeline: Pipeline
  /** Metrics and traces (src/telemetry); asked per request whether anyone is listening. */
  readonly #telemetry: DecisionTelemetry
  readonly #requestIds: RequestIds | null
  /** Near-limit alerts (`nearLimit`), or `null` when off. */
  readonly #nearLimit: NearLimitAlerts | null

  constructor(options: GateOptions = {}) {
    super()
    const config = resolveOptions(options)
    assertStoreServes(config)
    this.#config = config
    this.#requestIds = config.requestIds
    const emit: Emit = (event, ...args) => this.#emitSafely(event, ...args)
    const separateRates = config.rateStore !== config.store
    const outcome = storeFailureOutcome(config.onStoreError)
    const recordsRole: StoreRole = separateRates ? 'records' : 'records+rates'
    const meter = gateMeter(config.meterProvider, globalMeter)
    this.#telemetry = new DecisionTelemetry(meter)
    const recordsTelemetry = new StoreTelemetry(config.store, recordsRole, this.#telemetry.storeMetrics)
    this.store = guardStore(config.store, config.storeTimeoutMs, new StoreHealth(recordsRole, recordsTelemetry.watchOutages(emit), outcome), recordsTelemetry)
    const ratesTelemetry = separateRates ? new StoreTelemetry(config.rateStore, 'rates', this.#telemetry.storeMetrics) : undefined
    const rateStore =
      ratesTelemetry === undefined ? this.store : guardStore(config.rateStore, config.storeTimeoutMs, new StoreHealth('rates', ratesTelemetry.watchOutages(emit), outcome), ratesTelemetry)
    this.#applicationCache = new ApplicationCache(this.store, config.applicationCacheMs, STALE_IF_ERROR_MS)
    const sink: StoreEventSink = {
      rateKeyEvicted: (key) => emit('rateKeyEvicted', { key }),
      applicationChanged: (appToken) => this.#applicationCache.forget(appToken),
    }
    config.store.attach?.(sink)
    if (separateRates) config.rateStore.attach?.(sink)
    const usageTelemetry = new UsageTelemetry(meter)
    this.usage = new GateUsage({ config: config.usage, store: config.store, storeTimeoutMs: config.storeTimeoutMs, emit: usageTelemetry.watchDrops(emit), log: config.log, reads: this.store })
    usageTelemetry.observe(this.usage)
    this.#nearLimit = config.nearLimit === null ? null : new NearLimitAlerts(config.nearLimit, rateStore, usageTelemetry.watchDrops(emit), config.log)
    const throttle = new Throttle({ config, store: rateStore, emit })
    const applicationRules = { ...config.applications, spendRegistration: registrationBudget(config.applications.registrations, throttle), plans: new Set(config.plans.keys()) }
    const nearLimit = config.nearLimit === null ? null : new NearLimitReader(config.nearLimit.thresholds, rateStore, (application, now) => throttle.limitReads(application, now))
    this.applications = new Applications({ store: this.store, changed: (appToken) => this.#applicationCache.forget(appToken), allowLoopback: config.oauth.allowLoopbackCallbacks, rules: applicationRules, emit, nearLimit })
    const auth = new Authenticator({ basic: config.basic, realm: config.realm, store: this.store, throttle, emit })
    const clearText = new ClearTextRevocation({ store: this.store, deletedKeyRetentionMs: config.deletedKeyRetentionMs, methods: config, emit })
    this.users = new Users(this.store, config.basic.scrypt, auth)
    this.apiKeys = new ApiKeys(this.store, config.deletedKeyRetentionMs)
    this.tokens = new AccessTokens(this.store, config.oauth.accessTokenTtlMs)
    this.grants = new Grants(this.store)
    const sessions = new LoginSessions(this.store, config.oauth.sessionTtlMs, config.oauth.maxSessionsPerUser)
    const report: ReportFailure = (error, request) => this.#report(error, request)
    const oauthBudget = new OAuthBudget({ policy: config.oauth.throttle, throttle, emit })
    const connectedAppsPage = new ConnectedAppsPage({ config, store: this.store, auth, sessions, grants: this.grants, budget: oauthBudget, report })
    const oauth = new OAuthServer({ config, store: this.store, throttle, budget: oauthBudget, auth, clearText, tokens: this.tokens, sessions, emit, report })
    const keyLimits = { maxActiveKeys: config.apiKeyEndpoints?.maxActiveKeys ?? 0, maxKeys: config.apiKeyEndpoints?.maxKeys ?? 0, deletedKeyRetentionMs: config.deletedKeyRetentionMs }
    const ownApplications = new ApplicationEndpoints(this.applications, this.usage, config.bodyTimeoutMs)
    const selfServiceBudget = new SelfServiceBudget(config.selfServiceBudget, throttle, emit)
    const selfService = new SelfService({ config, store: this.store, sessions, apiKeys: new ApiKeyEndpoints(this.store, keyLimits, config.bodyTimeoutMs), grants: this.grants, applications: ownApplications, budget: selfServiceBudget })
    // Each endpoint registers its paths, in this order (a path configured twice names the later one).
    const routes = new RouteTable()
    registerCurrentUser(routes, config.currentUser)
    registerOAuth(routes, oauth, config.oauth.paths)
    registerSelfService(routes, selfService)
    if (config.connectedApps.page !== null) registerPage(routes, config.connectedApps.page, connectedAppsPage)
    // One lookup per request with credentials: the store's own, when it holds the rate counters too, or one composed of its calls.
    const lookupRequest = config.store.lookupRequest !== undefined && !separateRates ? this.store.lookupRequest?.bind(this.store) : undefined
    this.#pipeline = new Pipeline(config, {
      store: this.store,
      lookupRequest: lookupRequest ?? composedLookup(this.store, rateStore),
      applications: this.#applicationCache,
      routes,
      throttle,
      auth,
      clearText,
      selfServiceAccess: new SelfServiceAccess(config, auth),
      emit,
    })
    if (config.oauth.allowLoopbackCallbacks) {
      config.log.warn(
        'open-data-gate: oauth.allowLoopbackCallbacks is on, so applications may register http://localhost, http://127.0.0.1 and http://[::1] Callback Prefixes. For local development only: turn it off in production.',
        { code: 'ODG_LOOPBACK_CALLBACKS' },
      )
    }
  }

  /**
   * Whether the gate was made with `trustProxy: true`: every peer is a proxy whose headers
   * say who the client is and whether it used https. A host that cannot see the connection
   * (a Fetch-standard `Request` carries neither the peer's address nor its TLS) may then
   * leave both out; otherwise its adapter must be told them (`open-data-gate/fetch`).
   */
  get trustsEveryProxy(): boolean {
    return this.#config.trustsEveryProxy
  }

  /**
   * Decides what happens to a request. Never throws and never rejects: every failure
   * becomes a response. It answers synchronously when the store does (the in-memory
   * store), so a request pays for no promise it does not need: `await` the result.
   * @see adapters/node.ts for how an adapter uses it
   * @see src/pipeline/decide.ts for the decision itself
   */
  handle(request: GateRequest): Awaitable<GateOutcome> {
    const requestId = this.#requestIds === null ? undefined : this.#requestIds.of(request)
    const state = new RequestState(request, requestId)
    const watch = this.#telemetry.active ? this.#telemetry.begin(request, requestId) : undefined
    let outcome: Awaitable<GateOutcome>
    try {
      outcome = this.#pipeline.decide(state)
    } catch (error) {
      return this.#decided(state, undefined, error, watch, false)
    }
    if (!isPromiseLike(outcome)) return this.#decided(state, outcome, undefined, watch, false)
    watch?.left()
    return Promise.resolve(outcome).then(
      (settled) => this.#decided(state, settled, undefined, watch, true),
      (error: unknown) => this.#decided(state, undefined, error, watch, true),
    )
  }

  /**
   * The decision on a request, made once: the outcome, or the answer to what failed, settled
   * on the request's record, which usage, the metrics and traces and the request-id header
   * each read once; a failure that is not a refusal goes to the `internalError` event and the log.
   */
  #decided(state: RequestState, outcome: GateOutcome | undefined, error: unknown, watch: DecisionWatch | undefined, late: boolean): GateOutcome {
    const answer = outcome ?? { type: 'respond', response: this.#failure(error, state.request, state.requestId) }
    state.settle(answer, error)
    this.usage.count(state)
    const pass = state.pass
    if (this.#nearLimit !== null && state.status === null && pass !== null && pass.info.policy === 'application' && pass.info.source !== 'local') this.#nearLimit.seen(state.appToken as string, pass.info, state.requestId)
    watch?.decided(state, late)
    const ids = this.#requestIds
    const requestId = state.requestId
    if (ids === null || requestId === undefined) return answer
    if (answer.type === 'next') {
      const headers = withRequestId(answer.headers, ids.header, requestId)
      return headers === answer.headers ? answer : { type: 'next', context: answer.context, headers }
    }
    return { type: 'respond', response: this.#withRequestId(answer.response, requestId) }
  }

  #withRequestId(response: GateResponse, requestId: string | null | undefined): GateResponse {
    if (this.#requestIds === null || requestId === undefined || requestId === null) return response
    // Object.assign and one store, not a spread with a computed name (see withRequestId below).
    const headers: Record<string, string | readonly string[]> = Object.assign({}, response.headers)
    headers[this.#requestIds.header] = requestId
    return { status: response.status, headers, body: response.body }
  }

  /** The answer to a failure of the pipeline: a refusal's own, or a 500 reported as `internalError`. */
  #failure(error: unknown, request: GateRequest, requestId: string | undefined): GateResponse {
    this.#report(error, { method: request.method, url: request.url, requestId })
    return errorResponse(error, 'platform')
  }

  /**
   * Compiles a route guard, for the adapters' `expressGuard`, `koaGuard` and `nodeGuard`.
   * @example
   * const privateData = gate.guard({ auth: 'required' })
   * const error = privateData(req.gate) // a PlatformError to answer with, or undefined
   */
  guard(rule: GuardRule): Guard {
    return compileGuard(rule, this.#config.log)
  }

  /**
   * The response for any error: a {@link GateError} in its own shape and status,
   * anything else a generic 500 (the cause goes to the `internalError` event, never to
   * the client). With the request's id (`req.gate.requestId`), the answer carries it in
   * `X-Request-Id` and the `internalError` event and log line name it.
   */
  errorResponse(error: unknown, request?: FailedRequest): GateResponse {
    this.#report(error, request)
    return this.#withRequestId(errorResponse(error, 'platform'), request?.requestId)
  }

  /**
   * The one place that decides which failures become `internalError` events. (A store's
   * failures are told once per outage, as `storeError`, by its guard.)
   */
  #report(error: unknown, request: FailedRequest | undefined): void {
    if (!(error instanceof GateError)) {
      this.#emitSafely('internalError', { error, method: request?.method ?? '', path: request === undefined ? '' : pathOf(request.url), requestId: request?.requestId ?? undefined })
    }
  }

  /**
   * Every event the gate emits goes through here: a listener that throws must not turn a
   * request into a 500, nor escape from inside a response; it becomes a process warning.
   */
  #emitSafely<E extends keyof GateEvents>(event: E, ...args: Parameters<GateEvents[E]>): void {
    logEvent(this.#config.log, event, args[0])
    try {
      this.emit(event, ...args)
    } catch (error) {
      this.#config.log.warn(`open-data-gate: a '${event}' listener threw: ${messageOf(error)}`, { code: 'ODG_LISTENER_THREW', event })
    }
  }

  /** Writes the usage counts left in this process, then releases the stores' connections and timers. */
  async close(): Promise<void> {
    this.#nearLimit?.close()
    await this.usage.close()
    await this.#config.store.close?.()
    if (this.#config.rateStore !== this.#config.store) await this.#config.rateStore.close?.()
  }
}

/**
 * The headers for the host's answer: the throttle's, and the request id's. The throttle
 * makes its headers for this one request (or gives its frozen empty set), so the id is added
 * to them rather than to a copy: a copy cost 0.3 to 2 µs a request (`{ ...headers, [name]:
 * id }` the most; V8 made it a dictionary), on a path of about 1.5 µs.
 */
function withRequestId(headers: Readonly<Record<string, string>>, header: string, requestId: string): Readonly<Record<string, string>> {
  const out = (Object.isFrozen(headers) ? Object.assign({}, headers) : headers) as Record<string, string>
  out[header] = requestId
  return out
}

/** How long past its freshness a cached application still answers while the store is failing. */
const STALE_IF_ERROR_MS = 300_000

/** What the gate does when a call of this operation fails, as `storeError` reports it. */
function storeFailureOutcome(mode: ResolvedConfig['onStoreError']): (operation: string) => StoreErrorEvent['outcome'] {
  const rates = mode === 'fail-open' ? 'allowed' : mode === 'memory' ? 'fallback' : 'failed'
  return (operation) => (operation === 'consumeRate' || operation === 'consumeLimits' ? rates : operation === 'updateApiKey' ? 'ignored' : 'failed')
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
