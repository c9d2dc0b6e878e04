/**
 * The gate through Redis outages, on a redis-server this file starts on its own port
 * (17010): killed, paused with SIGSTOP (no answer at all), restarted, SCRIPT FLUSH. Every
 * request is answered after one storeTimeoutMs, each onStoreError mode does what it
 * says, and the gate uses Redis again within a second of it answering, without a restart.
 *
 * The bounds leave room for a loaded machine (CI shares two cores): storeTimeoutMs is long
 * enough that a healthy Redis never misses it there, and an answer may take the loop's own
 * delays on top of one timeout (which the guard partly gives back to the call). What they
 * rule out is a request waiting for the client's command timeout (ten times longer) or
 * hanging; that a request waits one timeout and not several is proven without timing in
 * test/store-outage.test.ts.
 */
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { nodeGate } from '../adapters/node.js'
import { createGate, type Gate } from '../src/index.js'
import { RedisStore } from '../src/store/redis/store.js'
import { listen, type RunningServer } from './adapters/servers.js'
import { OwnRedisServer, randomPrefix, redisBinariesAvailable } from './redis/servers.js'

const STORE_TIMEOUT_MS = 500
/**
 * One timeout, with the time the guard gives back when this process's event loop was late
 * (three timeouts in all at most), and a loaded machine's delays.
 */
const ANSWER_WITHIN_MS = 4 * STORE_TIMEOUT_MS
const LIMIT = 100
const available = redisBinariesAvailable('Redis outages')

type Mode = 'memory' | 'fail-open' | 'fail-closed'
interface Answer {
  status: number
  ms: number
  ratelimit: string | null
}

