/**
 * Near-limit alerts: when an application's requests cross a share of any of its limits (80%,
 * 90% and 100% by default; each limit and quota of its plan on its own), the gate says so
 * once per limit and threshold per window, across all its instances: the `nearLimit` event, the `open_data_gate.near_limit` counter, and, when the
 * operator configured one, a signed webhook (./webhook.ts).
 *
 * Which instance reports is decided by the rate store: the first to take the one unit of
 * `near-limit:<app token>:<limit>:<percent>:<window>` (a GCRA key of limit 1 for the window) reports;
 * the others are refused and stay quiet. Each process also remembers what it reported, so a
 * busy application costs the store one call per threshold per window per process, not one
 * per request. While the store fails, a process reports on its own count (an alert twice is
 * better than none at 100%).
 *
 * A window is the limit's `windowMs`, counted from the epoch, or a quota's period: an
 * application that stays near its limit is told again in the next window ({@link alertWindow}).
 * @see docs/guides/usage.md "Near-limit alerts"
 */
import type { Emit } from '../events.js'
import type { NearLimitEvent } from './events.js'
import type { GateLog } from '../log/logger.js'
import { nearLimitRateKey } from '../limits/rate-keys.js'
import type { DecisionLimit, DecisionThrottle } from '../rules/decision.js'
import type { RateStore } from '../store/store.js'
import { isPromiseLike } from '../util/awaitable.js'
import { optionsObject } from '../util/validate.js'
import { resolveWebhook, WebhookSender, type ResolvedWebhook, type WebhookOptions } from './webhook.js'

/** The `nearLimit` option of {@link createGate}. */
export interface NearLimitOptions {
  /**
   * The shares of a limit at which an application is reported, each once per window:
   * fractions above 0 and at most 1. Default `[0.8, 0.9, 1]` (1: the budget is used up).
   */
  thresholds?: readonly number[]
  /** Also deliver each alert to this endpoint of the operator's, signed as Standard Webhooks says. */
  webhook?: WebhookOptions
}

/** The alerts a gate runs on; `null` with `nearLimit: false`. */
export interface ResolvedNearLimit {
  /** Ascending. */
  readonly thresholds: readonly number[]
  readonly webhook: ResolvedWebhook | null
}

/** Processes remember this many (application, threshold) pairs as reported, at most. */
const MAX_REMEMBERED = 100_000

/** Resolves and validates the `nearLimit` option. @throws {TypeError} naming the bad option */
export function resolveNearLimit(input: NearLimitOptions | false | undefined): ResolvedNearLimit | null {
  if (input === false) return null
  const options = optionsObject('nearLimit', input ?? {}, ['thresholds', 'webhook'])
  const thresholds = options.thresholds ?? [0.8, 0.9, 1]
  if (!Array.isArray(thresholds) || thresholds.length === 0 || thresholds.length > 10) throw new TypeError('open-data-gate: nearLimit.thresholds must be a list of 1 to 10 fractions, such as [0.8, 0.9, 1]')
  for (const threshold of thresholds) {
    if (typeof threshold !== 'number' || !(threshold > 0 && threshold <= 1)) throw new TypeError(`open-data-gate: nearLimit.thresholds takes fractions above 0 and at most 1 (0.8 for 80%), got ${JSON.stringify(threshold)}`)
  }
  const sorted = [...new Set(thresholds)].sort((a, b) => a - b)
  return { thresholds: sorted, webhook: options.webhook === undefined ? null : resolveWebhook('nearLimit.webhook', options.webhook) }
}

/**
 * Which window an alert is told once in: a rolling limit's `windowMs` counted from the
 * epoch; a quota's period, by its start. The owner's view reads the same key.
 */
export function alertWindow(windowMs: number, periodStart: number | null, now: number): number {
  return periodStart ?? Math.floor(now / windowMs)
}

/** Reports applications near their limits. */
export class NearLimitAlerts {
  readonly #thresholds: readonly number[]
  /** The lowest threshold: a request below it costs one comparison. */
  readonly #lowest: number
  readonly #claims: Pick<RateStore, 'consumeRate'>
  readonly #emit: Emit
  readonly #webhook: WebhookSender | null
  /** The window each (application, limit, threshold) was last reported in, by this process. */
  readonly #reported = new Map<string, number>()

  /** @param claims the guarded rate store, which decides which instance reports */
  constructor(config: ResolvedNearLimit, claims: Pick<RateStore, 'consumeRate'>, emit: Emit, log: GateLog) {
    this.#thresholds = config.thresholds
    this.#lowest = config.thresholds[0] as number
    this.#claims = claims
    this.#emit = emit
    this.#webhook = config.webhook === null ? null : new WebhookSender(config.webhook, log)
  }

  /** A request let through against `appToken`'s budget, with the throttle's verdict. */
  seen(appToken: string, throttle: DecisionThrottle, requestId: string | undefined): void {
    const limits = throttle.limits
    if (limits !== undefined) {
      for (const limit of limits) this.#seenLimit(appToken, limit, requestId)
      return
    }
    // One limit of its own: the cheap comparison first, the limit's record only past it.
    if (throttle.limit - throttle.remaining < throttle.limit * this.#lowest) return
    this.#seenLimit(appToken, { name: 'app', limit: throttle.limit, remaining: throttle.remaining, windowMs: throttle.windowMs, periodStart: null }, requestId)
  }

  #seenLimit(appToken: string, { name, limit, remaining, windowMs, periodStart }: DecisionLimit, requestId: string | undefined): void {
    const used = limit - remaining
    if (used < limit * this.#lowest) return
    const window = alertWindow(windowMs, periodStart, Date.now())
    for (const threshold of this.#thresholds) {
      if (used < limit * threshold) break
      const key = `${appToken}\u0000${name}\u0000${threshold}`
      if (this.#reported.get(key) === window) continue
      if (this.#reported.size >= MAX_REMEMBERED) this.#reported.clear()
      this.#reported.set(key, window)
      this.#claim({ appToken, name, threshold, limit, remaining, windowMs, requestId }, window)
    }
  }

  /** Reports `alert` when this instance is the first to claim it in the store. */
  #claim(alert: NearLimitEvent, window: number): void {
    let claimed: ReturnType<RateStore['consumeRate']>
    try {
      claimed = this.#claims.consumeRate(nearLimitRateKey(alert.appToken, alert.name, alert.threshold, window), 1, alert.windowMs, 1)
    } catch {
      this.#report(alert)
      return
    }
    if (!isPromiseLike(claimed)) {
      if (claimed.allowed) this.#report(alert)
      return
    }
    Promise.resolve(claimed).then(
      (result) => {
        if (result.allowed) this.#report(alert)
      },
      () => this.#report(alert),
    )
  }

  #report(alert: NearLimitEvent): void {
    this.#emit('nearLimit', alert)
    this.#webhook?.send('application.near_limit', { ...alert, requestId: alert.requestId ?? null })
  }

  /** Stops retrying deliveries still waiting. */
  close(): void {
    this.#webhook?.close()
  }
}
