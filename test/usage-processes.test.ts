/**
 * Usage is exact across processes: four instances of a service, each its own Node process
 * with a real HTTP server, answer 1,000 requests between them and close; the store then
 * holds exactly 1,000, on Redis and on PostgreSQL, in minute, hour and day buckets alike.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { createGate, type Gate } from '../src/index.js'
import { PostgresStore } from '../src/store/postgres/store.js'
import { RedisStore } from '../src/store/redis/store.js'
import { deletePrefix, randomPrefix, REDIS_URL, sharedRedisAvailable } from './redis/servers.js'
import { DATABASE_URL, dropSchema, freshSchema, postgresAvailable } from './support/postgres.js'

const redisAvailable = await sharedRedisAvailable('usage counted by four processes on one Redis')
const pgAvailable = await postgresAvailable()
const REDIS_PROCESS = fileURLToPath(new URL('./redis/gate-process.ts', import.meta.url))
const PG_PROCESS = fileURLToPath(new URL('./fixtures/postgres-gate.ts', import.meta.url))
const HOUR = 3_600_000

/** Starts an instance; resolves with its base URL once it listens. */
async function start(script: string, args: string[], env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the instance did not start: ${stderr}`)), 20_000)
    child.once('exit', (code) => reject(new Error(`the instance exited with ${code}: ${stderr}`)))
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once('line', (l) => {
      clearTimeout(timer)
      resolve(l)
    })
  })
  return { child, url: `http://127.0.0.1:${(JSON.parse(line) as { port: number }).port}` }
}

/** 1,000 requests, 40 at a time, round-robin over the instances; @returns the statuses seen. */
async function thousandRequests(urls: string[], appToken: string): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {}
  let next = 0
  await Promise.all(
    Array.from({ length: 40 }, async () => {
      while (next < 1000) {
        const n = next++
        const res = await fetch(`${urls[n % urls.length]}/resource`, { headers: { 'x-app-token': appToken } })
        await res.arrayBuffer()
        statuses[res.status] = (statuses[res.status] ?? 0) + 1
      }
    }),
  )
  return statuses
}

/** Waits for a child to exit (its gate closed, its counts flushed). */
function exited(child: ChildProcess): Promise<unknown> {
  return child.exitCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', resolve))
}

/** Every granularity's total of the application, over the last day (buckets straddling the range included). */
async function totals(gate: Gate, appToken: string) {
  const from = Date.now() - 2 * HOUR
  const sum = async (granularity: 'minute' | 'hour' | 'day') => {
    const { buckets } = await gate.usage.query({ appToken, granularity, from, to: Date.now() + HOUR })
    return buckets.reduce((t, b) => ({ requests: t.requests + b.requests, throttled: t.throttled + b.throttled, ok: t.ok + b.statuses['2xx'] }), { requests: 0, throttled: 0, ok: 0 })
  }
  return { minute: await sum('minute'), hour: await sum('hour'), day: await sum('day') }
}

const EXACT = { requests: 1000, throttled: 900, ok: 100 }

describe.skipIf(!redisAvailable)('usage of four processes on one Redis', () => {
  const prefix = randomPrefix('usage-processes')
  const children: ChildProcess[] = []
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
    const admin = new Redis(REDIS_URL)
    await deletePrefix(admin, prefix)
    await admin.quit()
  })

  it('holds exactly the 1,000 requests they answered once they have closed, in every granularity', async () => {
    const reader = createGate({ store: new RedisStore({ url: REDIS_URL, prefix }), usage: false })
    try {
      const { appToken } = await reader.applications.register({ name: 'counted by four' })
      const instances = await Promise.all([1, 2, 3, 4].map(() => start(REDIS_PROCESS, [], { REDIS_URL, ODG_PREFIX: prefix, ODG_APP_LIMIT: '100' })))
      children.push(...instances.map((i) => i.child))
      expect(await thousandRequests(instances.map((i) => i.url), appToken)).toEqual({ 200: 100, 429: 900 })
      for (const { child } of instances) child.kill('SIGTERM')
      await Promise.all(instances.map(({ child }) => exited(child)))
      expect(await totals(reader, appToken)).toEqual({ minute: EXACT, hour: EXACT, day: EXACT })
      expect(await reader.usage.top({ from: Date.now() - HOUR })).toEqual([{ appToken, name: 'counted by four', requests: 1000, throttled: 900 }])
    } finally {
      await reader.close()
    }
  }, 90_000)
})

describe.skipIf(!pgAvailable)('usage of four processes on one PostgreSQL', () => {
  const schema = freshSchema('usage_procs')
  const children: ChildProcess[] = []
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
    await dropSchema(schema)
  })

  it('holds exactly the 1,000 requests they answered once they have closed, in every granularity', async () => {
    const store = new PostgresStore({ connectionString: DATABASE_URL, schema, sweepIntervalMs: 0 })
    await store.migrate()
    const reader = createGate({ store, usage: false })
    try {
      const { appToken } = await reader.applications.register({ name: 'counted by four' })
      const instances = await Promise.all([1, 2, 3, 4].map(() => start(PG_PROCESS, ['serve'], { DATABASE_URL, SCHEMA: schema, LIMIT: '100' })))
      children.push(...instances.map((i) => i.child))
      expect(await thousandRequests(instances.map((i) => i.url), appToken)).toEqual({ 200: 100, 429: 900 })
      for (const { child } of instances) child.stdin?.end()
      await Promise.all(instances.map(({ child }) => exited(child)))
      expect(await totals(reader, appToken)).toEqual({ minute: EXACT, hour: EXACT, day: EXACT })
      expect(await reader.usage.top({ from: Date.now() - HOUR })).toEqual([{ appToken, name: 'counted by four', requests: 1000, throttled: 900 }])
    } finally {
      await reader.close()
    }
  }, 90_000)
})
