/**
 * The rates slice: one atomic GCRA step per call. Every gate needs it (the throttle, the
 * failed-sign-in budgets, the OAuth endpoints' budget), from `store` or from a separate
 * `rateStore`.
 */
import type { RateResult } from '../../limits/gcra.js'
import type { Awaitable, StoreLifecycle } from './lifecycle.js'

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
  /** Forgets a rate key (an operator lifting a block). */
  resetRate(key: string): Awaitable<void>
}
