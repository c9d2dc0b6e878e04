/**
 * The usage slice of the storage contract: time buckets of counts per application, added
 * by each gate process in batches (`usage.flushIntervalMs`, default 10 s) and read by
 * `gate.usage.query` and `gate.usage.top`. Optional on `GateStore`: a store without it
 * still works, and the gate then counts nothing (it says so once, at start).
 *
 * A bucket is keyed by application (`appToken`, or `null` for the anonymous pool),
 * granularity and start (epoch ms, UTC); its counts only ever grow. Stores keep each bucket
 * at least until the `expiresAt` its rows carry, and drop it some time after that (Redis
 * expiry, a bounded sweep), so that usage does not pile up.
 *
 * Run the conformance kit (`open-data-gate/testing`): its "usage" checks are the definition
 * of "implements the slice".
 *
 * @see docs/guides/usage.md
 */
import type { Awaitable } from './contract/lifecycle.js'

/** The size of a time bucket: a minute, an hour or a (UTC) day. */
export type UsageGranularity = 'minute' | 'hour' | 'day'

/**
 * Answers by status class: the host's to the requests the gate let through, and the gate's
 * own that are not refusals (its endpoints' 2xx, a 503 while the store is away), so that
 * `requests` is `throttled` + `refused` + these four.
 */
export interface UsageStatuses {
  readonly '2xx': number
  readonly '3xx': number
  readonly '4xx': number
  readonly '5xx': number
}

/** What is counted in a bucket. Every count is a non-negative integer. */
export interface UsageCounts {
  /** Requests the gate decided for the application (or, for `appToken: null`, without an app token). */
  readonly requests: number
  /** Of those, answered 429 by the gate. */
  readonly throttled: number
  /** Of those, answered another 4xx by the gate (bad credentials, https required, mismatched app token, a suspended application). */
  readonly refused: number
  /**
   * Of the refused, those refused because an operator suspended the application (403
   * `application_suspended`): a part of `refused`, as `throttled` is of `requests`, never
   * counted apart from it. 0 in a bucket saved before the count existed.
   */
  readonly suspended: number
  /**
   * Per shadow limit (a limit configured with `shadow: true`, by its name): how many
   * requests it would have refused had it been enforced. The requests themselves were
   * decided without it, and are counted as the others are; one request can be in several
   * names. Only names with a count are present (`{}` for most buckets, and for one saved
   * before the count existed). At most {@link MAX_SHADOW_NAMES} names per bucket: the first
   * ones the bucket sees; another name's counts are not kept in that bucket.
   */
  readonly shadow: Readonly<Record<string, number>>
  /** Every other answer, by class: the host's (where the adapter sees it) and the gate's own that were no refusal. */
  readonly statuses: UsageStatuses
  /**
   * Requests that named an app token nobody registered. Counted in the anonymous pool's
   * buckets only (`appToken: null`), never under the token: an invented token must not make
   * the store keep anything for it. Always 0 in an application's bucket.
   */
  readonly unknownAppToken: number
}

/** One stored bucket, as {@link UsageStore.getUsage} gives it back. */
export interface UsageBucket extends UsageCounts {
  /** Start of the bucket, epoch ms (a multiple of the granularity's length, UTC). */
  readonly start: number
}

/** Counts to add to one bucket. */
export interface UsageRow extends UsageCounts {
  /** The application, or `null` for the anonymous pool. */
  readonly appToken: string | null
  readonly granularity: UsageGranularity
  readonly start: number
  /** Keep the bucket at least until then (epoch ms): its start plus the granularity's retention. */
  readonly expiresAt: number
}

/**
 * What one gate process flushes at once: the counts of its last flush interval, as rows of
 * minute, hour and day buckets (each bucket at most once per batch). Plain data: the
 * `usage.onFlush` hook receives it as is.
 */
export interface UsageBatch {
  /** The process's random id (one per gate). */
  readonly writer: string
  /**
   * 1, 2, 3, ... per writer. A writer sends its next batch only after the store applied
   * the one before (or after the gate gave up on it): a retried batch keeps its number.
   */
  readonly sequence: number
  /** When the batch was made, epoch ms. */
  readonly createdAt: number
  /**
   * Remember the writer's sequence at least until then (epoch ms): a retry of this batch
   * can arrive up to that time. The gate never retries a batch after it.
   */
  readonly idExpiresAt: number
  readonly rows: readonly UsageRow[]
}

/** An application's totals over a time range, as {@link UsageStore.topUsage} ranks them. */
export interface UsageTotal {
  readonly appToken: string
  readonly requests: number
  readonly throttled: number
}

/** What {@link UsageStore.topUsage} ranks. */
export interface UsageTopQuery {
  /** Which buckets to add up (minutes for the short ranges, so that "the last hour" is not up to two). */
  readonly granularity: UsageGranularity
  /** Buckets whose start is at or after this (epoch ms)... */
  readonly from: number
  /** ...and before this. */
  readonly to: number
  /** At most this many applications, 1 to 1000. */
  readonly limit: number
  /** Rank by this total, most first; ties by `appToken`, in code-unit order. */
  readonly by: 'requests' | 'throttled'
}

