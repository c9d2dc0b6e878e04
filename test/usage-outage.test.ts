/**
 * Usage flushes around store outages, on servers this file starts itself: a Redis paused
 * (SIGSTOP) while a flush is under way, resumed or killed and restarted (port 17150), and a
 * PostgreSQL stopped and started again (a port of 15450-15499). Counts are kept while the
 * store cannot take them, and end up in it exactly once: nothing lost, nothing doubled.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'
import { createGate, StoreError, type Gate } from '../src/index.js'
import { PostgresStore } from '../src/store/postgres/store.js'
import { RedisStore } from '../src/store/redis/store.js'
import { OwnRedisServer, redisBinariesAvailable } from './redis/servers.js'
import { OwnPostgres, ownPostgresPossible } from './support/postgres-server.js'
import { coreRequest } from './support/requests.js'

const redisPossible = redisBinariesAvailable('usage flushes around a paused and restarted Redis')
const pgPossible = ownPostgresPossible()
const HOUR = 3_600_000

async function send(gate: Gate, appToken: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const outcome = await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    // The whole answer in the message: a refusal says why.
    expect(outcome.type, JSON.stringify(outcome.type === 'respond' ? outcome.response : outcome.type)).toBe('next')
  }
}

/** Flushes until the store takes it (it may still be reconnecting), for at most 10 s. */
async function flushOnceBack(gate: Gate): Promise<void> {
  const deadline = Date.now() + 10_000
  for (;;) {
    try {
      await gate.usage.flush()
      return
    } catch (error) {
      if (Date.now() > deadline) throw error
      await sleep(100)
    }
  }
}

/** The application's requests, summed over each granularity's buckets. */
async function counted(gate: Gate, appToken: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const granularity of ['minute', 'hour', 'day'] as const) {
    const { buckets } = await gate.usage.query({ appToken, granularity, from: Date.now() - 2 * HOUR, to: Date.now() + HOUR })
    out[granularity] = buckets.reduce((n, b) => n + b.requests, 0)
  }
  return out
}

describe.skipIf(!redisPossible)('usage flushes around a paused and restarted Redis', () => {
  // Every write is on disk before Redis answers it: what a restart must keep.
  const redis = new OwnRedisServer(17150, ['--appendonly', 'yes', '--appendfsync', 'always'])
  let gate: Gate | undefined

  afterAll(async () => {
    await gate?.close().catch(() => {})
    await redis.stop()
  })

  it('counts a flush that timed out while Redis was paused once, whether its write landed on resume or was lost with a restart', async () => {
    await redis.start()
    const store = new RedisStore({ url: redis.url, prefix: 'usage-outage:', commandTimeoutMs: 300 })
    gate = createGate({ store, storeTimeoutMs: 500, throttle: false, usage: { flushIntervalMs: 3_600_000 } })
    const { appToken } = await gate.applications.register({ name: 'paused' })
    await send(gate, appToken, 10)
    await gate.usage.flush()

    // Paused: the flush times out, but its commands wait in the socket and land on resume.
    await send(gate, appToken, 20)
    redis.pause()
    await expect(gate.usage.flush()).rejects.toThrow(StoreError)
    await send(gate, appToken, 5)
    redis.resume()
    await flushOnceBack(gate)
    expect(await counted(gate, appToken)).toEqual({ minute: 35, hour: 35, day: 35 })

    // Paused, then killed: the waiting write is lost with the process; the restarted Redis
    // (its data loaded from disk, its script cache empty) gets the batch again, once.
    await send(gate, appToken, 7)
    redis.pause()
    await expect(gate.usage.flush()).rejects.toThrow(StoreError)
    await redis.kill()
    await send(gate, appToken, 3)
    await expect(gate.usage.flush()).rejects.toThrow(StoreError)
    await redis.start()
    await flushOnceBack(gate)
    expect(await counted(gate, appToken)).toEqual({ minute: 45, hour: 45, day: 45 })
  }, 60_000)
})

describe.skipIf(!pgPossible)('usage flushes around a PostgreSQL restart', () => {
  let server: OwnPostgres | undefined
  let gate: Gate | undefined

  afterAll(async () => {
    await gate?.close().catch(() => {})
    await server?.destroy()
  })

  it('keeps the counts while the database is down and writes them once when it is back', async () => {
    server = await OwnPostgres.start({ from: 15450, to: 15499 })
    const store = new PostgresStore({ connectionString: server.url, schema: 'usage_outage', sweepIntervalMs: 0, poolOptions: { connectionTimeoutMillis: 1000 } })
    await store.migrate()
    // The application record stays cached for the whole test, however slow a loaded machine makes it.
    gate = createGate({ store, storeTimeoutMs: 1500, applicationCacheMs: 3_600_000, throttle: false, usage: { flushIntervalMs: 3_600_000 } })
    // The registration's change notification drops the gate's cached copy whenever it
    // arrives: wait for it (every attached sink hears it), so the copy cached next stays.
    const heard = new Promise<void>((resolve) => store.attach({ applicationChanged: () => resolve(), rateKeyEvicted: () => {} }))
    const { appToken } = await gate.applications.register({ name: 'restarted' })
    await heard
    await send(gate, appToken, 10)
    await gate.usage.flush()

    await server.stop('immediate')
    // The application record is cached: requests are still answered while the database is down.
    await send(gate, appToken, 12)
    await expect(gate.usage.flush()).rejects.toThrow(StoreError)
    await send(gate, appToken, 4)
    await expect(gate.usage.flush()).rejects.toThrow(StoreError)
    await server.startAgain()
    await flushOnceBack(gate)
    expect(await counted(gate, appToken)).toEqual({ minute: 26, hour: 26, day: 26 })
  }, 90_000)
})
