/**
 * Usage buckets in this process's memory, for {@link MemoryStore}: a map of buckets by
 * application, granularity and start, and each writer's last sequence. Expired buckets are
 * dropped as batches arrive (a bounded sweep per batch) and never read back.
 */
import { addShadowCounts, USAGE_FIELDS, usageCounts, usageValues, type UsageBatch, type UsageBucket, type UsageGranularity, type UsageTopQuery, type UsageTotal } from '../usage-contract.js'

interface Bucket {
  readonly appToken: string | null
  readonly granularity: UsageGranularity
  readonly start: number
  /** Counts in `USAGE_FIELDS` order. */
  readonly values: number[]
  /** Shadow counts by limit name, at most `MAX_SHADOW_NAMES`. */
  readonly shadow: Record<string, number>
  expiresAt: number
}

/** Expired buckets are swept out at most this often (reads skip them in between). */
const SWEEP_EVERY_MS = 60_000

export class MemoryUsage {
  /** Buckets by `granularity`, then `appToken` ('' for the pool), then start. */
  readonly #buckets = new Map<string, Bucket>()
  readonly #writers = new Map<string, { sequence: number; expiresAt: number }>()
  readonly #clock: () => number
  #nextSweep = 0

  constructor(clock: () => number) {
    this.#clock = clock
  }

  add(batch: UsageBatch): void {
    const now = this.#clock()
    const last = this.#writers.get(batch.writer)
    if (last !== undefined && last.sequence >= batch.sequence && last.expiresAt > now) return
    this.#writers.set(batch.writer, { sequence: batch.sequence, expiresAt: batch.idExpiresAt })
    for (const row of batch.rows) {
      const key = bucketKey(row.appToken, row.granularity, row.start)
      let bucket = this.#buckets.get(key)
      if (bucket === undefined || bucket.expiresAt <= now) {
        bucket = { appToken: row.appToken, granularity: row.granularity, start: row.start, values: USAGE_FIELDS.map(() => 0), shadow: {}, expiresAt: row.expiresAt }
        this.#buckets.set(key, bucket)
      }
      const values = usageValues(row)
      for (let i = 0; i < values.length; i++) (bucket.values[i] as number) += values[i] as number
      addShadowCounts(bucket.shadow, row.shadow)
      if (row.expiresAt > bucket.expiresAt) bucket.expiresAt = row.expiresAt
    }
    this.#sweep(now)
  }

  /** Drops expired buckets and forgotten writers, at most once a minute. */
  #sweep(now: number): void {
    if (now < this.#nextSweep) return
    this.#nextSweep = now + SWEEP_EVERY_MS
    for (const [key, bucket] of this.#buckets) if (bucket.expiresAt <= now) this.#buckets.delete(key)
    for (const [writer, last] of this.#writers) if (last.expiresAt <= now) this.#writers.delete(writer)
  }

  get(appToken: string | null, granularity: UsageGranularity, from: number, to: number): UsageBucket[] {
    const now = this.#clock()
    const found: UsageBucket[] = []
    for (const bucket of this.#buckets.values()) {
      if (bucket.appToken !== appToken || bucket.granularity !== granularity || bucket.start < from || bucket.start >= to || bucket.expiresAt <= now) continue
      found.push({ start: bucket.start, ...usageCounts(bucket.values, { ...bucket.shadow }) })
    }
    return found.sort((a, b) => a.start - b.start)
  }

  top(query: UsageTopQuery): UsageTotal[] {
    const now = this.#clock()
    const totals = new Map<string, { appToken: string; requests: number; throttled: number }>()
    for (const bucket of this.#buckets.values()) {
      if (bucket.appToken === null || bucket.granularity !== query.granularity || bucket.start < query.from || bucket.start >= query.to || bucket.expiresAt <= now) continue
      let total = totals.get(bucket.appToken)
      if (total === undefined) {
        total = { appToken: bucket.appToken, requests: 0, throttled: 0 }
        totals.set(bucket.appToken, total)
      }
      total.requests += bucket.values[0] as number
      total.throttled += bucket.values[1] as number
    }
    return [...totals.values()]
      .filter((t) => t[query.by] > 0)
      .sort((a, b) => b[query.by] - a[query.by] || (a.appToken < b.appToken ? -1 : a.appToken > b.appToken ? 1 : 0))
      .slice(0, query.limit)
  }
}

function bucketKey(appToken: string | null, granularity: UsageGranularity, start: number): string {
  return `${granularity}\u0000${appToken ?? ''}\u0000${start}`
}
