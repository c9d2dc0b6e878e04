/**
 * Usage buckets on Redis, for {@link RedisStore}; Cluster-safe.
 *
 * Key layout, under the store's prefix, hash tag in braces:
 * - `{usage:<appToken>}:<m|h|d>:<start>`: one bucket, a hash of its counts (`requests`,
 *   `throttled`, `refused`, `s2xx` ... `s5xx`, `unknown`, `suspended`, and `shadow:<name>`
 *   per shadow limit, at most `MAX_SHADOW_NAMES` of them), expiring at the bucket's
 *   `expiresAt` (Redis drops it: that is the retention). The anonymous pool is
 *   `{usage:}`. Every key of one application, and `{usage:<appToken>}:seen` (the last
 *   sequence applied per writer), shares the application's slot.
 * - `{usage-rank}:<m|h|d>:<start>:<r|t>`: per minute, hour and day, a sorted set of
 *   applications by requests (`r`) and by 429s (`t`), for `topUsage` (minutes for the short
 *   ranges, so that "the last hour" is not up to two), expiring with the buckets;
 *   `{usage-rank}:seen` as above. All in one slot, so that a ranking over many buckets is one
 *   `ZUNIONSTORE`.
 *
 * A batch is one script per application (atomic, and skipped when the writer's sequence was
 * already applied in that application's slot) plus one per 2,000 ranking entries, sent
 * together: a flush of up to 2,000 applications is one round trip per node (with ioredis
 * auto-pipelining, which the store's own client and `redisClientDefaults` turn on, one
 * write per node too); a larger one goes in waves of 2,000, so that no script waits in Redis
 * long enough to outlast the client's command timeout.
 *
 * A read (`getUsage`) goes on a connection of its own, in scripts of 500 buckets one after
 * the other: the gate's requests never wait behind it on the store's connection.
 *
 * Why rankings of their own rather than reading every application's buckets: on a cluster
 * the buckets are spread over the nodes by application, and a top query would read every
 * application's keys on every node. The rankings cost one small script per flush on one
 * node (that node holds them all: about 2 sorted-set entries per active application per
 * minute, hour and day), and `top` is one script there.
 */
import { createHash } from 'node:crypto'
import type { Cluster, Redis } from 'ioredis'
import { GRANULARITY_MS, MAX_SHADOW_NAMES, USAGE_FIELDS, usageCounts, usageValues, type UsageBatch, type UsageBucket, type UsageGranularity, type UsageTopQuery, type UsageTotal } from '../usage-contract.js'

type Client = Redis | Cluster

interface Script {
  readonly lua: string
  readonly sha: string
}

function script(lua: string): Script {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') }
}

/** How many numeric counts a bucket has (its `shadow:<name>` fields are apart). */
const N = USAGE_FIELDS.length

/**
 * Adds one application's rows, once per writer sequence.
 * KEYS[1] the application's `seen` hash, KEYS[2..] its buckets.
 * ARGV writer, sequence, seenExpireAt, then per bucket: expireAt, the counts of
 * `USAGE_FIELDS`, the number of shadow names n, then n (name, count). A shadow name the
 * bucket does not have is added only while it has fewer than `MAX_SHADOW_NAMES`.
 * Returns 1 when applied, 0 for a replay.
 */
const ADD = script(`local last = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if last >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
local fields = {${USAGE_FIELDS.map((f) => `'${f}'`).join(', ')}}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local a = 4
for k = 2, #KEYS do
  local expireAt = tonumber(ARGV[a])
  for i = 1, ${N} do
    local v = tonumber(ARGV[a + i])
    if v ~= 0 then redis.call('HINCRBY', KEYS[k], fields[i], v) end
  end
  local n = tonumber(ARGV[a + ${N + 1}])
  if n > 0 then
    local names = 0
    for _, f in ipairs(redis.call('HKEYS', KEYS[k])) do
      if string.sub(f, 1, 7) == 'shadow:' then names = names + 1 end
    end
    for j = 1, n do
      local field = 'shadow:' .. ARGV[a + ${N} + 2 * j]
      if redis.call('HEXISTS', KEYS[k], field) == 1 then
        redis.call('HINCRBY', KEYS[k], field, ARGV[a + ${N + 1} + 2 * j])
      elseif names < ${MAX_SHADOW_NAMES} then
        redis.call('HINCRBY', KEYS[k], field, ARGV[a + ${N + 1} + 2 * j])
        names = names + 1
      end
    end
  end
  local ttl = redis.call('PTTL', KEYS[k])
  if ttl ~= -2 and (ttl == -1 or now + ttl < expireAt) then redis.call('PEXPIREAT', KEYS[k], ARGV[a]) end
  a = a + ${N + 2} + 2 * n
end
return 1`)

