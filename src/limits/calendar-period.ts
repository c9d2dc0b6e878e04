/**
 * The calendar periods of quotas: the day or the month an instant falls in, in a time zone,
 * as epoch milliseconds [start, end). A day is 23 or 25 hours on the days a zone changes
 * its clocks; a period starts at its local midnight, or, where that midnight does not exist
 * (a zone that moves its clocks forward at midnight), at the first instant of the day.
 *
 * Computed with `Intl.DateTimeFormat` (the zone data of the runtime's ICU): no dependency.
 */

/** The calendar period of a quota. */
export type CalendarPeriod = 'day' | 'month'

/** A period as epoch milliseconds: `start` is in it, `end` is the next period's start. */
export interface PeriodBounds {
  readonly start: number
  readonly end: number
}

const DAY_MS = 86_400_000
const formats = new Map<string, Intl.DateTimeFormat>()

/**
 * The day or the month `at` falls in, in the IANA time zone `timeZone` (`'UTC'`,
 * `'Europe/Berlin'`, ...).
 * @throws {TypeError} for a period other than `'day'` or `'month'`, or a time zone the runtime does not know
 * @example
 * periodBounds('month', 'Europe/Berlin', Date.parse('2026-03-15T12:00:00Z'))
 * // { start: Date.parse('2026-02-28T23:00:00Z'), end: Date.parse('2026-03-31T22:00:00Z') }
 */
export function periodBounds(period: CalendarPeriod, timeZone: string, at: number): PeriodBounds {
  if (period !== 'day' && period !== 'month') throw new TypeError(`open-data-gate: a quota's period must be 'day' or 'month', got ${JSON.stringify(period)}`)
  if (!Number.isFinite(at)) throw new TypeError(`open-data-gate: periodBounds needs an instant in epoch ms, got ${String(at)}`)
  const format = formatFor(timeZone)
  const local = new Date(wallOf(format, at))
  const [y, m, d] = [local.getUTCFullYear(), local.getUTCMonth(), local.getUTCDate()]
  const [from, to] = period === 'day' ? [Date.UTC(y, m, d), Date.UTC(y, m, d + 1)] : [Date.UTC(y, m, 1), Date.UTC(y, m + 1, 1)]
  return { start: firstInstantAt(format, from), end: firstInstantAt(format, to) }
}

function formatFor(timeZone: string): Intl.DateTimeFormat {
  let format = formats.get(timeZone)
  if (format === undefined) {
    try {
      format = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' })
    } catch {
      throw new TypeError(`open-data-gate: unknown time zone ${JSON.stringify(timeZone)} (an IANA name such as 'UTC' or 'Europe/Berlin')`)
    }
    formats.set(timeZone, format)
  }
  return format
}

/** The local wall-clock time of `t` in the format's zone, written as if it were UTC (epoch ms). */
function wallOf(format: Intl.DateTimeFormat, t: number): number {
  const n: Record<string, number> = {}
  for (const part of format.formatToParts(t)) if (part.type !== 'literal') n[part.type] = Number(part.value)
  return Date.UTC(n.year!, n.month! - 1, n.day!, n.hour!, n.minute!, n.second!) + (((t % 1000) + 1000) % 1000)
}

/**
 * The first instant whose local time is at or after the wall time `wall`: the instant of
 * that wall time (its first, where clocks went back over it), or the end of the gap it
 * falls in, where clocks went forward over it.
 */
function firstInstantAt(format: Intl.DateTimeFormat, wall: number): number {
  // The zone's offsets a day either side: a wall time is one of them away from its instant.
  const candidates = [wall - DAY_MS, wall, wall + DAY_MS].map((t) => wall - (wallOf(format, t) - t))
  let hi = Infinity
  let lo = -Infinity
  for (const t of candidates) {
    if (wallOf(format, t) >= wall) hi = Math.min(hi, t)
    else lo = Math.max(lo, t)
  }
  if (wallOf(format, hi) === wall || lo === -Infinity || lo >= hi) return hi
  // In a gap: the first instant past lo whose wall time has reached `wall`.
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2)
    if (wallOf(format, mid) >= wall) hi = mid
    else lo = mid
  }
  return hi
}
