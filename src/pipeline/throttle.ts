/**
 * Throttling: which budget a request is counted against, the `RateLimit` headers, the
 * 429, and what happens when the store fails.
 *
 * Requests with a valid application token count against that application; requests
 * without one share the anonymous budget, one pool or per client address. A request with
 * an invalid token is refused before it gets here and never gets a budget.
 *
 * @see docs/platform-rules.md "Limits" and the platform's "Throttling"; docs/guides/throttling.md
 * @see https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/ (-08 and later)
 */
import { LRUCache } from 'lru-cache'
import { isPromiseLike } from '../util/awaitable.js'
import { StoreError } from '../errors.js'
import { legacyHeaders, throttledError } from './throttled-answer.js'
import type { Emit } from '../events.js'
import type { RateResult } from '../limits/gcra.js'
import type { ResolvedConfig, ResolvedPolicy } from '../config/options.js'
import type { ClientInfo } from '../http/proxy.js'
import { anonymousRateKey, applicationRateKey } from '../limits/rate-keys.js'
import { MemoryStore } from '../store/memory/store.js'
import { PlanLimits, type PlannedLimits, type ShadowTarget } from './plan-limits.js'
import type { ResolvedLimit, ResolvedPlan } from '../config/plans.js'
import type { LimitRead, LimitResult, LimitStep } from '../limits/limit-steps.js'
import { DEFAULT_ANONYMOUS_IPV6_SUBNET } from '../config/defaults.js'
import { DEFAULT_PLAN } from '../config/plans.js'
import { Leases, type LeasedRate } from './leases.js'
import type { ApplicationRecord, Awaitable, RateStore } from '../store/store.js'

export type { CountedRate, ThrottleInfo, ThrottlePass } from './throttle-pass.js'
import type { CountedRate, ThrottlePass } from './throttle-pass.js'

const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>
/** The policy a plan of several limits is named by in a {@link ThrottlePlan}: its limits name themselves. */
const PLAN_POLICY: ResolvedPolicy = Object.freeze({ name: 'app', limit: 0, windowMs: 0 })

/** Whether a plan is one rolling limit per application, enforced: the single-limit path decides it. */
function isSingleLimit(plan: ResolvedPlan): boolean {
  const only = plan.limits[0] as ResolvedLimit
  return plan.limits.length === 1 && only.windowMs !== null && only.per === 'application' && !only.shadow
}

/** The rate keys a throttle keeps made, of each kind, at most; past it they are made again. */
const MAX_KEPT_KEYS = 10_000
const SHARED_ANONYMOUS_KEY = anonymousRateKey('shared', '', 0)

/**
 * The step {@link Throttle.check} would take for a request, made ahead so that the store
 * can take it in the same round trip as the request's records ({@link Throttle.settle}).
 */
export interface ThrottlePlan {
  readonly key: string
  /** Always 1: a request. */
  readonly cost: number
  readonly limit: number
  readonly windowMs: number
  readonly policy: ResolvedPolicy
  readonly application: ApplicationRecord | null
  /** A plan of several limits: its steps, decided all or nothing (`key`, `limit` and `windowMs` are then its first limit's). */
  readonly limits?: PlannedLimits
}

/** The options the throttle reads: the resolved `throttle` section. */
export type ThrottleConfig = Pick<ResolvedConfig, 'application' | 'anonymous' | 'legacyHeaders' | 'onStoreError' | 'plans' | 'defaultPlan'> & Partial<Pick<ResolvedConfig, 'local'>>

/** What the throttle is made of. */
export interface ThrottleParts {
  readonly config: ThrottleConfig
  /** The guarded rate store. */
  readonly store: RateStore
  readonly emit: Emit
}

