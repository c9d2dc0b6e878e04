/**
 * The usage slice ({@link UsageStore}): batches add up exactly once, reads give the range
 * asked for, buckets go once they expire, and the top query ranks. Each check works in a
 * day of the past no other check of the process uses (years ago, with rows that expire in
 * the future), with fresh app tokens and writers, so it sees only its own buckets on a
 * shared server.
 *
 * A store without the slice (it is optional) passes these checks without running them: the
 * gate then counts no usage, and says so when it starts.
 */
import assert from 'node:assert/strict'
import { randomInt } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { createGate } from '../../gate.js'
import { randomToken } from '../../secrets/tokens.js'
import type { GateStore } from '../../store/store.js'
import { GRANULARITY_MS, keepsUsage, MAX_SHADOW_NAMES, usageCounts, type UsageBatch, type UsageGranularity, type UsageRow, type UsageStore } from '../../store/usage-contract.js'
import { group, type StoreCheck } from '../check.js'
import { freshAppToken } from '../fixtures.js'

const HOUR = GRANULARITY_MS.hour
const DAY = GRANULARITY_MS.day

/** Days between 2001 and 2028 the checks work in. */
const DAYS = 10_000
let nextDay = randomInt(0, DAYS)

/**
 * The start of a UTC day between 2001 and 2028 that no other check of this process uses:
 * the next of a run of days from a random one. Days drawn apart collided one run in about
 * a hundred, when another check's rows landed in the range the ranking check ranks.
 */
const freshDay = (): number => Date.UTC(2001, 0, 1) + (nextDay++ % DAYS) * DAY

/** A batch of `rows` from a new writer unless one is given. */
function batch(rows: UsageRow[], writer = `kit-${randomToken(9)}`, sequence = 1): UsageBatch {
  return { writer, sequence, createdAt: Date.now(), idExpiresAt: Date.now() + DAY, rows }
}

/** A row; `counts` are requests, throttled, refused, 2xx, 3xx, 4xx, 5xx, unknown app tokens, suspended (0 when left out). */
function row(appToken: string | null, granularity: UsageGranularity, start: number, counts: number[], expiresAt = Date.now() + HOUR, shadow: Record<string, number> = {}): UsageRow {
  return { appToken, granularity, start, expiresAt, ...usageCounts(counts, shadow) }
}

/** The suspended and shadow counts of the buckets `getUsage` gives, as [start, suspended, shadow]. */
async function outcomes(store: UsageStore, appToken: string | null, granularity: UsageGranularity, from: number, to: number): Promise<Array<[number, number, Record<string, number>]>> {
  const buckets = await store.getUsage(appToken, granularity, from, to)
  return buckets.map((b) => [b.start, b.suspended, { ...b.shadow }])
}

/** Runs `check` only when the store keeps usage. */
function ifKept(check: (store: GateStore & UsageStore) => Promise<void>): (store: GateStore) => Promise<void> {
  return async (store) => {
    if (keepsUsage(store)) await check(store)
  }
}

/** The counts of the buckets `getUsage` gives, as [start, requests, throttled, refused, 2xx, 3xx, 4xx, 5xx, unknown]. */
async function read(store: UsageStore, appToken: string | null, granularity: UsageGranularity, from: number, to: number): Promise<number[][]> {
  const buckets = await store.getUsage(appToken, granularity, from, to)
  return buckets.map((b) => [b.start, b.requests, b.throttled, b.refused, b.statuses['2xx'], b.statuses['3xx'], b.statuses['4xx'], b.statuses['5xx'], b.unknownAppToken])
}

