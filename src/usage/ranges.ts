/**
 * The time ranges `gate.usage` reads: what a `from` and `to` mean once they meet the
 * buckets. A bucket is counted whole or not at all, so a range starts at the start of the
 * bucket its `from` falls in; `top` picks buckets small enough that this adds little
 * (a minute to "the last hour", not up to an hour), and the command prints the range used.
 * @see docs/guides/usage.md
 */
import { GRANULARITY_MS, type UsageGranularity } from '../store/usage-contract.js'

/** How many buckets one ranking may add up (Redis sums that many sorted sets in one script). */
export const MAX_TOP_BUCKETS = 4_000

/** `top` adds minute buckets for a range up to this long, hour buckets up to {@link TOP_HOURS_UP_TO}, day buckets beyond. */
export const TOP_MINUTES_UP_TO = 6 * GRANULARITY_MS.hour
/** See {@link TOP_MINUTES_UP_TO}. */
export const TOP_HOURS_UP_TO = 7 * GRANULARITY_MS.day

/** A validated `[from, to)`: `to` defaults to now, `from` to a day before `to`. */
export function usageRange(fromInput: number | undefined, toInput: number | undefined): { from: number; to: number } {
  const to = toInput ?? Date.now()
  const from = fromInput ?? to - GRANULARITY_MS.day
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 0 || from >= to) {
    throw new TypeError(`open-data-gate: a usage range needs integer times (epoch ms) with from before to, got from ${JSON.stringify(fromInput)} and to ${JSON.stringify(toInput)}`)
  }
  return { from, to }
}

/** The range a ranking adds up, as {@link topRange} resolves it. */
export interface TopRange {
  /** The start of the bucket `from` fell in (epoch ms): the ranking counts from here. */
  readonly from: number
  /** As given (epoch ms, excluded): the last bucket counts as far as it has been flushed. */
  readonly to: number
  readonly granularity: UsageGranularity
  /** How many buckets that is. */
  readonly buckets: number
}

/**
 * The buckets a ranking over `[from, to)` adds up: those of `granularity`, by default the
 * smallest that suits the range's length (minutes up to 6 hours, hours up to 7 days, days
 * beyond), from the one `from` falls in.
 * @throws {TypeError} for a bad range or granularity, or more than {@link MAX_TOP_BUCKETS} buckets
 */
export function topRange(fromInput: number | undefined, toInput: number | undefined, granularityInput: UsageGranularity | undefined): TopRange {
  const { from, to } = usageRange(fromInput, toInput)
  const granularity = granularityInput ?? (to - from <= TOP_MINUTES_UP_TO ? 'minute' : to - from <= TOP_HOURS_UP_TO ? 'hour' : 'day')
  if (!Object.hasOwn(GRANULARITY_MS, granularity)) throw new TypeError(`open-data-gate: usage.top() granularity must be 'minute', 'hour' or 'day', got ${JSON.stringify(granularity)}`)
  const step = GRANULARITY_MS[granularity]
  const first = from - (from % step)
  const buckets = Math.ceil((to - first) / step)
  if (buckets > MAX_TOP_BUCKETS) throw new TypeError(`open-data-gate: usage.top() would add up more than ${MAX_TOP_BUCKETS} ${granularity} buckets: narrow the range or rank by ${granularity === 'minute' ? 'hour' : 'day'}`)
  return { from: first, to, granularity, buckets }
}
