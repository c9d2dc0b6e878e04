/**
 * The generic cell rate algorithm: one number per key (the theoretical arrival time),
 * an exact rate, a burst of `limit`, and an exact time until the next request fits.
 *
 * Times are integer microseconds, so every sum below is exact in a double (2^53 µs is
 * 285 years) and a burst of exactly `limit` requests at one instant is allowed, never
 * `limit - 1` from rounding. The emission interval is rounded up to a whole microsecond,
 * so the real rate never exceeds `limit` per window.
 *
 * Stores run this step atomically: MemoryStore calls {@link gcraStep}; a Redis or SQL
 * store runs the same arithmetic in one script or statement, on the server's clock.
 *
 * @see docs/guides/throttling.md
 */

/** What one throttling step decided. Durations are milliseconds. */
export interface RateResult {
  /** Whether the request fits in the budget. */
  readonly allowed: boolean
  /** Requests still allowed right after this one. */
  readonly remaining: number
  /** Time until the whole budget is available again. */
  readonly resetMs: number
  /** Time until one more request would be allowed (0 while `remaining` > 0). */
  readonly retryAfterMs: number
}

/** One GCRA step with the gate's store-failure mode (`Throttle.consume`): `null` when the store failed and the mode lets requests through. */
export interface RateSpender {
  consume(key: string, limit: number, windowMs: number, cost: number): RateResult | null | PromiseLike<RateResult | null>
}

/** The outcome of {@link gcraStep}: the decision and the arrival time to store (if any). */
export interface GcraOutcome extends RateResult {
  /** The new theoretical arrival time in µs to store, or `undefined` when nothing changes. */
  readonly tat: number | undefined
  /** How long the stored value must live, in ms (it is meaningless once in the past). */
  readonly ttlMs: number
}

/** The emission interval in µs for `limit` requests per `windowMs`. */
export function emissionInterval(limit: number, windowMs: number): number {
  return Math.ceil((windowMs * 1000) / limit)
}

/**
 * One GCRA step.
 * @param storedTat the key's stored arrival time in µs, `undefined` for a fresh key
 * @param nowUs the current time in µs
 * @param cost units to consume (0 reads the state without changing it)
 */
export function gcraStep(storedTat: number | undefined, nowUs: number, limit: number, windowMs: number, cost = 1): GcraOutcome {
  const interval = emissionInterval(limit, windowMs)
  const tat = storedTat === undefined || storedTat < nowUs ? nowUs : storedTat
  const newTat = tat + cost * interval
  // Not `newTat - limit * interval`: past 2^53 µs (a window of centuries) newTat is rounded,
  // and taking the tolerance back off could land a µs after `tat`, refusing a fresh key.
  // `(cost - limit) * interval` is never positive when cost ≤ limit, and rounding keeps
  // order, so a fresh key's allowAt is never later than now.
  const allowAt = tat + (cost - limit) * interval
  if (nowUs < allowAt) {
    return {
      allowed: false,
      remaining: 0,
      resetMs: usToMs(tat - nowUs),
      retryAfterMs: usToMs(allowAt - nowUs),
      tat: undefined,
      ttlMs: 0,
    }
  }
  const remaining = Math.floor((nowUs - allowAt) / interval)
  return {
    allowed: true,
    remaining,
    resetMs: usToMs(newTat - nowUs),
    // When this request took the last unit, the next one fits one interval after allowAt.
    retryAfterMs: remaining > 0 ? 0 : usToMs(allowAt + interval - nowUs),
    tat: cost === 0 ? undefined : newTat,
    ttlMs: Math.ceil((newTat - nowUs) / 1000),
  }
}

function usToMs(us: number): number {
  return us <= 0 ? 0 : Math.ceil(us / 1000)
}
