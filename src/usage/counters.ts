/**
 * The counters on the request path: one map per minute, keyed by app token (`null` for
 * the anonymous pool), of small mutable cells. Counting a request is `Date.now()`, one map
 * lookup and an add; a cell is made once per application per minute, never per request.
 * Only applications the gate found registered get a cell: a made-up token is one number.
 */
import { addShadowCounts, GRANULARITY_MS, MAX_SHADOW_NAMES, type UsageGranularity, type UsageRow } from '../store/usage-contract.js'

/** One application's counts in one minute. */
export class UsageCell {
  requests = 0
  throttled = 0
  refused = 0
  /** Of `refused`, refused because the application is suspended. */
  suspended = 0
  /** Requests each shadow limit would have refused, by name; `null` until one would have (most cells). */
  shadow: Map<string, number> | null = null
  s2xx = 0
  s3xx = 0
  s4xx = 0
  s5xx = 0
  unknown = 0
}

/**
 * Counts a request the gate answered itself: a 429 as throttled, another 4xx as refused,
 * and any other answer (its own endpoints' 2xx, a 503 while the store is away, a 500) in
 * its status class, so that every request falls in exactly one of the counts.
 */
export function countGateAnswer(cell: UsageCell, status: number): void {
  cell.requests++
  if (status === 429) cell.throttled++
  else if (status >= 400 && status < 500) cell.refused++
  else countStatus(cell, status)
}

/**
 * Counts a request in every shadow limit that would have refused it, by name: at most
 * {@link MAX_SHADOW_NAMES} names per cell, the first ones seen; another name is not kept.
 */
export function countShadow(cell: UsageCell, names: readonly string[]): void {
  const shadow = (cell.shadow ??= new Map())
  for (const name of names) {
    const count = shadow.get(name)
    if (count !== undefined) shadow.set(name, count + 1)
    else if (shadow.size < MAX_SHADOW_NAMES) shadow.set(name, 1)
  }
}

/** Counts an answer in its status class; a 101 (a protocol switched) counts as 2xx, anything past 599 as 5xx, so that every answer has one. */
export function countStatus(cell: UsageCell, status: number): void {
  if (status < 300) cell.s2xx++
  else if (status >= 300 && status < 400) cell.s3xx++
  else if (status >= 400 && status < 500) cell.s4xx++
  else cell.s5xx++
}

/** A finished (or the current) minute's cells. */
interface Minute {
  readonly start: number
  readonly cells: Map<string | null, UsageCell>
}

const MINUTE_MS = GRANULARITY_MS.minute

export class UsageCounters {
  #minute: Minute = { start: 0, cells: new Map() }
  #minuteEnd = 0
  /** Minutes that ended since the last {@link take}, oldest first. */
  #ended: Minute[] = []

  /** The cell of `appToken` in the current minute. */
  cell(appToken: string | null): UsageCell {
    const now = Date.now()
    if (now >= this.#minuteEnd) this.#roll(now)
    const cells = this.#minute.cells
    let cell = cells.get(appToken)
    if (cell === undefined) {
      cell = new UsageCell()
      cells.set(appToken, cell)
    }
    return cell
  }

  #roll(now: number): void {
    if (this.#minute.cells.size > 0) this.#ended.push(this.#minute)
    const start = now - (now % MINUTE_MS)
    this.#minute = { start, cells: new Map() }
    this.#minuteEnd = start + MINUTE_MS
  }

  /** Whether anything was counted since the last {@link take}. */
  get empty(): boolean {
    return this.#ended.length === 0 && this.#minute.cells.size === 0
  }

  /**
   * Everything counted since the last call, as rows of minute, hour and day buckets (each
   * bucket once), and starts afresh. A request counted after this goes to the next batch.
   */
  take(retention: { readonly minuteMs: number; readonly hourMs: number; readonly dayMs: number }): UsageRow[] {
    const minutes = this.#ended
    if (this.#minute.cells.size > 0) minutes.push(this.#minute)
    this.#ended = []
    this.#minute = { start: this.#minute.start, cells: new Map() }
    const rows = new Map<string, MutableRow>()
    const add = (appToken: string | null, granularity: UsageGranularity, start: number, keepMs: number, cell: UsageCell) => {
      const key = `${granularity}\u0000${start}\u0000${appToken ?? ''}`
      let row = rows.get(key)
      if (row === undefined) {
        row = {
          appToken,
          granularity,
          start,
          expiresAt: start + GRANULARITY_MS[granularity] + keepMs,
          requests: 0,
          throttled: 0,
          refused: 0,
          suspended: 0,
          shadow: {},
          statuses: { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 },
          unknownAppToken: 0,
        }
        rows.set(key, row)
      }
      row.requests += cell.requests
      row.throttled += cell.throttled
      row.refused += cell.refused
      row.suspended += cell.suspended
      // An hour's or a day's row adds up many minutes: it keeps the same bound as a bucket.
      if (cell.shadow !== null) addShadowCounts(row.shadow, Object.fromEntries(cell.shadow))
      row.statuses['2xx'] += cell.s2xx
      row.statuses['3xx'] += cell.s3xx
      row.statuses['4xx'] += cell.s4xx
      row.statuses['5xx'] += cell.s5xx
      row.unknownAppToken += cell.unknown
    }
    for (const { start, cells } of minutes) {
      const hour = start - (start % GRANULARITY_MS.hour)
      const day = start - (start % GRANULARITY_MS.day)
      for (const [appToken, cell] of cells) {
        if (isEmpty(cell)) continue
        add(appToken, 'minute', start, retention.minuteMs, cell)
        add(appToken, 'hour', hour, retention.hourMs, cell)
        add(appToken, 'day', day, retention.dayMs, cell)
      }
    }
    return [...rows.values()]
  }
}

type MutableRow = {
  -readonly [K in keyof UsageRow]: K extends 'statuses' ? { -readonly [S in keyof UsageRow['statuses']]: number } : K extends 'shadow' ? Record<string, number> : UsageRow[K]
}

function isEmpty(cell: UsageCell): boolean {
  return cell.requests === 0 && cell.unknown === 0 && cell.s2xx === 0 && cell.s3xx === 0 && cell.s4xx === 0 && cell.s5xx === 0
}
