/**
 * The rates slice: one atomic GCRA step per call. Every gate needs it (the throttle, the
 * failed-sign-in budgets, the OAuth endpoints' budget), from `store` or from a separate
 * `rateStore`.
 */
import type { RateResult } from '../../limits/gcra.js'
import type { LimitResult, LimitStep } from '../../limits/limit-steps.js'
import type { Awaitable, StoreLifecycle } from './lifecycle.js'

export type { LimitResult, LimitStep, QuotaLimitStep, RateLimitStep } from '../../limits/limit-steps.js'

/**
 * The rates slice, and what the gate needs of a store that only counts requests: the
 * `rateStore` option, for a deployment that keeps records in one store (PostgreSQL) and
 * rate counters in another (Redis).
 */
export interface RateStore extends StoreLifecycle {
  /**
   * One atomic throttling step for `key`: `limit` requests per `windowMs`, consuming
   * `cost` units (0 reads without consuming). Implement with {@link "open-data-gate"!gcraStep | gcraStep} semantics,
   * on the store's own clock so that every instance agrees.
   */
  consumeRate(key: string, limit: number, windowMs: number, cost: number): Awaitable<RateResult>
  /** Forgets a rate key (an operator lifting a block), or a quota's counter under it. */
  resetRate(key: string): Awaitable<void>
  /**
   * Optional: several limits of one request decided **all or nothing**, atomically, in one
   * round trip. Each step is a GCRA rate (`kind: 'rate'`, exactly as {@link consumeRate}
   * takes it, on the same stored state) or a calendar quota (`kind: 'quota'`: at most
   * `limit` units in [periodStart, periodEnd), whole again at periodEnd); keys are distinct.
   *
   * - When every step allows, every step is taken; each result is its own step's answer.
   * - When any step refuses, **none** is taken (no count moves): a refused step answers its
   *   refusal (`allowed: false`), a step that would have fitted answers `allowed: true`
   *   with its limit as it is (what a read with `cost` 0 answers).
   * - Concurrent calls on the same keys never both pass when only one fits, and a refused
   *   call never spends another limit. `cost` 0 reads without consuming.
   * - A quota's counter is kept until its period's end (at least a minute after it is
   *   written) and carries its period: a count of an earlier period never counts in a
   *   later one; a step of an earlier period than the stored counter's counts in the stored
   *   one. A quota's `resetMs` is the time to its period's end (0 while nothing is used),
   *   and so is `retryAfterMs` once it is used up.
   *
   * {@link "open-data-gate"!limitsStep | limitsStep} computes the answers from the stored states. A store without the method
   * serves plans of one limit only (the gate says so when it is made). RedisStore runs it
   * as one script, which on Redis Cluster needs every key in one hash slot: keys made with
   * {@link "open-data-gate"!limitRateKey | limitRateKey} of one subject are.
   *
   * @see docs/reference/store-contract.md#several-limits-at-once-consumelimits
   */
  consumeLimits?(steps: readonly LimitStep[]): Awaitable<LimitResult[]>
}
