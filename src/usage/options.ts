/**
 * The `usage` option of {@link createGate}: usage counting, on by default.
 * @see docs/guides/usage.md
 */
import { optionsObject, positiveInteger } from '../util/validate.js'
import type { UsageBatch } from '../store/usage-contract.js'

/** How long the stores keep buckets of each granularity, in ms. */
export interface UsageRetentionOptions {
  /** Minute buckets. Default 48 hours. */
  minuteMs?: number
  /** Hour buckets. Default 90 days. */
  hourMs?: number
  /** Day buckets. Default 2 years (730 days). */
  dayMs?: number
}

/** Usage counting: per application, in minute, hour and day buckets, flushed to the store. */
export interface UsageOptions {
  /**
   * How often each process writes its counts to the store, in ms: one batched write per
   * interval (and one on `gate.close()`). A crash loses at most this much. Default 10 000.
   */
  flushIntervalMs?: number
  /** How long buckets are kept. */
  retention?: UsageRetentionOptions
  /**
   * How many flushes that failed are kept to be retried, at most; past that the oldest is
   * dropped and the `usageDropped` event says how many requests it held. Default 360 (an
   * hour of outage at the default interval).
   */
  maxPendingFlushes?: number
  /**
   * Called with every batch once the store has it (plain objects): to ship usage to an
   * analytics database as well. A hook that throws or rejects becomes a process warning;
   * it is not called again for the same batch.
   */
  onFlush?: (batch: UsageBatch) => void | Promise<void>
}

/** The usage configuration a gate runs on; `null` in the resolved config when `usage: false`. */
export interface ResolvedUsage {
  readonly flushIntervalMs: number
  readonly retention: { readonly minuteMs: number; readonly hourMs: number; readonly dayMs: number }
  readonly maxPendingFlushes: number
  readonly onFlush: ((batch: UsageBatch) => void | Promise<void>) | null
}

const DAY_MS = 86_400_000

/** Resolves and validates the `usage` option. @throws {TypeError} naming the bad option. */
export function resolveUsage(input: UsageOptions | false | undefined): ResolvedUsage | null {
  if (input === false) return null
  const usage = optionsObject('usage', input ?? {}, ['flushIntervalMs', 'retention', 'maxPendingFlushes', 'onFlush'])
  const retention = optionsObject('usage.retention', usage.retention ?? {}, ['minuteMs', 'hourMs', 'dayMs'])
  const resolved: ResolvedUsage = {
    flushIntervalMs: usage.flushIntervalMs ?? 10_000,
    retention: { minuteMs: retention.minuteMs ?? 2 * DAY_MS, hourMs: retention.hourMs ?? 90 * DAY_MS, dayMs: retention.dayMs ?? 730 * DAY_MS },
    maxPendingFlushes: usage.maxPendingFlushes ?? 360,
    onFlush: usage.onFlush ?? null,
  }
  positiveInteger('usage.flushIntervalMs', resolved.flushIntervalMs)
  positiveInteger('usage.retention.minuteMs', resolved.retention.minuteMs)
  positiveInteger('usage.retention.hourMs', resolved.retention.hourMs)
  positiveInteger('usage.retention.dayMs', resolved.retention.dayMs)
  positiveInteger('usage.maxPendingFlushes', resolved.maxPendingFlushes)
  if (resolved.onFlush !== null && typeof resolved.onFlush !== 'function') throw new TypeError('open-data-gate: usage.onFlush must be a function')
  return resolved
}
