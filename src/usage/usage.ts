/**
 * `gate.usage`: what the gate counts per application, and reading it back.
 *
 * On the request path the gate only increments counters in this process's memory
 * ({@link UsageCounters}); every `usage.flushIntervalMs` (and on `gate.close()`) one batch
 * goes to the store in one write. A batch that fails or times out is kept and sent again,
 * with the same sequence number, so that the store counts it once even when the first
 * attempt did land; at most `maxPendingFlushes` are kept, the oldest dropped first (the
 * `usageDropped` event says how many requests that lost).
 *
 * @see docs/guides/usage.md
 */
import { StoreError } from '../errors.js'
import type { Emit } from '../events.js'
import { messageOf, type GateLog } from '../log/logger.js'
import type { Decision } from '../rules/decision.js'
import { randomToken } from '../secrets/tokens.js'
import type { Awaitable, GateStore } from '../store/store.js'
import { GRANULARITY_MS, keepsUsage, NO_USAGE, type UsageBatch, type UsageBucket, type UsageGranularity, type UsageStore } from '../store/usage-contract.js'
import { countGateAnswer, countShadow, countStatus, UsageCounters } from './counters.js'
import type { ResolvedUsage } from './options.js'
import { topRange, usageRange as range } from './ranges.js'

/** What {@link GateUsage.query} reads. */
export interface UsageQuery {
  /** The application, or `null` for the anonymous pool (requests without an app token). */
  appToken: string | null
  /** From this time (epoch ms; the bucket it falls in is included). Default: 24 hours before `to`. */
  from?: number
  /** Up to this time (epoch ms, excluded). Default: now. */
  to?: number
  /** Default `'hour'`. */
  granularity?: UsageGranularity
}

/** An application's usage over time, as {@link GateUsage.query} answers. */
export interface UsageSeries {
  readonly appToken: string | null
  readonly granularity: UsageGranularity
  /** Every bucket of the range, oldest first, empty ones included (all counts 0). */
  readonly buckets: readonly UsageBucket[]
}

/** What {@link GateUsage.top} ranks. */
export interface UsageTopOptions {
  /** From this time (epoch ms). Default: 24 hours before `to`. */
  from?: number
  /** Up to this time (epoch ms). Default: now. */
  to?: number
  /** How many applications, 1 to 1000. Default 10. */
  limit?: number
  /** Rank by requests (default) or by requests answered 429. */
  by?: 'requests' | 'throttled'
  /**
   * Which buckets to add up, from the one `from` falls in. Default: `'minute'` for a range
   * of up to 6 hours, `'hour'` up to 7 days, else `'day'`.
   */
  granularity?: UsageGranularity
}

/** One application of {@link GateUsage.top}'s ranking. */
export interface UsageTopEntry {
  readonly appToken: string
  /** Its name, or `null` when the application was deleted since. */
  readonly name: string | null
  readonly requests: number
  readonly throttled: number
}

/** How many buckets one query may span. */
const MAX_BUCKETS = 10_000
/** A batch is retried for at most this long; the stores remember its writer's sequence as long. */
const RETRY_FOR_MS = 86_400_000

/**
 * The usage of a gate: `gate.usage`. Counts every request the gate decides against its
 * application (or the anonymous pool), in minute, hour and day buckets kept by the store.
 */
/** Whether this process has said that its store keeps no usage. */
let warnedUnsupported = false

/** What `gate.usage` is made of; made by the gate. */
export interface GateUsageParts {
  /** The resolved `usage` section; `null` with `usage: false`. */
  readonly config: ResolvedUsage | null
  /** The store as configured: whether it keeps usage, and where the batches are written. */
  readonly store: GateStore
  /** `storeTimeoutMs`: a flush waits at least this long. */
  readonly storeTimeoutMs: number
  readonly emit: Emit
  readonly log: GateLog
  /** The guarded store, which `query` and `top` read through (its timeout and outage handling); `store` when left out. */
  readonly reads?: GateStore
}

export class GateUsage {
  /** Whether this gate counts usage: on unless `usage: false`, or the store keeps none and no `onFlush` takes it. */
  readonly counting: boolean
  readonly #config: ResolvedUsage | null
  readonly #store: (GateStore & UsageStore) | null
  readonly #reads: GateStore
  readonly #emit: Emit
  readonly #log: GateLog
  readonly #timeoutMs: number
  readonly #counters = new UsageCounters()
  readonly #writer = randomToken(12)
  #sequence = 0
  readonly #pending: UsageBatch[] = []
  #queue: Promise<void> = Promise.resolve()
  #timer: NodeJS.Timeout | undefined
  #failing = false
  #closed = false

