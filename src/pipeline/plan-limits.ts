/**
 * The throttle of an application on a plan of several limits (src/config/plans.ts,
 * docs/guides/plans.md): its steps, decided all or nothing by the rate store
 * (`consumeLimits`, in the request's one lookup when it has credentials), and the verdict:
 * the `RateLimit-Policy` and `RateLimit` headers (draft-ietf-httpapi-ratelimit-headers-11),
 * or a 429 naming in its `data` every limit that refused, `Retry-After` when all of them let
 * a request through again.
 *
 * Shadow limits (`shadow: true`, until `enforceFrom`) are decided with the others, so that
 * they count exactly as they would enforced. When the only limits that refuse are shadow
 * ones, the enforced ones are sent again alone (a second call, for such requests only) and
 * the request goes on, named as shadowed by those limits (its decision's `shadowed`).
 * An application with a plan of one rolling limit takes the single-limit path of
 * ./throttle.ts, as before plans.
 */
import { retryAfterSeconds, StoreError, ThrottledError } from '../errors.js'
import type { Emit } from '../events.js'
import type { ResolvedLimit, ResolvedPlan } from '../config/plans.js'
import { periodBounds, type PeriodBounds } from '../limits/calendar-period.js'
import type { LimitRead, LimitResult, LimitStep } from '../limits/limit-steps.js'
import type { DecisionLimit } from '../rules/decision.js'
import { applicationRateKey, limitRateKey } from '../limits/rate-keys.js'
import { addressKey, type ClientInfo } from '../http/proxy.js'
import { MemoryStore } from '../store/memory/store.js'
import type { ApplicationRecord, Awaitable, RateStore } from '../store/store.js'
import { isPromiseLike } from '../util/awaitable.js'
import type { ThrottleInfo, ThrottlePass } from './throttle-pass.js'

/** The limits of one request under its plan, made ahead of the store call. */
export interface PlannedLimits {
  readonly plan: ResolvedPlan
  readonly application: ApplicationRecord
  /** The limits decided, enforced and shadow, in the order of `steps`. */
  readonly limits: readonly ResolvedLimit[]
  readonly steps: readonly LimitStep[]
  /** Which of `limits` only count (shadow, not yet enforced). */
  readonly shadow: readonly boolean[]
}

/** Where the names of the shadow limits that would have refused a request go: its state. */
export interface ShadowTarget {
  shadowed: readonly string[]
}

/** The options this reads. */
export interface PlanLimitsConfig {
  readonly onStoreError: 'fail-closed' | 'fail-open' | 'memory'
  /** The IPv6 prefix a `per: 'address'` limit counts an address by. */
  readonly ipv6Subnet: number
}

/** Applications whose limit keys a plan keeps made, at most; past it they are made again. */
const MAX_KEPT = 10_000

export class PlanLimits {
  readonly #config: PlanLimitsConfig
  readonly #store: Pick<RateStore, 'consumeLimits'>
  readonly #emit: Emit
  #fallback: MemoryStore | undefined
  /** `RateLimit-Policy` by plan: the same string on every request of a plan. */
  readonly #policyHeaders = new Map<ResolvedPlan, string>()
  /** Limit keys by plan and app token ({@link #keysOf}); the current period by period and time zone ({@link #period}). */
  readonly #keys = new Map<ResolvedPlan, Map<string, readonly string[]>>()
  readonly #periods = new Map<string, PeriodBounds>()

  constructor(config: PlanLimitsConfig, store: Pick<RateStore, 'consumeLimits'>, emit: Emit) {
    this.#config = config
    this.#store = store
    this.#emit = emit
  }

  /** The steps of one request of `application` under `plan`, now. */
  plan(plan: ResolvedPlan, application: ApplicationRecord, client: ClientInfo): PlannedLimits {
    const now = Date.now()
    const keys = this.#keysOf(plan, application.appToken)
    const steps: LimitStep[] = []
    const shadow: boolean[] = []
    for (let i = 0; i < plan.limits.length; i++) {
      const limit = plan.limits[i] as ResolvedLimit
      let key = keys[i] as string
      if (limit.per === 'address') key = `${key}@${addressKey(client.ip, this.#config.ipv6Subnet)}`
      if (limit.windowMs !== null) steps.push({ kind: 'rate', key, limit: limit.limit, windowMs: limit.windowMs, cost: 1 })
      else {
        const { start, end } = this.#period(limit, now)
        steps.push({ kind: 'quota', key, limit: limit.limit, periodStart: start, periodEnd: end, cost: 1 })
      }
      shadow.push(limit.shadow && (limit.enforceFrom === null || now < limit.enforceFrom))
    }
    return { plan, application, limits: plan.limits, steps, shadow }
  }

