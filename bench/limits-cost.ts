/**
 * What several limits cost, against one limit: Redis server time per call (INFO
 * commandstats usec_per_call of EVALSHA, the time Redis spent in the script, which a busy
 * machine disturbs little) for consumeRate and consumeLimits, and for a user's lookupRequest
 * with one rate step and with three limits; and MemoryStore's time per call by number of
 * limits. Starts its own redis-server (port 17191), never the shared one.
 *
 *   npx tsx bench/limits-cost.ts
 */
import { Redis } from 'ioredis'
import { MemoryStore, limitRateKey, type LimitStep } from '../src/index.js'
import { RedisStore } from '../src/store/redis/store.js'
import { OwnRedisServer } from '../test/redis/servers.js'
import { user } from '../src/testing/fixtures.js'

const CALLS = 20_000
const APPS = 500
const HOUR = 3_600_000

const server = new OwnRedisServer(17191)
await server.start()
const store = new RedisStore({ url: server.url, prefix: 'bench:' })
const admin = new Redis(server.url)
try {
  await store.insertUser(user('bench-user'))
  const start = Date.now() - HOUR
  const plan = (i: number): LimitStep[] => [
    { kind: 'rate', key: `app:a${i}`, limit: 1e9, windowMs: 60_000, cost: 1 },
    { kind: 'rate', key: limitRateKey(`app:a${i}`, 'hour'), limit: 1e9, windowMs: HOUR, cost: 1 },
    { kind: 'quota', key: limitRateKey(`app:a${i}`, 'day'), limit: 1e9, periodStart: start, periodEnd: start + 24 * HOUR, cost: 1 },
  ]
  const cases: Array<[string, (i: number) => Promise<unknown>]> = [
    ['consumeRate, 1 limit', (i) => store.consumeRate(`app:a${i}`, 1e9, 60_000, 1)],
    ['consumeLimits, 1 limit', (i) => store.consumeLimits(plan(i).slice(0, 1))],
    ['consumeLimits, 3 limits', (i) => store.consumeLimits(plan(i))],
    ['lookupRequest (user), 1 rate step', (i) => store.lookupRequest!({ credential: { kind: 'user', userId: 'bench-user' }, budget: 'fixed', rate: { key: `app:a${i}`, limit: 1e9, windowMs: 60_000, cost: 1 } })],
    ['lookupRequest (user), 3 limits', (i) => store.lookupRequest!({ credential: { kind: 'user', userId: 'bench-user' }, budget: 'fixed', limits: plan(i) })],
  ]
  const rows: Array<[string, number, number]> = []
  for (const [name, call] of cases) {
    for (let i = 0; i < APPS; i++) await call(i) // every key made, the script cached
    await admin.config('RESETSTAT')
    const cpuBefore = await cpu(admin)
    for (let i = 0; i < CALLS; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => call((i + j) % APPS)))
    const cpuAfter = await cpu(admin)
    const stats = await admin.info('commandstats')
    const usec = Number(/cmdstat_evalsha:calls=\d+,usec=\d+,usec_per_call=([\d.]+)/.exec(stats)?.[1])
    rows.push([name, usec, ((cpuAfter - cpuBefore) * 1e6) / CALLS])
  }
  const base = rows[0]![1]
  const lookupBase = rows[3]![1]
  console.log('Redis, per call (server time of the EVALSHA; whole server CPU):')
  for (const [name, usec, cpuUs] of rows) {
    const ratio = name.startsWith('lookup') ? usec / lookupBase : usec / base
    console.log(`  ${name.padEnd(36)} ${usec.toFixed(2).padStart(6)} µs  (×${ratio.toFixed(2)})   cpu ${cpuUs.toFixed(2)} µs`)
  }
} finally {
  admin.disconnect()
  await store.close()
  await server.stop()
}

// MemoryStore: time per call by the number of limits.
const memory = new MemoryStore()
const memoryPlan = (n: number, i: number): LimitStep[] =>
  Array.from({ length: n }, (_, k) => (k % 2 === 0 ? { kind: 'rate', key: `app:${i}:${k}`, limit: 1e9, windowMs: 60_000, cost: 1 } : { kind: 'quota', key: `app:${i}:${k}`, limit: 1e9, periodStart: 0, periodEnd: Date.now() + HOUR, cost: 1 }))
const time = (run: (i: number) => unknown): number => {
  const n = 300_000
  for (let i = 0; i < n; i++) run(i % 1000)
  const t = process.hrtime.bigint()
  for (let i = 0; i < n; i++) run(i % 1000)
  return Number(process.hrtime.bigint() - t) / n
}
const plans = [1, 2, 3, 5].map((n) => Array.from({ length: 1000 }, (_, i) => memoryPlan(n, i)))
console.log('MemoryStore, per call:')
console.log(`  consumeRate                 ${time((i) => memory.consumeRate(`app:${i}:0`, 1e9, 60_000, 1)).toFixed(0)} ns`)
const perN = [1, 2, 3, 5].map((n, k) => [n, time((i) => memory.consumeLimits(plans[k]![i]!))] as const)
for (const [n, ns] of perN) console.log(`  consumeLimits, ${n} limit(s)    ${ns.toFixed(0)} ns`)
console.log(`  each limit past the first: ${((perN[3]![1] - perN[0]![1]) / 4).toFixed(0)} ns`)

async function cpu(client: Redis): Promise<number> {
  const info = await client.info('cpu')
  return Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1]) + Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1])
}