  /** @internal made by the gate */
  constructor(parts: GateUsageParts) {
    const { config, store, storeTimeoutMs, emit, log } = parts
    this.#config = config
    this.#reads = parts.reads ?? store
    this.#emit = emit
    this.#log = log
    this.#store = keepsUsage(store) ? store : null
    this.#timeoutMs = Math.max(storeTimeoutMs, Math.min(config?.flushIntervalMs ?? 0, 30_000))
    this.counting = config !== null && (this.#store !== null || config.onFlush !== null)
    if (config !== null && this.#store === null && !warnedUnsupported) {
      // Once per process: the gates of one process are usually made over one kind of store.
      warnedUnsupported = true
      log.warn(
        this.counting
          ? 'open-data-gate: the store does not keep usage (addUsage, getUsage, topUsage): usage batches go to usage.onFlush only, and gate.usage.query() and top() have nothing to read.'
          : 'open-data-gate: the store does not keep usage (addUsage, getUsage, topUsage), so the gate counts none. Use a store that does, give usage.onFlush, or set usage: false.',
        { code: 'ODG_USAGE_UNSUPPORTED' },
      )
    }
    if (this.counting && config !== null) {
      this.#timer = setInterval(() => {
        this.flush().catch(() => {})
      }, config.flushIntervalMs)
      this.#timer.unref()
    }
  }

  // ---- counting (the gate's request path) ----

  /**
   * Counts a decided request, from its one record (src/rules/decision.ts): against the
   * application whose budget it counted in (an OAuth token's application when it named
   * none), or the anonymous pool, where the gate's own endpoints that no application pays
   * for count too; a made-up app token as one number, never in a bucket of its own. A
   * request let through is counted here, and its status class when the host answered. A
   * refusal of a suspended application is also counted as `suspended` (a part of
   * `refused`), and a request a shadow limit would have refused under that limit's name.
   * @internal
   */
  count(decision: Decision): void {
    if (!this.counting) return
    if (decision.unknownAppToken) {
      this.#counters.cell(null).unknown++
      return
    }
    const appToken = decision.appToken
    const cell = this.#counters.cell(appToken)
    if (decision.shadowed.length > 0) countShadow(cell, decision.shadowed)
    if (decision.status !== null) {
      countGateAnswer(cell, decision.status)
      if (decision.suspended && decision.outcome === 'refused') cell.suspended++
      return
    }
    cell.requests++
  }

  /**
   * Counts the host's final answer to a request the gate let through. Adapters call it
   * when the response has been sent (node:http's `finish`); a custom adapter should too.
   * @param context the request's `GateContext` (`req.gate`, `ctx.state.gate`)
   * @param status the status the host answered with
   */
  responded(context: { readonly application: { readonly appToken: string } | null }, status: number): void {
    if (!this.counting) return
    const application = context.application
    countStatus(this.#counters.cell(application === null ? null : application.appToken), status)
  }

  // ---- flushing ----

  /**
   * Writes this process's counts to the store now (the gate also does every
   * `usage.flushIntervalMs`, and on `close()`), after any earlier flush that failed.
   * Concurrent calls run one after the other.
   * @throws {StoreError} when the store failed or timed out: the counts are kept and sent
   * again by the next flush
   */
  flush(): Promise<void> {
    if (!this.counting) return Promise.resolve()
    const run = this.#queue.then(() => this.#flushNow())
    this.#queue = run.catch(() => {})
    return run
  }

  async #flushNow(): Promise<void> {
    const config = this.#config as ResolvedUsage
    if (!this.#counters.empty) this.#enqueue(config)
    while (this.#pending.length > 0) {
      const batch = this.#pending[0] as UsageBatch
      if (batch.idExpiresAt <= Date.now()) {
        this.#drop(1)
        continue
      }
      try {
        if (this.#store !== null) await this.#write(this.#store, batch)
      } catch (error) {
        if (!this.#failing) {
          this.#failing = true
          this.#emit('usageFlushFailed', { error, pendingFlushes: this.#pending.length })
        }
        throw error instanceof StoreError ? error : new StoreError('addUsage', error)
      }
      this.#failing = false
      this.#pending.shift()
      await this.#hook(config, batch)
    }
  }

  #enqueue(config: ResolvedUsage): void {
    const now = Date.now()
    const rows = this.#counters.take(config.retention)
    if (rows.length === 0) return
    this.#pending.push({ writer: this.#writer, sequence: ++this.#sequence, createdAt: now, idExpiresAt: now + RETRY_FOR_MS, rows })
    if (this.#pending.length > config.maxPendingFlushes) this.#drop(this.#pending.length - config.maxPendingFlushes)
  }

  /** @internal the batches waiting for the store after a failed write, and their rows (the backlog metrics) */
  get backlog(): { readonly batches: number; readonly rows: number } {
    return { batches: this.#pending.length, rows: this.#pending.reduce((sum, batch) => sum + batch.rows.length, 0) }
  }

  /** Gives up on the oldest `count` batches, and says how many requests they held. */
  #drop(count: number): void {
    const dropped = this.#pending.splice(0, count)
    let requests = 0
    for (const batch of dropped) for (const row of batch.rows) if (row.granularity === 'minute') requests += row.requests + row.unknownAppToken
    this.#emit('usageDropped', { flushes: dropped.length, requests })
  }

  /** One `addUsage`, failing after the flush timeout (the write may still land: the retry is then not counted). */
  #write(store: UsageStore, batch: UsageBatch): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new StoreError('addUsage', new Error(`store call timed out after ${this.#timeoutMs} ms`))), this.#timeoutMs)
      let result: Awaitable<void>
      try {
        result = store.addUsage(batch)
      } catch (error) {
        clearTimeout(timer)
        reject(error)
        return
      }
      Promise.resolve(result).then(
        () => {
          clearTimeout(timer)
          resolve()
        },
        (error: unknown) => {
          clearTimeout(timer)
          reject(error)
        },
      )
    })
  }

  async #hook(config: ResolvedUsage, batch: UsageBatch): Promise<void> {
    if (config.onFlush === null) return
    try {
      await config.onFlush(batch)
    } catch (error) {
      this.#log.warn(`open-data-gate: usage.onFlush threw: ${messageOf(error)}`, { code: 'ODG_USAGE_ONFLUSH_THREW' })
    }
  }

  /**
   * Stops the timer and flushes what is left (the gate's `close()` calls it). A flush that
   * fails here loses its counts, and says so in `usageDropped`.
   * @internal
   */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    clearInterval(this.#timer)
    try {
      await this.flush()
    } catch {
      if (this.#pending.length > 0) this.#drop(this.#pending.length)
    }
  }

  // ---- reading ----

  /**
   * An application's usage over a time range, bucket by bucket, as the store has it
   * (counts still in a process's memory arrive with its next flush: call {@link flush}
   * first to include this process's).
   * @example
   * const { buckets } = await gate.usage.query({ appToken, from: Date.now() - 86_400_000, granularity: 'hour' })
   * @throws {TypeError} for a bad range or granularity, or more than 10 000 buckets
   */
  async query(query: UsageQuery): Promise<UsageSeries> {
    if (typeof query !== 'object' || query === null || !('appToken' in query)) throw new TypeError('open-data-gate: usage.query() takes { appToken, from?, to?, granularity? } (appToken null for the anonymous pool)')
    const { appToken } = query
    if (appToken !== null && (typeof appToken !== 'string' || appToken === '')) throw new TypeError('open-data-gate: usage.query() appToken must be an app token, or null for the anonymous pool')
    const granularity = query.granularity ?? 'hour'
    if (!Object.hasOwn(GRANULARITY_MS, granularity)) throw new TypeError(`open-data-gate: usage granularity must be 'minute', 'hour' or 'day', got ${JSON.stringify(granularity)}`)
    const { from, to } = range(query.from, query.to)
    const step = GRANULARITY_MS[granularity]
    const first = from - (from % step)
    const count = Math.ceil((to - first) / step)
    if (count > MAX_BUCKETS) throw new TypeError(`open-data-gate: usage.query() would span ${count} ${granularity} buckets; at most ${MAX_BUCKETS}: narrow the range or use a coarser granularity`)
    const stored = this.#store === null ? [] : await (this.#reads as GateStore & UsageStore).getUsage(appToken, granularity, first, to)
    const byStart = new Map(stored.map((bucket) => [bucket.start, bucket]))
    const buckets: UsageBucket[] = []
    for (let start = first; start < to; start += step) buckets.push(byStart.get(start) ?? { start, ...NO_USAGE })
    return { appToken, granularity, buckets }
  }

  /**
   * The applications with the most requests (or 429s) over a time range, each with its name.
   * The range starts at the start of the bucket `from` falls in (a minute's for a range of
   * up to 6 hours, by default).
   * @example
   * const top = await gate.usage.top({ from: Date.now() - 7 * 86_400_000, limit: 10 })
   */
  async top(options: UsageTopOptions = {}): Promise<UsageTopEntry[]> {
    if (typeof options !== 'object' || options === null) throw new TypeError('open-data-gate: usage.top() takes { from?, to?, limit?, by?, granularity? }')
    const limit = options.limit ?? 10
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000) throw new TypeError(`open-data-gate: usage.top() limit must be an integer from 1 to 1000, got ${JSON.stringify(limit)}`)
    const by = options.by ?? 'requests'
    if (by !== 'requests' && by !== 'throttled') throw new TypeError(`open-data-gate: usage.top() by must be 'requests' or 'throttled', got ${JSON.stringify(by)}`)
    const { from, to, granularity } = topRange(options.from, options.to, options.granularity)
    if (this.#store === null) return []
    const totals = await (this.#reads as GateStore & UsageStore).topUsage({ granularity, from, to, limit, by })
    const names = await Promise.all(totals.map(async (total) => (await this.#reads.getApplication(total.appToken))?.name ?? null))
    return totals.map((total, i) => ({ appToken: total.appToken, name: names[i] ?? null, requests: total.requests, throttled: total.throttled }))
  }
}
