/**
 * The usage events of a gate (see `GateEvents` in src/events.ts).
 * @see docs/reference/events.md
 */

/**
 * An application has used 80% of its throttle budget: told once per window (per process),
 * the first time it happens, so an operator can warn its developer before the 429s start.
 */
export interface NearLimitEvent {
  readonly appToken: string
  /** The application's limit per window. */
  readonly limit: number
  /** Requests still allowed right now. */
  readonly remaining: number
  readonly windowMs: number
  /** The request that crossed the line (`X-Request-Id`), or `undefined` with `requestId: false`. */
  readonly requestId: string | undefined
}

/** Usage counts were given up: kept flushes past `usage.maxPendingFlushes`, or left unwritten at `close()`. */
export interface UsageDroppedEvent {
  /** How many batches were dropped. */
  readonly flushes: number
  /** How many requests they counted (unknown app tokens included). */
  readonly requests: number
}

/**
 * Writing usage to the store failed or timed out: told once, when a run of failures starts.
 * The counts are kept and sent again with the next flush.
 */
export interface UsageFlushFailedEvent {
  readonly error: unknown
  /** How many batches wait to be written, this one included. */
  readonly pendingFlushes: number
}