  /**
   * The steps that read an application's limits under `plan` now, without consuming
   * (cost 0): each limit counted per application; a limit per client address, one budget
   * per address, is left out.
   */
  reads(plan: ResolvedPlan, appToken: string, now: number): LimitRead[] {
    const keys = this.#keysOf(plan, appToken)
    const reads: LimitRead[] = []
    for (let i = 0; i < plan.limits.length; i++) {
      const limit = plan.limits[i] as ResolvedLimit
      if (limit.per === 'address') continue
      const key = keys[i] as string
      const shadow = limit.shadow && (limit.enforceFrom === null || now < limit.enforceFrom)
      if (limit.windowMs !== null) reads.push({ name: limit.name, shadow, step: { kind: 'rate', key, limit: limit.limit, windowMs: limit.windowMs, cost: 0 } })
      else {
        const { start, end } = this.#period(limit, now)
        reads.push({ name: limit.name, shadow, step: { kind: 'quota', key, limit: limit.limit, periodStart: start, periodEnd: end, cost: 0 } })
      }
    }
    return reads
  }

  /** An application's keys of a plan's limits, made once per application rather than per request. */
  #keysOf(plan: ResolvedPlan, appToken: string): readonly string[] {
    let byApplication = this.#keys.get(plan)
    if (byApplication === undefined) {
      byApplication = new Map()
      this.#keys.set(plan, byApplication)
    }
    let keys = byApplication.get(appToken)
    if (keys === undefined) {
      if (byApplication.size >= MAX_KEPT) byApplication.clear()
      const subject = applicationRateKey(appToken)
      keys = plan.limits.map((limit) => limitRateKey(subject, limit.name))
      byApplication.set(appToken, keys)
    }
    return keys
  }

  /** A quota's current period, computed (with Intl) once per period and time zone rather than per request. */
  #period(limit: ResolvedLimit, now: number): PeriodBounds {
    const name = `${limit.period ?? 'day'}\u0000${limit.timeZone}`
    let bounds = this.#periods.get(name)
    if (bounds === undefined || now < bounds.start || now >= bounds.end) {
      bounds = periodBounds(limit.period ?? 'day', limit.timeZone, now)
      this.#periods.set(name, bounds)
    }
    return bounds
  }

  /** Sends the steps to the store and gives the verdict ({@link settle}). */
  check(planned: PlannedLimits, client: ClientInfo, target: ShadowTarget | undefined): Awaitable<ThrottlePass | null> {
    let results: Awaitable<LimitResult[]>
    try {
      results = (this.#store.consumeLimits as NonNullable<RateStore['consumeLimits']>)(planned.steps)
    } catch (error) {
      return this.failed(planned, client, error, target)
    }
    if (!isPromiseLike(results)) return this.settle(planned, client, results, target)
    return Promise.resolve(results).then(
      (settled) => this.settle(planned, client, settled, target),
      (error: unknown) => this.failed(planned, client, error, target),
    )
  }

  /**
   * The verdict on the store's results: a pass with the headers, a 429 naming the enforced
   * limits that refused, or, when only shadow limits refused, the enforced ones sent again
   * alone (the request then goes on, `shadowed` told the shadow limits' names).
   * @throws {ThrottledError} when an enforced limit refused
   */
  settle(planned: PlannedLimits, client: ClientInfo, results: readonly LimitResult[], target: ShadowTarget | undefined, local = false): Awaitable<ThrottlePass> {
    const refused: number[] = []
    let shadowRefused = false
    for (let i = 0; i < results.length; i++) {
      if ((results[i] as LimitResult).allowed) continue
      if (planned.shadow[i] === true) shadowRefused = true
      else refused.push(i)
    }
    if (refused.length > 0) throw this.#throttled(planned, client, results, refused)
    if (!shadowRefused) return this.#pass(planned, results, local)
    const names: string[] = []
    const enforced: PlannedLimits = { ...planned, limits: [], steps: [], shadow: [] }
    for (let i = 0; i < results.length; i++) {
      const shadow = planned.shadow[i] === true
      if (shadow && !(results[i] as LimitResult).allowed) names.push((planned.limits[i] as ResolvedLimit).name)
      else {
        ;(enforced.limits as ResolvedLimit[]).push(planned.limits[i] as ResolvedLimit)
        ;(enforced.steps as LimitStep[]).push(planned.steps[i] as LimitStep)
        ;(enforced.shadow as boolean[]).push(shadow)
      }
    }
    if (target !== undefined) target.shadowed = names
    if (enforced.steps.length === 0) return this.#pass(planned, results, local)
    return this.check(enforced, client, undefined) as Awaitable<ThrottlePass>
  }

  /**
   * The verdict when the store failed on the steps, as `onStoreError` says: the store's
   * error, no verdict, or this process's own count (no second step in the store).
   * @throws {StoreError} with `fail-closed`
   */
  failed(planned: PlannedLimits, client: ClientInfo, error: unknown, target: ShadowTarget | undefined): Awaitable<ThrottlePass | null> {
    const mode = this.#config.onStoreError
    if (mode === 'fail-closed') throw error instanceof StoreError ? error : new StoreError('consumeLimits', error)
    if (mode === 'fail-open') return null
    this.#fallback ??= new MemoryStore()
    return this.settle(planned, client, this.#fallback.consumeLimits(planned.steps), target, true)
  }

  #pass(planned: PlannedLimits, results: readonly LimitResult[], local: boolean): ThrottlePass {
    // The enforced limit closest to refusing: the fewest requests left.
    let closest = -1
    for (let i = 0; i < results.length; i++) {
      if (planned.shadow[i] === true) continue
      if (closest === -1 || (results[i] as LimitResult).remaining < (results[closest] as LimitResult).remaining) closest = i
    }
    const limit = planned.limits[closest] as ResolvedLimit | undefined
    const result = results[closest] as LimitResult | undefined
    if (limit === undefined || result === undefined) return { info: { policy: 'application', limit: 0, windowMs: 0, remaining: 0, resetMs: 0, source: local ? 'local' : 'store' }, headers: {} }
    const limits: DecisionLimit[] = []
    for (let i = 0; i < results.length; i++) {
      if (planned.shadow[i] === true) continue
      const step = planned.steps[i] as LimitStep
      limits.push({ name: (planned.limits[i] as ResolvedLimit).name, limit: step.limit, remaining: (results[i] as LimitResult).remaining, windowMs: windowMsOf(planned, i), periodStart: step.kind === 'quota' ? step.periodStart : null })
    }
    const info: ThrottleInfo = { policy: 'application', limit: limit.limit, windowMs: windowMsOf(planned, closest), remaining: result.remaining, resetMs: result.resetMs, source: local ? 'local' : 'store', limits }
    if (local) return { info, headers: {} }
    const waitMs = result.remaining > 0 ? result.resetMs : result.retryAfterMs
    return { info, headers: { 'ratelimit-policy': this.#policyHeader(planned), ratelimit: `"${limit.name}";r=${result.remaining};t=${Math.ceil(waitMs / 1000)}` } }
  }

  /** Every enforced limit of the plan, `"name";q=…;w=…` (a quota's `w`: its period's length). */
  #policyHeader(planned: PlannedLimits): string {
    const cached = planned.shadow.includes(true) ? undefined : this.#policyHeaders.get(planned.plan)
    if (cached !== undefined) return cached
    const parts: string[] = []
    for (let i = 0; i < planned.limits.length; i++) {
      if (planned.shadow[i] === true) continue
      parts.push(`"${(planned.limits[i] as ResolvedLimit).name}";q=${(planned.limits[i] as ResolvedLimit).limit};w=${Math.max(1, Math.round(windowMsOf(planned, i) / 1000))}`)
    }
    const header = parts.join(', ')
    if (!planned.shadow.includes(true) && planned.limits === planned.plan.limits) this.#policyHeaders.set(planned.plan, header)
    return header
  }

  #throttled(planned: PlannedLimits, client: ClientInfo, results: readonly LimitResult[], refused: readonly number[]): ThrottledError {
    let retryAfterMs = 0
    const policies = refused.map((i) => {
      const limit = planned.limits[i] as ResolvedLimit
      const wait = (results[i] as LimitResult).retryAfterMs
      retryAfterMs = Math.max(retryAfterMs, wait)
      return { name: limit.name, limit: limit.limit, windowSeconds: Math.max(1, Math.round(windowMsOf(planned, i) / 1000)), retryAfterSeconds: retryAfterSeconds(wait) }
    })
    this.#emit('throttled', { policy: 'application', appToken: planned.application.appToken, ip: client.ip, requestId: client.requestId, retryAfterMs })
    const first = policies[0] as (typeof policies)[number]
    const which = policies.length === 1 ? `this application's limit "${first.name}" of ${first.limit} requests per ${first.windowSeconds} seconds is used up` : `this application's limits ${policies.map((p) => `"${p.name}"`).join(', ')} are used up`
    const headers = this.#throttledHeaders(planned, results, refused)
    return new ThrottledError(`Too many requests: ${which}; retry in ${retryAfterSeconds(retryAfterMs)} seconds`, retryAfterMs, headers, { policies })
  }

  #throttledHeaders(planned: PlannedLimits, results: readonly LimitResult[], refused: readonly number[]): Record<string, string> {
    const i = refused[0] as number
    const result = results[i] as LimitResult
    return { 'ratelimit-policy': this.#policyHeader(planned), ratelimit: `"${(planned.limits[i] as ResolvedLimit).name}";r=0;t=${Math.ceil(result.retryAfterMs / 1000)}` }
  }
}

/** A limit's window in ms: its `windowMs`, or its quota's current period's length. */
function windowMsOf(planned: PlannedLimits, i: number): number {
  const step = planned.steps[i] as LimitStep
  return step.kind === 'rate' ? step.windowMs : step.periodEnd - step.periodStart
}
