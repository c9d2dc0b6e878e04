/**
 * The budget of one user's requests to the self-service endpoints (`selfServiceBudget`):
 * GCRA on the rate store through the throttle's own machinery (its store-failure mode, its
 * memory of keys over their limit), under `self-service:<user id>`, apart from every
 * application's budget. A request costs one unit; a usage read costs one more per
 * {@link BUCKETS_PER_UNIT} buckets it spans, since the store's work grows with them.
 *
 * @see docs/guides/applications.md "What a request sends"
 */
import { retryAfterSeconds, ThrottledError } from '../errors.js'
import type { Emit } from '../events.js'
import type { RatePolicyOptions } from '../config/options.js'
import type { ClientInfo } from '../http/proxy.js'
import { selfServiceRateKey } from '../limits/rate-keys.js'
import type { Throttle } from '../pipeline/throttle.js'

/** A usage read costs one unit more per this many buckets. */
export const BUCKETS_PER_UNIT = 100

/** What a usage read of `buckets` buckets costs: a day by the hour 1, a day by the minute 15. */
export function usageReadCost(buckets: number): number {
  return 1 + Math.floor(buckets / BUCKETS_PER_UNIT)
}

/** The request a budget is spent for: who asked, for the `throttled` event. */
export type BudgetClient = Pick<ClientInfo, 'ip' | 'requestId'>

/** Spends the users' budgets of the self-service endpoints. */
export class SelfServiceBudget {
  readonly #policy: RatePolicyOptions | null
  readonly #throttle: Throttle
  readonly #emit: Emit
  readonly #policyHeader: string

  constructor(policy: RatePolicyOptions | null, throttle: Throttle, emit: Emit) {
    this.#policy = policy
    this.#throttle = throttle
    this.#emit = emit
    this.#policyHeader = policy === null ? '' : `"self-service";q=${policy.limit};w=${Math.max(1, Math.round(policy.windowMs / 1000))}`
  }

  /**
   * Spends `cost` units of the user's budget.
   * @returns the `RateLimit` headers for the answer (none with the budget off, or while the
   * store fails and the throttle fails open or counts in this process alone)
   * @throws {ThrottledError} 429 `too_many_requests`, with `Retry-After`, when it is spent
   * @throws {StoreError} when the store fails and the throttle fails closed
   */
  async spend(userId: string, cost: number, client: BudgetClient): Promise<Record<string, string>> {
    const policy = this.#policy
    if (policy === null) return {}
    // A read that costs more than the whole budget could never pass: it costs the whole budget.
    const result = await this.#throttle.consume(selfServiceRateKey(userId), policy.limit, policy.windowMs, Math.min(cost, policy.limit))
    if (result === null) return {}
    const headers: Record<string, string> =
      result.local === true
        ? {}
        : {
            'ratelimit-policy': this.#policyHeader,
            ratelimit: `"self-service";r=${result.remaining};t=${Math.ceil((result.remaining > 0 ? result.resetMs : result.retryAfterMs) / 1000)}`,
          }
    if (result.allowed) return headers
    this.#emit('throttled', { policy: 'self-service', appToken: undefined, ip: client.ip, requestId: client.requestId, retryAfterMs: result.retryAfterMs })
    const windowS = Math.round(policy.windowMs / 1000)
    return Promise.reject(
      new ThrottledError(
        `Too many requests to your account's endpoints: ${policy.limit} per ${windowS} seconds per user (a usage read costs 1 more per ${BUCKETS_PER_UNIT} buckets); retry in ${retryAfterSeconds(result.retryAfterMs)} seconds`,
        result.retryAfterMs,
        headers,
      ),
    )
  }
}