describe.skipIf(!available)('the gate through Redis outages', () => {
  const redis = new OwnRedisServer(17010)
  const prefix = randomPrefix('outage')
  const rateKey = `${prefix}rate:{anon}`
  let admin: Redis
  let gate: Gate
  let store: RedisStore
  let http: RunningServer
  let events: { storeError: number; storeRecovered: number }

  beforeAll(async () => {
    await redis.start()
    admin = new Redis(redis.url, { maxRetriesPerRequest: 0, retryStrategy: () => 50 })
    admin.on('error', () => {})
  })
  afterAll(async () => {
    admin?.disconnect()
    await redis.stop()
  })
  beforeEach(async () => {
    redis.resume()
    if (redis.pid === undefined) await redis.start()
    await waitFor(async () => (await admin.ping().catch(() => '')) === 'PONG')
    await admin.del(rateKey)
  })
  afterEach(async () => {
    redis.resume()
    await http?.close()
    await gate?.close()
  })

  /** A gate on this Redis, mounted on node:http; the command timeout is longer than the gate's, so the gate's own bound is what is tested. */
  async function start(mode: Mode, commandTimeoutMs = 10 * STORE_TIMEOUT_MS): Promise<void> {
    store = new RedisStore({ url: redis.url, prefix, commandTimeoutMs })
    gate = createGate({
      store,
      storeTimeoutMs: STORE_TIMEOUT_MS,
      throttle: { anonymous: { limit: LIMIT, windowMs: 60_000, scope: 'shared' }, onStoreError: mode },
    })
    events = { storeError: 0, storeRecovered: 0 }
    gate.on('storeError', () => events.storeError++)
    gate.on('storeRecovered', () => events.storeRecovered++)
    http = await listen(nodeGate(gate, (_req, res) => res.end('ok')))
    // Warm: one request counted in Redis.
    expect((await request()).status).toBe(200)
    expect(await admin.exists(rateKey)).toBe(1)
  }

  async function request(headers: Record<string, string> = {}): Promise<Answer> {
    const started = performance.now()
    const res = await fetch(`${http.url}/resource/x.json`, { headers })
    await res.arrayBuffer()
    return { status: res.status, ms: performance.now() - started, ratelimit: res.headers.get('ratelimit') }
  }

  /** Sequential requests during an outage, and a burst of concurrent ones. */
  async function duringOutage(): Promise<Answer[]> {
    const answers: Answer[] = []
    for (let i = 0; i < 5; i++) answers.push(await request())
    answers.push(...(await Promise.all(Array.from({ length: 10 }, () => request()))))
    expect(answers.map((a) => Math.round(a.ms)).filter((ms) => ms >= ANSWER_WITHIN_MS)).toEqual([])
    return answers
  }

  function expectMode(mode: Mode, answers: Answer[]): void {
    if (mode === 'fail-closed') {
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 503))
    } else if (mode === 'fail-open') {
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200))
      // Nothing was counted: no RateLimit header may claim a budget.
      expect(answers.map((a) => a.ratelimit)).toEqual(answers.map(() => null))
    } else {
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200))
      // The local count, or nothing: never the same full budget on every response.
      const remaining = answers.slice(0, 5).map((a) => (a.ratelimit === null ? null : Number(/r=(\d+)/.exec(a.ratelimit)?.[1])))
      // (GCRA refills between requests, so two in a row may show the same figure.)
      if (remaining.some((r) => r !== null)) {
        for (let i = 1; i < remaining.length; i++) expect(remaining[i]).toBeLessThanOrEqual(remaining[i - 1] as number)
        expect(remaining[4]).toBeLessThan(remaining[0] as number)
      }
    }
  }

  /**
   * Once Redis answers again: how long until a request is counted in Redis. The rate key
   * is moved by another client first, so that only a step this gate runs in Redis after
   * the outage can move it again.
   */
  async function msUntilRedisCountsAgain(mode: Mode): Promise<number> {
    await waitFor(async () => (await admin.ping().catch(() => '')) === 'PONG')
    const since = performance.now()
    const marker = new RedisStore({ url: redis.url, prefix })
    await marker.consumeRate('anon', LIMIT, 60_000, 1)
    const before = await admin.get(rateKey)
    await marker.close()
    for (;;) {
      const answer = await request()
      if ((await admin.get(rateKey)) !== before) {
        expect(answer.status).toBe(200)
        expect(answer.ratelimit).toMatch(/^"anon";r=\d+;t=\d+$/)
        return performance.now() - since
      }
      if (performance.now() - since > 3000) throw new Error(`${mode}: Redis was not used again within 3 s`)
      await sleep(25)
    }
  }

  describe.each(['memory', 'fail-open', 'fail-closed'] as const)("onStoreError '%s'", (mode) => {
    it('answers every request in time while Redis is killed, and uses the restarted Redis within a second', async () => {
      await start(mode)
      await redis.kill()
      expectMode(mode, await duringOutage())
      expect(events.storeError).toBe(1)
      await redis.start()
      expect(await msUntilRedisCountsAgain(mode)).toBeLessThan(1000)
      expect(events.storeRecovered).toBe(1)
      expect(events.storeError).toBe(1)
    })

    it('answers every request in time while Redis is paused and answers nothing, and uses it again within a second', async () => {
      await start(mode)
      redis.pause()
      expectMode(mode, await duringOutage())
      expect(events.storeError).toBe(1)
      redis.resume()
      expect(await msUntilRedisCountsAgain(mode)).toBeLessThan(1000)
      expect(events.storeRecovered).toBe(1)
    })
  })

  it('serves a known application from its cached record while Redis is down, and counts it in Redis again after', async () => {
    await start('memory')
    // The store tells the gate of the registration twice: at once, and again when its own
    // pub/sub message comes back, which drops the copy the first request would cache. On a
    // busy machine that echo came after the first request, and the outage found nothing
    // cached: wait for it first (sinks are told in the order attached, the gate's first).
    let told = 0
    store.attach({ rateKeyEvicted: () => {}, applicationChanged: () => told++ })
    const { appToken } = await gate.applications.register({ name: 'cached through an outage' })
    await waitFor(() => told === 2)
    const withToken = { 'x-app-token': appToken }
    expect((await request(withToken)).ratelimit).toMatch(/^"app";r=\d+/)
    await redis.kill()
    for (let i = 0; i < 5; i++) {
      const answer = await request(withToken)
      expect(answer).toMatchObject({ status: 200, ratelimit: null })
      expect(answer.ms).toBeLessThan(ANSWER_WITHIN_MS)
    }
    await redis.start()
    const since = performance.now()
    while ((await request(withToken)).ratelimit === null) {
      expect(performance.now() - since).toBeLessThan(1000)
      await sleep(25)
    }
    expect(await admin.exists(`${prefix}rate:{app:${appToken}}`)).toBe(1)
    expect(events).toEqual({ storeError: 1, storeRecovered: 1 })
  })

  describe('an event loop blocked for longer than storeTimeoutMs', () => {
    /**
     * The bytes the store's connection has handed to the system so far: `bytesWritten`
     * also counts what the socket still holds (the store corks it until the event loop's
     * turn ends), `writableLength` is that.
     */
    const sent = () => {
      const stream = (store.client as Redis).stream
      return stream.bytesWritten - stream.writableLength
    }

    it('hears the reply that came in meanwhile, and declares no outage', async () => {
      await start('fail-closed')
      const before = sent()
      const call = gate.store.consumeRate('blocked-loop', 10, 60_000, 1)
      // Queued after the store's setImmediate that sends the command: the command is out
      // and Redis answers while this blocks.
      let sentFirst = false
      setImmediate(() => {
        sentFirst = sent() > before
        block(STORE_TIMEOUT_MS * 2)
      })
      await expect(call).resolves.toMatchObject({ allowed: true })
      expect(sentFirst).toBe(true)
      expect(events.storeError).toBe(0)
      expect((await request()).status).toBe(200)
    })

    it('gives a call whose command the blocked loop held back its time, and declares no outage', async () => {
      await start('fail-closed')
      const before = sent()
      let sentFirst = true
      // Queued before the call: it blocks before the store sends the command. Redis then
      // takes a moment to answer (as a busy one would), so the reply is not there yet when
      // the loop gets its next turn: only the time the call is given back can hear it.
      setImmediate(() => {
        sentFirst = sent() > before
        redis.pause()
        block(STORE_TIMEOUT_MS * 2)
        setTimeout(() => redis.resume(), STORE_TIMEOUT_MS / 5)
      })
      const call = gate.store.consumeRate('blocked-loop', 10, 60_000, 1)
      await expect(call).resolves.toMatchObject({ allowed: true })
      expect(sentFirst).toBe(false)
      expect(events.storeError).toBe(0)
      expect((await request()).status).toBe(200)
    })

    it('still declares an outage when Redis answers nothing', async () => {
      await start('fail-closed')
      redis.pause()
      const started = performance.now()
      const call = gate.store.consumeRate('blocked-loop', 10, 60_000, 1)
      setImmediate(() => block(STORE_TIMEOUT_MS * 2))
      await expect(call).rejects.toThrow(/unavailable/)
      // Never more than three timeouts, whatever the loop did.
      expect(performance.now() - started).toBeLessThan(STORE_TIMEOUT_MS * 3 + 1000)
      expect(events.storeError).toBe(1)
    })
  })

  it('goes on counting in Redis after SCRIPT FLUSH, with no error', async () => {
    await start('fail-closed')
    await admin.script('FLUSH')
    for (let i = 0; i < 3; i++) {
      const before = await admin.get(rateKey)
      expect((await request()).status).toBe(200)
      expect(await admin.get(rateKey)).not.toBe(before)
    }
    expect(events.storeError).toBe(0)
  })

  it('fails its own calls fast: at once on a refused connection, within the command timeout on a paused server', async () => {
    const commandTimeoutMs = 1000
    const store = new RedisStore({ url: redis.url, prefix, commandTimeoutMs })
    try {
      await store.consumeRate('fast', 10, 1000, 1)
      redis.pause()
      let started = performance.now()
      await expect(store.consumeRate('fast', 10, 1000, 1)).rejects.toThrow(/timed out/i)
      expect(performance.now() - started).toBeLessThan(2 * commandTimeoutMs)
      redis.resume()
      await redis.kill()
      await waitFor(() => store.client.status !== 'ready')
      started = performance.now()
      await expect(store.consumeRate('fast', 10, 1000, 1)).rejects.toThrow()
      // At once: nothing like the command timeout.
      expect(performance.now() - started).toBeLessThan(commandTimeoutMs / 4)
      await redis.start()
      started = performance.now()
      await waitFor(async () => (await store.consumeRate('fast', 10, 1000, 1).catch(() => undefined)) !== undefined)
      expect(performance.now() - started).toBeLessThan(1000)
    } finally {
      await store.close()
    }
  })

  it('leaves no connection behind once the gate is closed, after an outage', async () => {
    await start('memory')
    await redis.kill()
    await duringOutage()
    await redis.start()
    await msUntilRedisCountsAgain('memory')
    await http.close()
    await gate.close()
    // Only the admin connection is left (the server may take a moment to see the others go).
    await expect.poll(async () => ((await admin.client('LIST')) as string).trim().split('\n').length, { timeout: 5000, interval: 50 }).toBe(1)
  })
})

/** Keeps the event loop busy for `ms`, as a long synchronous task of the host would. */
function block(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // busy: nothing else in this process runs meanwhile
  }
}

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await sleep(10)
  }
}