export const usageChecks: readonly StoreCheck[] = group('usage', ['applications', 'rates', 'usage'], [
  [
    'adds every row of a batch to its bucket, every count, and a later batch on top',
    ifKept(async (store) => {
      const day = freshDay()
      const app = freshAppToken()
      const writer = `kit-${randomToken(9)}`
      await store.addUsage(
        batch(
          [
            row(app, 'minute', day, [5, 1, 1, 2, 0, 1, 0, 0]),
            row(app, 'minute', day + 60_000, [3, 0, 0, 3, 0, 0, 0, 0]),
            row(app, 'hour', day, [8, 1, 1, 5, 0, 1, 0, 0]),
            row(app, 'day', day, [8, 1, 1, 5, 0, 1, 0, 0]),
            row(null, 'minute', day, [4, 0, 2, 1, 1, 0, 0, 7]),
          ],
          writer,
          1,
        ),
      )
      await store.addUsage(batch([row(app, 'minute', day, [1, 0, 0, 0, 0, 0, 1, 0]), row(app, 'hour', day, [1, 0, 0, 0, 0, 0, 1, 0])], writer, 2))
      assert.deepEqual(await read(store, app, 'minute', day, day + HOUR), [
        [day, 6, 1, 1, 2, 0, 1, 1, 0],
        [day + 60_000, 3, 0, 0, 3, 0, 0, 0, 0],
      ])
      assert.deepEqual(await read(store, app, 'hour', day, day + DAY), [[day, 9, 1, 1, 5, 0, 1, 1, 0]])
      assert.deepEqual(await read(store, app, 'day', day, day + DAY), [[day, 8, 1, 1, 5, 0, 1, 0, 0]])
      assert.deepEqual(await read(store, null, 'minute', day, day + HOUR), [[day, 4, 0, 2, 1, 1, 0, 0, 7]], 'the anonymous pool has buckets of its own')
    }),
  ],
  [
    'adds a batch sent again with the same sequence only once, and nothing of an older one',
    ifKept(async (store) => {
      const day = freshDay()
      const [a, b] = [freshAppToken(), freshAppToken()]
      const writer = `kit-${randomToken(9)}`
      const first = batch([row(a, 'minute', day, [2, 0, 0, 0, 0, 0, 0, 0]), row(b, 'hour', day, [3, 0, 0, 0, 0, 0, 0, 0])], writer, 7)
      await store.addUsage(first)
      await store.addUsage(first)
      await Promise.all([store.addUsage(first), store.addUsage(first)])
      await store.addUsage(batch([row(a, 'minute', day, [100, 0, 0, 0, 0, 0, 0, 0])], writer, 6))
      assert.deepEqual(await read(store, a, 'minute', day, day + HOUR), [[day, 2, 0, 0, 0, 0, 0, 0, 0]], 'a replayed batch adds nothing')
      assert.deepEqual(await read(store, b, 'hour', day, day + DAY), [[day, 3, 0, 0, 0, 0, 0, 0, 0]])
      await store.addUsage(batch([row(a, 'minute', day, [1, 0, 0, 0, 0, 0, 0, 0])], writer, 8))
      await store.addUsage(batch([row(a, 'minute', day, [1, 0, 0, 0, 0, 0, 0, 0])], `kit-${randomToken(9)}`, 7))
      assert.deepEqual(await read(store, a, 'minute', day, day + HOUR), [[day, 4, 0, 0, 0, 0, 0, 0, 0]], 'the next sequence, and another writer’s same sequence, add')
    }),
  ],
  [
    'counts every one of 20 writers’ concurrent batches on the same buckets',
    ifKept(async (store) => {
      const day = freshDay()
      const app = freshAppToken()
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.addUsage(batch([row(app, 'minute', day, [i + 1, 1, 0, 0, 0, 0, 0, 0]), row(app, 'day', day, [1, 0, 0, 0, 0, 0, 0, 0])]))))
      assert.deepEqual(await read(store, app, 'minute', day, day + HOUR), [[day, 210, 20, 0, 0, 0, 0, 0, 0]])
      assert.deepEqual(await read(store, app, 'day', day, day + DAY), [[day, 20, 0, 0, 0, 0, 0, 0, 0]])
    }),
  ],
  [
    'adds a batch of 10,000 applications’ minute, hour and day buckets in one call, and ranks them',
    ifKept(async (store) => {
      const day = freshDay()
      const apps = Array.from({ length: 10_000 }, (_, i) => `${freshAppToken().slice(0, 16)}${String(i).padStart(5, '0')}`)
      const rows = apps.flatMap((app, i) => (['minute', 'hour', 'day'] as const).map((g) => row(app, g, day, [i + 1, 1 + (i % 2), 0, i + 1, 0, 0, 0, 0])))
      await store.addUsage(batch(rows))
      assert.deepEqual(await read(store, apps[4321] as string, 'minute', day, day + HOUR), [[day, 4322, 2, 0, 4322, 0, 0, 0, 0]])
      assert.deepEqual(await read(store, apps[0] as string, 'day', day, day + DAY), [[day, 1, 1, 0, 1, 0, 0, 0, 0]])
      assert.deepEqual(
        (await store.topUsage({ granularity: 'hour', from: day, to: day + HOUR, limit: 2, by: 'requests' })).map((t) => [t.appToken, t.requests, t.throttled]),
        [
          [apps[9999], 10_000, 2],
          [apps[9998], 9999, 1],
        ],
      )
    }),
  ],
  [
    'adds the suspended and shadow counts of every batch, and reads a bucket without them as 0 and {}',
    ifKept(async (store) => {
      const day = freshDay()
      const app = freshAppToken()
      const writer = `kit-${randomToken(9)}`
      const later = Date.now() + HOUR
      await store.addUsage(
        batch(
          [
            // 6 requests: 2 refused, 1 of them for the suspension; 3 that shadow limits would have refused.
            row(app, 'minute', day, [6, 0, 2, 4, 0, 0, 0, 0, 1], later, { 'burst-10s': 3, 'daily-cap': 1 }),
            row(app, 'hour', day, [6, 0, 2, 4, 0, 0, 0, 0, 1], later, { 'burst-10s': 3, 'daily-cap': 1 }),
            row(app, 'minute', day + 60_000, [2, 0, 0, 2, 0, 0, 0, 0]),
          ],
          writer,
          1,
        ),
      )
      await store.addUsage(batch([row(app, 'minute', day, [3, 0, 3, 0, 0, 0, 0, 0, 3], later, { 'daily-cap': 2, 'Ünïcode ✓': 1 })], writer, 2))
      // Sent again (its answer lost): nothing of it is added twice.
      await store.addUsage(batch([row(app, 'minute', day, [3, 0, 3, 0, 0, 0, 0, 0, 3], later, { 'daily-cap': 2, 'Ünïcode ✓': 1 })], writer, 2))
      assert.deepEqual(await outcomes(store, app, 'minute', day, day + HOUR), [
        [day, 4, { 'burst-10s': 3, 'daily-cap': 3, 'Ünïcode ✓': 1 }],
        [day + 60_000, 0, {}],
      ])
      assert.deepEqual(await outcomes(store, app, 'hour', day, day + DAY), [[day, 1, { 'burst-10s': 3, 'daily-cap': 1 }]])
      assert.deepEqual(await read(store, app, 'minute', day, day + 60_000), [[day, 9, 0, 5, 4, 0, 0, 0, 0]], 'the other counts as before')
    }),
  ],
  [
    `keeps at most ${MAX_SHADOW_NAMES} shadow names per bucket: the ones it has, then new ones while there is room`,
    ifKept(async (store) => {
      const day = freshDay()
      const app = freshAppToken()
      const names = (from: number, count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`limit-${String(from + i).padStart(2, '0')}`, from + i]))
      await store.addUsage(batch([row(app, 'minute', day, [1, 0, 0, 1, 0, 0, 0, 0], Date.now() + HOUR, names(1, 6))]))
      // Two writers at once, each with 4 names the bucket has and 4 it has not: 4 of the 8 new ones find room.
      await Promise.all([
        store.addUsage(batch([row(app, 'minute', day, [1, 0, 0, 1, 0, 0, 0, 0], Date.now() + HOUR, { ...names(3, 4), ...names(11, 4) })])),
        store.addUsage(batch([row(app, 'minute', day, [1, 0, 0, 1, 0, 0, 0, 0], Date.now() + HOUR, { ...names(3, 4), ...names(21, 4) })])),
      ])
      const [bucket] = await store.getUsage(app, 'minute', day, day + HOUR)
      const shadow = bucket?.shadow ?? {}
      assert.equal(Object.keys(shadow).length, MAX_SHADOW_NAMES, `${MAX_SHADOW_NAMES} names, not more: ${Object.keys(shadow).join(', ')}`)
      // The first six, with both writers' counts of the ones they shared...
      assert.deepEqual(
        Object.keys(names(1, 6)).map((name) => shadow[name]),
        [1, 2, 9, 12, 15, 18],
      )
      // ...and each new name kept with its whole count, once.
      for (const [name, count] of Object.entries(shadow)) if (!Object.hasOwn(names(1, 6), name)) assert.equal(count, Number(name.slice(-2)), name)
      assert.equal(bucket?.requests, 3)
    }),
  ],
  [
    'reads one application’s buckets of one granularity whose start is in [from, to), oldest first',
    ifKept(async (store) => {
      const day = freshDay()
      const [app, other] = [freshAppToken(), freshAppToken()]
      const minutes = [0, 1, 5, 59, 60].map((m) => day + m * 60_000)
      await store.addUsage(batch([...minutes.reverse().map((start, i) => row(app, 'minute', start, [i + 1, 0, 0, 0, 0, 0, 0, 0])), row(other, 'minute', day + 60_000, [9, 0, 0, 0, 0, 0, 0, 0]), row(app, 'hour', day, [1, 0, 0, 0, 0, 0, 0, 0])]))
      const got = await read(store, app, 'minute', day + 60_000, day + 59 * 60_000 + 1)
      assert.deepEqual(
        got.map((b) => [b[0], b[1]]),
        [
          [day + 60_000, 4],
          [day + 5 * 60_000, 3],
          [day + 59 * 60_000, 2],
        ],
      )
      assert.deepEqual(await read(store, freshAppToken(), 'minute', day, day + DAY), [], 'an application without usage has no buckets')
    }),
  ],
  [
    'fills the gaps of a query with empty buckets, through a gate over the store',
    ifKept(async (store) => {
      const day = freshDay()
      const app = freshAppToken()
      await store.addUsage(batch([row(app, 'hour', day + 2 * HOUR, [7, 0, 0, 0, 0, 0, 0, 0])]))
      const gate = createGate({ store, throttle: false })
      try {
        const series = await gate.usage.query({ appToken: app, from: day, to: day + 4 * HOUR, granularity: 'hour' })
        assert.deepEqual(
          series.buckets.map((b) => [b.start - day, b.requests]),
          [
            [0, 0],
            [HOUR, 0],
            [2 * HOUR, 7],
            [3 * HOUR, 0],
          ],
        )
        assert.deepEqual(series.buckets[0]?.statuses, { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 })
      } finally {
        await gate.usage.close()
      }
    }),
  ],
  [
    'keeps a bucket until its expiresAt, and gives back none once it has passed',
    ifKept(async (store) => {
      const day = freshDay()
      const app = freshAppToken()
      const expiresAt = Date.now() + 400
      await store.addUsage(batch([row(app, 'minute', day, [1, 0, 0, 0, 0, 0, 0, 0], expiresAt), row(app, 'day', day, [1, 0, 0, 0, 0, 0, 0, 0], Date.now() + HOUR)]))
      const before = await read(store, app, 'minute', day, day + HOUR)
      // Judged only when the read came back in time: a slow machine or a remote store may take longer.
      if (Date.now() < expiresAt) assert.equal(before.length, 1, 'the minute bucket is kept before it expires')
      await sleep(900)
      assert.deepEqual(await read(store, app, 'minute', day, day + HOUR), [], 'the minute bucket is gone once it expired')
      assert.equal((await read(store, app, 'day', day, day + DAY)).length, 1, 'the day bucket, not expired, stays')
      await store.addUsage(batch([row(app, 'minute', day, [2, 0, 0, 0, 0, 0, 0, 0], Date.now() + HOUR)]))
      assert.deepEqual((await read(store, app, 'minute', day, day + HOUR)).map((b) => b[1]), [2], 'a bucket made again after it expired starts from zero')
    }),
  ],
  [
    'ranks applications by requests or by 429s over a range, most first, ties by app token, without the anonymous pool',
    ifKept(async (store) => {
      const day = freshDay()
      const apps = Array.from({ length: 5 }, () => freshAppToken()).sort()
      const [a, b, c, d, e] = apps as [string, string, string, string, string]
      await store.addUsage(
        batch([
          row(a, 'hour', day, [10, 0, 0, 0, 0, 0, 0, 0]),
          row(a, 'hour', day + HOUR, [5, 5, 0, 0, 0, 0, 0, 0]),
          row(b, 'hour', day + HOUR, [30, 1, 0, 0, 0, 0, 0, 0]),
          row(c, 'hour', day, [15, 2, 0, 0, 0, 0, 0, 0]),
          row(d, 'hour', day + 3 * HOUR, [99, 99, 0, 0, 0, 0, 0, 0]),
          row(e, 'day', day, [500, 0, 0, 0, 0, 0, 0, 0]),
          row(null, 'hour', day, [1000, 1000, 0, 0, 0, 0, 0, 0]),
        ]),
      )
      const range = { granularity: 'hour' as const, from: day, to: day + 3 * HOUR }
      assert.deepEqual(await store.topUsage({ ...range, limit: 10, by: 'requests' }), [
        { appToken: b, requests: 30, throttled: 1 },
        { appToken: a, requests: 15, throttled: 5 },
        { appToken: c, requests: 15, throttled: 2 },
      ])
      assert.deepEqual(await store.topUsage({ ...range, limit: 2, by: 'throttled' }), [
        { appToken: a, requests: 15, throttled: 5 },
        { appToken: c, requests: 15, throttled: 2 },
      ])
      assert.deepEqual(await store.topUsage({ granularity: 'day', from: day, to: day + DAY, limit: 10, by: 'requests' }), [{ appToken: e, requests: 500, throttled: 0 }])
    }),
  ],
  [
    'ranks applications over minute buckets too, counting only the minutes of the range',
    ifKept(async (store) => {
      const day = freshDay()
      const [a, b] = [freshAppToken(), freshAppToken()].sort() as [string, string]
      const minute = GRANULARITY_MS.minute
      // What a gate writes: each minute also added to its hour, which a ranking by minutes must not read.
      await store.addUsage(
        batch([
          row(a, 'minute', day + 58 * minute, [40, 4, 0, 0, 0, 0, 0, 0]),
          row(a, 'minute', day + 61 * minute, [3, 1, 0, 0, 0, 0, 0, 0]),
          row(a, 'hour', day, [40, 4, 0, 0, 0, 0, 0, 0]),
          row(a, 'hour', day + HOUR, [3, 1, 0, 0, 0, 0, 0, 0]),
          row(b, 'minute', day + 60 * minute, [5, 0, 0, 0, 0, 0, 0, 0]),
          row(b, 'minute', day + 62 * minute, [2, 2, 0, 0, 0, 0, 0, 0]),
          row(b, 'hour', day + HOUR, [7, 2, 0, 0, 0, 0, 0, 0]),
          row(null, 'minute', day + 60 * minute, [900, 0, 0, 0, 0, 0, 0, 0]),
        ]),
      )
      // "The last two minutes" before day + 62 minutes: minutes 60 and 61 only.
      assert.deepEqual(await store.topUsage({ granularity: 'minute', from: day + 60 * minute, to: day + 62 * minute, limit: 10, by: 'requests' }), [
        { appToken: b, requests: 5, throttled: 0 },
        { appToken: a, requests: 3, throttled: 1 },
      ])
      assert.deepEqual(await store.topUsage({ granularity: 'minute', from: day + 59 * minute, to: day + 63 * minute, limit: 1, by: 'throttled' }), [{ appToken: b, requests: 7, throttled: 2 }])
    }),
  ],
])
