/**
 * What usage reads cost everyone else, on the shared Redis. In the security review, ten
 * reads of 10,000 minute buckets at a time took another user from 609 requests in 3 s to 6
 * in 5 s, and to 503s: one pipeline of 10,000 `HMGET`s each, on the connection every request
 * of the gate waits on. Here ten of the largest reads the endpoint now takes (a day by the
 * minute, in scripts of 500 buckets on a connection of their own) run beside another
 * application's ordinary traffic on the same gate, which keeps at least a quarter of the
 * throughput it had alone (measured in the same test, just before) and never sees a 503.
 * (Before the fix it kept about 1%; on a quiet machine it keeps 60-90%. The floor sits far
 * below that so that two cores shared with other test processes do not fail it: it failed
 * twice at 0.48-0.49 with 0.5.)
 *
 * Throughput is compared as the time a fixed number of requests takes, alone and beside
 * the reads, in up to five rounds of both (a busy machine may slow one round of either);
 * the best round counts. The per-user budget, which spaces a developer's reads out, is
 * sized out of the way: what is measured is what the reads themselves cost.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Redis } from 'ioredis'
import { performance } from 'node:perf_hooks'
import { createGate, type Gate } from '../src/index.js'
import { MAX_READ_BUCKETS } from '../src/endpoints/applications.js'
import { RedisStore } from '../src/store/redis/store.js'
import { NO_USAGE, type UsageRow } from '../src/store/usage-contract.js'
import { coreRequest } from './support/requests.js'
import { deletePrefix, randomPrefix, REDIS_URL, sharedRedisAvailable } from './redis/servers.js'

const available = await sharedRedisAvailable('usage reads beside ordinary traffic on the shared Redis')
const prefix = randomPrefix('usage-reads')
const PASSWORD = 'correct horse battery'
const MINUTE = 60_000
/** Ordinary requests per measurement: 5 clients of 200 each. */
const WORKERS = 5
const PER_WORKER = 200

describe.skipIf(!available)('usage reads on Redis', () => {
  let admin: Redis
  let store: RedisStore
  let gate: Gate
  let readUrl: string
  let otherToken: string

  beforeAll(async () => {
    admin = new Redis(REDIS_URL)
    store = new RedisStore({ url: REDIS_URL, prefix })
    gate = createGate({
      store,
      basic: { scrypt: { logN: 10 } },
      throttle: { application: { limit: 1_000_000, windowMs: 60_000 } },
      selfServiceBudget: { limit: 1_000_000, windowMs: 60_000 },
      usage: { flushIntervalMs: 3_600_000 },
    })
    const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada', email: 'ada@example.org' })
    const mine = (await gate.applications.registerOwn({ ownerId: ada.id, name: 'Ada’s' })).application
    otherToken = (await gate.applications.register({ name: 'Someone else’s' })).appToken
    // Every bucket of the read holds counts, as a busy application's would.
    const to = Math.floor(Date.now() / MINUTE) * MINUTE
    const from = to - (MAX_READ_BUCKETS - 1) * MINUTE
    const rows: UsageRow[] = []
    for (let start = from; start < to; start += MINUTE) rows.push({ ...NO_USAGE, requests: 7, appToken: mine.appToken, granularity: 'minute', start, expiresAt: to + 3_600_000 })
    await store.addUsage({ writer: 'seed', sequence: 1, createdAt: Date.now(), idExpiresAt: to + 3_600_000, rows })
    readUrl = `/api/applications/${mine.appToken}/usage?granularity=minute&from=${from}&to=${to}`
  })

  afterAll(async () => {
    await gate?.close()
    await deletePrefix(admin, prefix)
    await admin.quit()
  })

  /** The ordinary traffic: WORKERS clients sending PER_WORKER requests each; its time, and its statuses. */
  async function ordinary(): Promise<{ ms: number; statuses: number[] }> {
    const statuses: number[] = []
    const started = performance.now()
    await Promise.all(
      Array.from({ length: WORKERS }, async () => {
        for (let i = 0; i < PER_WORKER; i++) {
          const outcome = await gate.handle(coreRequest({ headers: { 'x-app-token': otherToken } }))
          statuses.push(outcome.type === 'next' ? 200 : outcome.response.status)
        }
      }),
    )
    return { ms: performance.now() - started, statuses }
  }

  /** `count` reads of the largest range at once; their statuses. */
  function reads(count: number): Promise<number[]> {
    const authorization = `Basic ${Buffer.from(`ada:${PASSWORD}`).toString('base64')}`
    return Promise.all(
      Array.from({ length: count }, async () => {
        const outcome = await gate.handle(coreRequest({ url: readUrl, headers: { authorization } }))
        return outcome.type === 'next' ? 0 : outcome.response.status
      }),
    )
  }

  it('keeps another application at least a quarter of its throughput, and never answers it 503, beside ten maximal reads', async () => {
    // Warm up: the password's hash, the application cache, the scripts, the reads' connection.
    await ordinary()
    expect(await reads(10)).toEqual(Array(10).fill(200))
    let best = 0
    const seen: number[] = []
    const read: number[] = []
    for (let round = 0; round < 5 && best < 0.25; round++) {
      const alone = await ordinary()
      const reading = reads(10)
      const beside = await ordinary()
      read.push(...(await reading))
      seen.push(...alone.statuses, ...beside.statuses)
      best = Math.max(best, alone.ms / beside.ms)
    }
    expect(seen.filter((status) => status !== 200)).toEqual([])
    expect(read.filter((status) => status !== 200)).toEqual([])
    expect(best, 'the ordinary traffic’s throughput beside the reads, as a share of its throughput alone').toBeGreaterThanOrEqual(0.25)
  })
})