/**
 * Adds to the rankings, once per writer sequence.
 * KEYS[1] the rankings' `seen` hash, KEYS[2..] sorted sets.
 * ARGV writer, sequence, seenExpireAt, then per set: expireAt, n, then n (member, increment).
 */
const RANK = script(`local last = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if last >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local a = 4
for k = 2, #KEYS do
  local expireAt = tonumber(ARGV[a])
  local n = tonumber(ARGV[a + 1])
  a = a + 2
  for i = 1, n do
    redis.call('ZINCRBY', KEYS[k], ARGV[a + 1], ARGV[a])
    a = a + 2
  end
  local ttl = redis.call('PTTL', KEYS[k])
  if ttl ~= -2 and (ttl == -1 or now + ttl < expireAt) then redis.call('PEXPIREAT', KEYS[k], expireAt) end
end
return 1`)

/**
 * Reads buckets. KEYS the buckets (of one application, in its slot). Returns two things:
 * for each bucket that exists, its place in KEYS (from 1) and its counts of `USAGE_FIELDS`
 * (0 for one a bucket saved before it lacks), all in one string of integers separated by commas (one
 * reply to parse rather than thousands; an empty range answers an empty string); and the
 * shadow counts, as a flat list of (place, name, count), empty for most ranges.
 */
const READ = script(`local fields = {${USAGE_FIELDS.map((f) => `'${f}'`).join(', ')}}
local out, shadow = {}, {}
local n = 0
for k = 1, #KEYS do
  local h = redis.call('HGETALL', KEYS[k])
  if #h > 0 then
    local v = {}
    for i = 1, #h, 2 do
      if string.sub(h[i], 1, 7) == 'shadow:' then
        shadow[#shadow + 1] = k
        shadow[#shadow + 1] = string.sub(h[i], 8)
        shadow[#shadow + 1] = h[i + 1]
      else
        v[h[i]] = h[i + 1]
      end
    end
    out[n + 1] = k
    for i = 1, ${N} do out[n + 1 + i] = v[fields[i]] or '0' end
    n = n + ${N + 1}
  end
end
return {table.concat(out, ','), shadow}`)

/**
 * Sums rankings: KEYS[1], KEYS[2] scratch keys, then n sets ranked by, then the n sets of
 * the other total. ARGV n. Returns both unions, member, score pairs.
 */
const TOP = script(`local n = tonumber(ARGV[1])
local by, other = {}, {}
for i = 1, n do by[i] = KEYS[2 + i]; other[i] = KEYS[2 + n + i] end
redis.call('ZUNIONSTORE', KEYS[1], n, unpack(by))
redis.call('ZUNIONSTORE', KEYS[2], n, unpack(other))
local a = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local b = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
redis.call('DEL', KEYS[1], KEYS[2])
return {a, b}`)

const LETTER: Readonly<Record<UsageGranularity, string>> = { minute: 'm', hour: 'h', day: 'd' }
/** One script call of a batch: the script, its keys, its arguments. */
type Call = [Script, string[], Array<string | number>]
/** Ranking entries per script, at most. */
const RANK_CHUNK = 2000
/**
 * Scripts sent at once, at most: a flush of up to this many applications is one round trip.
 * Small enough that the wave's last answer comes well within the command timeout (500 ms by
 * default) even when Redis and this process share busy cores: 2,000 at once timed out there,
 * and 250 did on a Redis Cluster whose three servers shared two cores with a load of about 8.
 * A flush runs in the background, so a hundred round trips for 10,000 applications cost
 * nobody a wait.
 */
const WAVE = 100
/** How many buckets a read asks for, at most: the gate's own bound on a query. */
const MAX_READ = 10_000
/**
 * How many buckets one script of a read reads. A read is sent in scripts of this many
 * buckets, one after the other: a read of 10,000 minute buckets in one pipeline of `HMGET`s
 * kept Redis busy for about 170 ms and sent back 80,000 strings, and ten of them at once
 * made every other client wait seconds. A script of 500 holds Redis about a millisecond and
 * answers only the buckets that exist, in one string.
 */
