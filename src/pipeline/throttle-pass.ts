/**
 * The throttle's verdict on a request it let through, as the context and the pipeline see
 * it: a module of its own, so that the throttle and the plans' limits (./plan-limits.ts)
 * both name it without importing each other.
 */
import type { RateResult } from '../limits/gcra.js'
import type { DecisionLimit } from '../rules/decision.js'

/** The throttle's verdict on a request that passed, as `req.gate.throttle` shows it. */
export interface ThrottleInfo {
  /** The budget the request was counted against. */
  readonly policy: 'application' | 'anonymous'
  /** Requests per window for this budget (an application's own limit if it has one). */
  readonly limit: number
  readonly windowMs: number
  /** Requests still allowed right now. */
  readonly remaining: number
  /** Milliseconds until the whole budget is available again. */
  readonly resetMs: number
  /**
   * `'store'` normally; `'local'` while the store is failing and `onStoreError: 'memory'`
   * counts in this process alone (then no `RateLimit` headers are sent: this process's
   * count is not the shared budget); `'lease'` when this process decided it from its lease
   * of the application's budget (`throttle.local`), the headers then telling the store's
   * count when the lease was taken plus the units of the lease not spent yet.
   */
  readonly source: 'store' | 'local' | 'lease'
  /** Under a plan, each of its enforced limits as the request left it (see `DecisionThrottle`). */
  readonly limits?: readonly DecisionLimit[]
}

/** A rate step's result, marked when this process's fallback counted it instead of the store. */
export type CountedRate = RateResult & { readonly local?: true; readonly leased?: true }

/** A passed request's throttle verdict and the headers that announce it. */
export interface ThrottlePass {
  readonly info: ThrottleInfo
  /** Made for this request, so the pipeline adds its own (the request id); or a frozen empty set. */
  readonly headers: Record<string, string>
}
