/** The shape of every rate option (`throttle.application`, the failure budgets, `selfServiceBudget`, …). */

/** `limit` requests per `windowMs`, with a burst of up to `limit`. */
export interface RatePolicyOptions {
  /** Requests per window, a positive integer. */
  limit: number
  /** The window in milliseconds, a positive integer. */
  windowMs: number
}