const READ_CHUNK = 500

/** The usage slice of a {@link RedisStore}, given the store's way to reach its client and its prefix. */
export class RedisUsage {
  readonly #call: <T>(send: (client: Client) => Promise<T>) => Promise<T>
  readonly #read: <T>(send: (client: Client) => Promise<T>) => Promise<T>
  readonly #p: string

  /**
   * @param call sends on the store's client (the request path's connection)
   * @param read sends on the connection of the usage reads, which no request waits behind
   */
  constructor(call: <T>(send: (client: Client) => Promise<T>) => Promise<T>, prefix: string, read: <T>(send: (client: Client) => Promise<T>) => Promise<T> = call) {
    this.#call = call
    this.#read = read
    this.#p = prefix
  }

  #app(appToken: string | null): string {
    return `${this.#p}{usage:${appToken ?? ''}}`
  }

  #rank(): string {
    return `${this.#p}{usage-rank}`
  }

  #eval(s: Script, keys: string[], args: Array<string | number>, on = this.#call): Promise<unknown> {
    return on((client) =>
      // One array argument (ioredis flattens it): a batch's arguments can be too many to spread into a call.
      client.evalsha(s.sha, keys.length, [...keys, ...args.map(String)]).catch((error: unknown) => {
        if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error
        return client.eval(s.lua, keys.length, [...keys, ...args.map(String)])
      }),
    )
  }

  /** One script per application and one for the rankings, sent together. */
  async add(batch: UsageBatch): Promise<void> {
    const byApp = new Map<string | null, { keys: string[]; args: Array<string | number> }>()
    const ranks = new Map<string, { expireAt: number; members: Array<string | number> }>()
    const head = [batch.writer, batch.sequence, batch.idExpiresAt]
    for (const row of batch.rows) {
      let app = byApp.get(row.appToken)
      if (app === undefined) {
        app = { keys: [`${this.#app(row.appToken)}:seen`], args: [...head] }
        byApp.set(row.appToken, app)
      }
      app.keys.push(`${this.#app(row.appToken)}:${LETTER[row.granularity]}:${row.start}`)
      app.args.push(row.expiresAt)
      for (const value of usageValues(row)) app.args.push(value)
      const shadow = Object.entries(row.shadow ?? {}).filter(([, count]) => count !== 0)
      app.args.push(shadow.length)
      for (const [name, count] of shadow) app.args.push(name, count)
      if (row.appToken === null) continue
      for (const [metric, value] of [['r', row.requests], ['t', row.throttled]] as const) {
        if (value === 0) continue
        const key = `${this.#rank()}:${LETTER[row.granularity]}:${row.start}:${metric}`
        let rank = ranks.get(key)
        if (rank === undefined) {
          rank = { expireAt: row.expiresAt, members: [] }
          ranks.set(key, rank)
        }
        rank.expireAt = Math.max(rank.expireAt, row.expiresAt)
        rank.members.push(row.appToken, value)
      }
    }
    const scripts: Call[] = [...byApp.values()].map(({ keys, args }) => [ADD, keys, args])
    // The rankings in scripts of at most RANK_CHUNK entries each, so that none holds Redis
    // long; each chunk is told apart in `seen` by its number (a retried batch chunks alike).
    let chunk: { keys: string[]; args: Array<string | number>; size: number } | undefined
    const chunks: Array<NonNullable<typeof chunk>> = []
    for (const [key, { expireAt, members }] of ranks) {
      for (let i = 0; i < members.length; i += 2 * RANK_CHUNK) {
        const part = members.slice(i, i + 2 * RANK_CHUNK)
        if (chunk === undefined || chunk.size + part.length / 2 > RANK_CHUNK) {
          chunk = { keys: [`${this.#rank()}:seen`], args: [`${batch.writer}#${chunks.length}`, batch.sequence, batch.idExpiresAt], size: 0 }
          chunks.push(chunk)
        }
        chunk.keys.push(key)
        chunk.args.push(expireAt, part.length / 2)
        for (const value of part) chunk.args.push(value)
        chunk.size += part.length / 2
      }
    }
    // Sent in waves, each wave's calls all before any answer is awaited (one round trip per
    // node), so that none waits in Redis behind more than its wave and none outlasts the
    // command timeout: the applications' small scripts WAVE at a time, the rankings' one at a
    // time (each holds up to RANK_CHUNK entries; thirty of them in one wave took Redis past
    // 500 ms with both cores busy). A call that failed is retried with the whole batch, and
    // the applications it did reach skip it then.
    const waves: Call[][] = []
    for (let i = 0; i < scripts.length; i += WAVE) waves.push(scripts.slice(i, i + WAVE))
    for (const { keys, args } of chunks) waves.push([[RANK, keys, args]])
    let failure: { reason: unknown } | undefined
    for (const wave of waves) {
      const results = await Promise.allSettled(wave.map(([script, keys, args]) => this.#eval(script, keys, args)))
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
      if (failed !== undefined) failure ??= failed
    }
    if (failure !== undefined) throw failure.reason
  }

  /**
   * The application's buckets in the range, in scripts of {@link READ_CHUNK} buckets in its
   * slot, each sent once the one before has answered, on the reads' own connection: the
   * request path's commands never queue behind a read, and Redis serves other clients
   * between the scripts.
   */
  async get(appToken: string | null, granularity: UsageGranularity, from: number, to: number): Promise<UsageBucket[]> {
    const step = GRANULARITY_MS[granularity]
    const starts: number[] = []
    for (let start = Math.ceil(from / step) * step; start < to && starts.length < MAX_READ; start += step) starts.push(start)
    const base = `${this.#app(appToken)}:${LETTER[granularity]}:`
    const buckets: UsageBucket[] = []
    for (let i = 0; i < starts.length; i += READ_CHUNK) {
      const chunk = starts.slice(i, i + READ_CHUNK)
      const [counts, shadowed] = (await this.#eval(READ, chunk.map((start) => base + String(start)), [], this.#read)) as [string, Array<string | number>]
      if (counts === '') continue
      const shadows = new Map<number, Record<string, number>>()
      for (let j = 0; j < shadowed.length; j += 3) {
        const place = Number(shadowed[j])
        let shadow = shadows.get(place)
        if (shadow === undefined) shadows.set(place, (shadow = {}))
        shadow[String(shadowed[j + 1])] = Number(shadowed[j + 2])
      }
      const found = counts.split(',').map(Number)
      for (let j = 0; j < found.length; j += N + 1) {
        const place = found[j] as number
        buckets.push({ start: chunk[place - 1] as number, ...usageCounts(found.slice(j + 1, j + N + 1), shadows.get(place) ?? {}) })
      }
    }
    return buckets
  }

  /** One script on the rankings' node: the union of the range's sets. */
  async top(query: UsageTopQuery): Promise<UsageTotal[]> {
    const step = GRANULARITY_MS[query.granularity]
    const starts: number[] = []
    for (let start = Math.ceil(query.from / step) * step; start < query.to && starts.length < MAX_READ; start += step) starts.push(start)
    if (starts.length === 0) return []
    const sets = (metric: 'r' | 't') => starts.map((start) => `${this.#rank()}:${LETTER[query.granularity]}:${start}:${metric}`)
    const [first, second] = query.by === 'requests' ? (['r', 't'] as const) : (['t', 'r'] as const)
    const scratch = `${this.#rank()}:scratch:${createHash('sha1').update(`${Date.now()}:${Math.random()}`).digest('hex')}`
    const [ranked, others] = (await this.#eval(TOP, [`${scratch}:a`, `${scratch}:b`, ...sets(first), ...sets(second)], [starts.length])) as [string[], string[]]
    const other = new Map<string, number>()
    for (let i = 0; i < others.length; i += 2) other.set(others[i] as string, Number(others[i + 1]))
    const totals: UsageTotal[] = []
    for (let i = 0; i < ranked.length; i += 2) {
      const appToken = ranked[i] as string
      const value = Number(ranked[i + 1])
      if (value <= 0) continue
      const otherValue = other.get(appToken) ?? 0
      totals.push(query.by === 'requests' ? { appToken, requests: value, throttled: otherValue } : { appToken, requests: otherValue, throttled: value })
    }
    return totals.sort((a, b) => b[query.by] - a[query.by] || (a.appToken < b.appToken ? -1 : a.appToken > b.appToken ? 1 : 0)).slice(0, query.limit)
  }
}