/** Applies the configured policies through the (guarded) rate store. */
export class Throttle {
  readonly #config: ThrottleConfig
  readonly #store: RateStore
  readonly #emit: Emit
  /** Keys known to be over their limit, and until when (ms): a flood costs no store call. */
  readonly #blockedUntil = new LRUCache<string, number>({ max: 10_000 })
  /** `RateLimit-Policy` values by policy and limit: the same few strings on every request. */
  readonly #policyHeaders = new Map<ResolvedPolicy, { readonly prefix: string; readonly byLimit: Map<number, string> }>()
  #fallback: MemoryStore | undefined
  readonly #plans: PlanLimits
  /** The policy of each plan of one rolling limit, made once. */
  readonly #singlePolicies = new Map<ResolvedPlan, ResolvedPolicy>()
  /** Rate keys by app token, and by client address: see {@link #applicationKey}. */
  readonly #keys = new Map<string, string>()
  readonly #addressKeys = new Map<string, string>()
  /** This process's leases of the budgets that count locally (`throttle.local`), or `null`: off. */
  readonly leases: Leases | null

  constructor(parts: ThrottleParts) {
    this.#config = parts.config
    this.#store = parts.store
    this.#emit = parts.emit
    const local = parts.config.local ?? null
    this.leases = local === null ? null : new Leases({ units: local.units, ttlMs: local.ttlMs, take: (key, limit, windowMs, units) => this.#store.consumeRate(key, limit, windowMs, units) })
    this.#plans = new PlanLimits({ onStoreError: parts.config.onStoreError, ipv6Subnet: parts.config.anonymous?.ipv6Subnet ?? DEFAULT_ANONYMOUS_IPV6_SUBNET }, parts.store, parts.emit)
    const several = [...(parts.config.defaultPlan === null ? [] : [parts.config.defaultPlan]), ...parts.config.plans.values()].find((plan) => !isSingleLimit(plan))
    if (several !== undefined && typeof parts.store.consumeLimits !== 'function') {
      throw new TypeError(`open-data-gate: the plan '${several.name}' has several limits (or a quota, a limit per address, a shadow limit), which the rate store decides with consumeLimits; this store has none. Use a store that has it (MemoryStore, RedisStore, PostgresStore), or plans of one rolling limit.`)
    }
  }

  /**
   * The plan an application is on when it is not the default single limit: its own
   * (`plan`), else the default one of several limits; `undefined`: the single-limit path
   * with `throttle.application`. A plan the configuration no longer names is the default.
   */
  #planOf(application: Pick<ApplicationRecord, 'plan'>): ResolvedPlan | undefined {
    const name = application.plan
    const plan = name === null || name === undefined ? this.#config.defaultPlan : (this.#config.plans.get(name) ?? this.#config.defaultPlan)
    return plan === null ? undefined : plan
  }

  /** The budget of an application on a plan of one rolling limit: that limit, or the application's own. */
  #singleLimit(plan: ResolvedPlan, application: Pick<ApplicationRecord, 'appToken' | 'limit'>): { policy: ResolvedPolicy; key: string; limit: number } {
    const only = plan.limits[0] as ResolvedLimit
    let policy: ResolvedPolicy | undefined = this.#singlePolicies.get(plan)
    if (policy === undefined) {
      policy = { name: only.name, limit: only.limit, windowMs: only.windowMs as number }
      this.#singlePolicies.set(plan, policy)
    }
    return { policy, key: this.#applicationKey(application.appToken), limit: application.limit ?? only.limit }
  }

  /**
   * The limits `application` is counted against, each with the step that reads it without
   * consuming (cost 0), as its owner is shown them; a limit per client address is left
   * out, and none when no policy applies to applications.
   */
  limitReads(application: Pick<ApplicationRecord, 'appToken' | 'plan' | 'limit'>, now = Date.now()): LimitRead[] {
    const plan = application.plan != null || this.#config.defaultPlan !== null ? this.#planOf(application) : undefined
    if (plan !== undefined && !isSingleLimit(plan)) return this.#plans.reads(plan, application.appToken, now)
    const single = plan === undefined ? this.#config.application : this.#singleLimit(plan, application).policy
    if (single === null) return []
    const key = this.#applicationKey(application.appToken)
    return [{ name: single.name, shadow: false, step: { kind: 'rate', key, limit: application.limit ?? single.limit, windowMs: single.windowMs, cost: 0 } }]
  }

  /**
   * Counts one request.
   * @returns the verdict, or `null` when no policy applies (or the store failed open)
   * @throws {ThrottledError} over the limit
   * @throws {StoreError} when the store failed and the mode is `fail-closed`
   */
  check(application: ApplicationRecord | null, client: ClientInfo, shadow?: ShadowTarget): Awaitable<ThrottlePass | null> {
    if (application !== null && (application.plan != null || this.#config.defaultPlan !== null)) {
      const plan = this.#planOf(application)
      if (plan !== undefined && !isSingleLimit(plan)) return this.#plans.check(this.#plans.plan(plan, application, client), client, shadow)
    }
    const budget = this.#budget(application, client)
    if (budget === undefined) return null
    const { policy, key, limit } = budget
    const result = this.consume(key, limit, policy.windowMs, 1)
    if (isPromiseLike(result)) return Promise.resolve(result).then((settled) => this.#verdict(settled, policy, limit, application, client))
    return this.#verdict(result, policy, limit, application, client)
  }

  /**
   * The verdict {@link check} gives when the store fails on the step, without sending the
   * step to the store: for a request whose step went out in a call that failed (the
   * request's lookup, `lookupRequest`), which the store may have taken before the failure
   * reached the gate (a timeout, a script that failed after its step), so that sending it
   * again could count the request twice. The configured `onStoreError` decides, as in
   * {@link consume}: this process's count, no verdict, or the store's error; a key this
   * process knows is over its limit is refused as {@link check} refuses it.
   * @param error what the failed call failed with
   * @throws {ThrottledError} over the limit (this process's count, or a known refusal)
   * @throws {StoreError} when the mode is `fail-closed`
   */
  checkFailed(application: ApplicationRecord | null, client: ClientInfo, error: unknown, shadow?: ShadowTarget): Awaitable<ThrottlePass | null> {
    if (application !== null && (application.plan != null || this.#config.defaultPlan !== null)) {
      const plan = this.#planOf(application)
      if (plan !== undefined && !isSingleLimit(plan)) return this.#plans.failed(this.#plans.plan(plan, application, client), client, error, shadow)
    }
    const budget = this.#budget(application, client)
    if (budget === undefined) return null
    const { policy, key, limit } = budget
    const result = this.#knownRefusal(key) ?? this.#failed(error, key, limit, policy.windowMs, 1)
    return this.#verdict(result, policy, limit, application, client)
  }

  /** Whether the throttle counts in `store` (not in a separate `rateStore`). */
  countsIn(store: object): boolean {
    return this.#store === store
  }

  /**
   * The step {@link check} would take, or `undefined` when it would take none in the store:
   * no policy applies, or this process knows the key is over its limit (then `check`
   * refuses without a store call).
   */
  plan(application: ApplicationRecord | null, client: ClientInfo): ThrottlePlan | undefined {
    if (application !== null && (application.plan != null || this.#config.defaultPlan !== null)) {
      const plan = this.#planOf(application)
      if (plan !== undefined && !isSingleLimit(plan)) {
        const limits = this.#plans.plan(plan, application, client)
        const first = limits.steps[0] as LimitStep
        return { key: first.key, cost: 1, limit: first.limit, windowMs: first.kind === 'rate' ? first.windowMs : first.periodEnd - first.periodStart, policy: PLAN_POLICY, application, limits }
      }
    }
    const budget = this.#budget(application, client)
    if (budget === undefined) return undefined
    const { policy, key, limit } = budget
    if (this.isBlocked(key)) return undefined
    return { key, cost: 1, limit, windowMs: policy.windowMs, policy, application }
  }

  /**
   * The step of an application that counts locally (`throttle.local`: its plan or itself is
   * named there, and its plan is one rolling limit), to spend from this process's lease
   * (./steps/lease.ts); `undefined`: the store decides each of its requests.
   */
  leased(application: ApplicationRecord, client: ClientInfo): ThrottlePlan | undefined {
    const local = this.#config.local
    if (local === null || local === undefined) return undefined
    const plan = this.#planOf(application)
    if (!local.applications.has(application.appToken) && !local.plans.has(plan?.name ?? DEFAULT_PLAN)) return undefined
    if (plan !== undefined && !isSingleLimit(plan)) return undefined
    const budget = this.#budget(application, client)
    if (budget === undefined) return undefined
    return { key: budget.key, cost: 1, limit: budget.limit, windowMs: budget.policy.windowMs, policy: budget.policy, application }
  }

  /** The verdict on a request decided from a lease (as {@link check} gives it, its source `'lease'`). */
  leaseVerdict(plan: ThrottlePlan, client: ClientInfo, result: LeasedRate): ThrottlePass {
    return this.#verdict(result, plan.policy, plan.limit, plan.application, client) as ThrottlePass
  }

  /** The policy, rate key and limit a request counts against; `undefined` when no policy applies. */
  #budget(application: ApplicationRecord | null, client: ClientInfo): { policy: ResolvedPolicy; key: string; limit: number } | undefined {
    if (application !== null) {
      if (application.plan != null || this.#config.defaultPlan !== null) {
        const plan = this.#planOf(application)
        if (plan !== undefined) return this.#singleLimit(plan, application)
      }
      const policy = this.#config.application
      if (policy === null) return undefined
      return { policy, key: this.#applicationKey(application.appToken), limit: application.limit ?? policy.limit }
    }
    const anonymous = this.#config.anonymous
    if (anonymous === null) return undefined
    return { policy: anonymous, key: anonymous.scope === 'shared' ? SHARED_ANONYMOUS_KEY : this.#addressKey(client.ip, anonymous.ipv6Subnet), limit: anonymous.limit }
  }

  /**
   * An application's rate key, made once per application rather than per request: the same
   * string each time is hashed once, where a new one costs a concatenation, and its hashing
   * again in the store's map.
   */
  #applicationKey(appToken: string): string {
    let key = this.#keys.get(appToken)
    if (key === undefined) {
      if (this.#keys.size >= MAX_KEPT_KEYS) this.#keys.clear()
      key = applicationRateKey(appToken)
      this.#keys.set(appToken, key)
    }
    return key
  }

  /** A client address's anonymous rate key (its IPv6 prefix cut once), kept as {@link #applicationKey} keeps an application's. */
  #addressKey(ip: string, ipv6Subnet: number): string {
    let key = this.#addressKeys.get(ip)
    if (key === undefined) {
      if (this.#addressKeys.size >= MAX_KEPT_KEYS) this.#addressKeys.clear()
      key = anonymousRateKey('ip', ip, ipv6Subnet)
      this.#addressKeys.set(ip, key)
    }
    return key
  }

  /** The verdict on a planned step the store took (as {@link check} gives it). */
  settle(plan: ThrottlePlan, client: ClientInfo, result: RateResult, results?: readonly LimitResult[], shadow?: ShadowTarget): Awaitable<ThrottlePass | null> {
    if (plan.limits !== undefined) return this.#plans.settle(plan.limits, client, results ?? [result], shadow)
    return this.#verdict(this.#remember(plan.key, result), plan.policy, plan.limit, plan.application, client)
  }

  #verdict(result: CountedRate | null, policy: ResolvedPolicy, limit: number, application: ApplicationRecord | null, client: ClientInfo): ThrottlePass | null {
    if (result === null) return null
    const headers = result.local === true ? NO_HEADERS : this.#headers(policy, limit, result)
    if (!result.allowed) {
      this.#emit('throttled', {
        policy: application === null ? 'anonymous' : 'application',
        appToken: application?.appToken,
        ip: client.ip,
        requestId: client.requestId,
        retryAfterMs: result.retryAfterMs,
      })
      const budget = application !== null ? 'application' : this.#config.anonymous?.scope === 'shared' ? 'shared' : 'address'
      const error = throttledError(budget, limit, policy.windowMs, result, headers)
      throw error
    }
    return {
      info: {
        policy: application === null ? 'anonymous' : 'application',
        limit,
        windowMs: policy.windowMs,
        remaining: result.remaining,
        resetMs: result.resetMs,
        source: result.local === true ? 'local' : result.leased === true ? 'lease' : 'store',
      },
      headers,
    }
  }

  /**
   * One GCRA step on any key, with the configured store-failure mode. Also used for the
   * brute-force budgets (failed logins, failed client authentication).
   * @returns `null` when the store failed and the mode is `fail-open`
   */
  consume(key: string, limit: number, windowMs: number, cost: number): Awaitable<CountedRate | null> {
    if (cost > 0) {
      const refused = this.#knownRefusal(key)
      if (refused !== undefined) return refused
    }
    let result: Awaitable<RateResult>
    try {
      result = this.#store.consumeRate(key, limit, windowMs, cost)
    } catch (error) {
      return this.#failed(error, key, limit, windowMs, cost)
    }
    if (!isPromiseLike(result)) return this.#remember(key, result)
    return Promise.resolve(result).then(
      (settled) => this.#remember(key, settled),
      (error: unknown) => this.#failed(error, key, limit, windowMs, cost),
    )
  }

  /** A refusal of `key` without a store call, while this process knows it is over its limit. */
  #knownRefusal(key: string): CountedRate | undefined {
    if (this.#blockedUntil.size === 0) return undefined
    const until = this.#blockedUntil.get(key)
    const now = Date.now()
    if (until === undefined || until <= now) return undefined
    return { allowed: false, remaining: 0, resetMs: until - now, retryAfterMs: until - now }
  }

  #remember(key: string, result: CountedRate): CountedRate {
    if (!result.allowed && result.retryAfterMs > 0) {
      this.#blockedUntil.set(key, Date.now() + result.retryAfterMs, { ttl: result.retryAfterMs })
    }
    return result
  }

  /**
   * The store failed: fail closed (throw), open (no verdict) or to this process's memory.
   * (The store's guard has told the events about the outage, once.)
   */
  #failed(error: unknown, key: string, limit: number, windowMs: number, cost: number): CountedRate | null {
    const mode = this.#config.onStoreError
    if (mode === 'fail-closed') throw error instanceof StoreError ? error : new StoreError('consumeRate', error)
    if (mode === 'fail-open') return null
    this.#fallback ??= new MemoryStore()
    return this.#remember(key, { ...this.#fallback.consumeRate(key, limit, windowMs, cost), local: true })
  }

  /** Whether this process saw `key` refused and its wait has not ended yet (no store call). */
  isBlocked(key: string): boolean {
    if (this.#blockedUntil.size === 0) return false
    const until = this.#blockedUntil.get(key)
    return until !== undefined && until > Date.now()
  }

  /** Forgets a key everywhere: in the store and in the local block list. */
  async reset(key: string): Promise<void> {
    this.#blockedUntil.delete(key)
    this.leases?.forget(key)
    this.#fallback?.resetRate(key)
    await this.#store.resetRate(key)
  }

  /**
   * `RateLimit-Policy` and `RateLimit` (IETF draft -08+), optionally the legacy trio.
   * `t` is the time until the whole budget is back while requests remain, and the time
   * until the next request fits once none remain (then it equals `Retry-After`).
   */
  #headers(policy: ResolvedPolicy, limit: number, result: RateResult): Record<string, string> {
    let named = this.#policyHeaders.get(policy)
    if (named === undefined) {
      named = { prefix: `"${policy.name}";r=`, byLimit: new Map() }
      this.#policyHeaders.set(policy, named)
    }
    const byLimit = named.byLimit
    let policyHeader = byLimit.get(limit)
    if (policyHeader === undefined) {
      policyHeader = `"${policy.name}";q=${limit};w=${Math.max(1, Math.round(policy.windowMs / 1000))}`
      if (byLimit.size < 1000) byLimit.set(limit, policyHeader)
    }
    const waitMs = result.remaining > 0 ? result.resetMs : result.retryAfterMs
    const headers: Record<string, string> = {
      'ratelimit-policy': policyHeader,
      ratelimit: `${named.prefix}${result.remaining};t=${Math.ceil(waitMs / 1000)}`,
    }
    if (this.#config.legacyHeaders) legacyHeaders(headers, limit, result)
    return headers
  }
}
