/**
 * The usage events of a gate (see `GateEvents` in src/events.ts).
 * @see docs/reference/events.md
 */

/**
 * An application crossed a share of one of its limits (`nearLimit.thresholds`: 80%, 90% and
 * 100% by default; each limit and quota of its plan on its own): told once per limit and
 * threshold per window, by one instance of all those sharing the
 * store, so an operator can warn its developer before the 429s start.
 */
export interface NearLimitEvent {
  readonly appToken: string
  /** The limit crossed: its name in the application's plan, or `app` for a limit of its own. */
  readonly name: string
  /** The share of the limit crossed: 0.8 for 80%, 1 when the budget is used up. */
  readonly threshold: number
  /** The application's limit per window. */
  readonly limit: number
  /** Requests still allowed when it was crossed. */
  readonly remaining: number
  readonly windowMs: number
  /** The request that crossed it (`X-Request-Id`), or `undefined` with `requestId: false`. */
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