/**
 * A store that keeps usage. Every method may answer synchronously or with a promise.
 *
 * @example
 * class MyStore implements GateStore, UsageStore {
 *   addUsage(batch) { ... one transaction: skip if batch.sequence <= last of batch.writer, else add every row ... }
 *   getUsage(appToken, granularity, from, to) { ... }
 *   topUsage(query) { ... }
 * }
 */
export interface UsageStore {
  /**
   * Adds every row's counts to its bucket (creating it at zero), atomically and exactly
   * once: a batch whose `sequence` is not above the last one applied for its `writer` adds
   * nothing (its answer was lost and the gate sent it again). A store may apply a batch per
   * application rather than all at once (Redis Cluster: one script per application's slot),
   * as long as each application's rows are applied once; then the same rule holds per
   * application. Also extends each touched bucket's `expiresAt` to the row's, if later.
   * Concurrent batches of different writers must both be counted in full.
   */
  addUsage(batch: UsageBatch): Awaitable<void>
  /**
   * One application's buckets (`appToken: null`: the anonymous pool's) of one granularity
   * whose start is in `[from, to)`, oldest first; only buckets that exist (the gate fills
   * the gaps with zeros). A bucket past its `expiresAt` may or may not be given.
   */
  getUsage(appToken: string | null, granularity: UsageGranularity, from: number, to: number): Awaitable<UsageBucket[]>
  /**
   * The applications (never the anonymous pool) with the highest total of `by` over the
   * buckets of `granularity` whose start is in `[from, to)`, most first, ties by app token;
   * at most `limit`, and none whose total is 0.
   */
  topUsage(query: UsageTopQuery): Awaitable<UsageTotal[]>
}

/** The usage methods, as the gate checks for them. */
export const USAGE_STORE_METHODS = ['addUsage', 'getUsage', 'topUsage'] as const satisfies ReadonlyArray<keyof UsageStore>

/** Whether `store` implements the whole usage slice. */
export function keepsUsage<S extends object>(store: S): store is S & UsageStore {
  return USAGE_STORE_METHODS.every((name) => typeof (store as Partial<UsageStore>)[name] === 'function')
}

/** The length of a bucket of each granularity, in ms. */
export const GRANULARITY_MS: Readonly<Record<UsageGranularity, number>> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 }

/** Counts of nothing, to build on. */
export const NO_USAGE: UsageCounts = Object.freeze({
  requests: 0,
  throttled: 0,
  refused: 0,
  suspended: 0,
  shadow: Object.freeze({}),
  statuses: Object.freeze({ '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 }),
  unknownAppToken: 0,
})

/**
 * The most shadow-limit names a bucket (and a row) keeps. A gate's configuration names a
 * handful; the bound keeps a bucket small whatever a configuration or a writer sends.
 */
export const MAX_SHADOW_NAMES = 10

/** The numeric counts a bucket holds, by their column (and Redis field) names, in a fixed order; `shadow` is apart. */
export const USAGE_FIELDS = ['requests', 'throttled', 'refused', 's2xx', 's3xx', 's4xx', 's5xx', 'unknown', 'suspended'] as const

/** A row's numeric counts in {@link USAGE_FIELDS} order. */
export function usageValues(counts: UsageCounts): number[] {
  const s = counts.statuses
  return [counts.requests, counts.throttled, counts.refused, s['2xx'], s['3xx'], s['4xx'], s['5xx'], counts.unknownAppToken, counts.suspended ?? 0]
}

/** Counts from values in {@link USAGE_FIELDS} order (a missing one is 0) and the shadow counts. */
export function usageCounts(values: ArrayLike<number>, shadow: Readonly<Record<string, number>> = {}): UsageCounts {
  const v = (i: number) => values[i] ?? 0
  return { requests: v(0), throttled: v(1), refused: v(2), suspended: v(8), shadow, statuses: { '2xx': v(3), '3xx': v(4), '4xx': v(5), '5xx': v(6) }, unknownAppToken: v(7) }
}

/**
 * Adds the shadow counts `add` to `into`, keeping at most {@link MAX_SHADOW_NAMES} names:
 * a name `into` has is always added to; a new one only while there is room (in the order
 * `add` gives them). The one merge rule every store follows.
 */
export function addShadowCounts(into: Record<string, number>, add: Readonly<Record<string, number>> | undefined): void {
  if (add === undefined) return
  let names = Object.keys(into).length
  for (const [name, count] of Object.entries(add)) {
    if (count === 0) continue
    if (Object.hasOwn(into, name)) into[name] = (into[name] as number) + count
    else if (names < MAX_SHADOW_NAMES) {
      into[name] = count
      names++
    }
  }
}
