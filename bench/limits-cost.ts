/**
 * What several limits cost, against one limit: Redis server time per call (INFO
 * commandstats usec_per_call of EVALSHA, the time Redis spent in the script) for
 * consumeRate and consumeLimits, and for a user's lookupRequest with one rate step and with
 * three limits; and MemoryStore's time per call by number of limits. Starts its own
 * redis-server (port 17191), never the shared one.
 *
 *   npx tsx bench/limits-cost.ts
 *
 * Times move with whatever else the machine runs (two to three times on a busy 2-core
 * machine, and not in proportion). BENCH_CALLGRIND=1 runs the redis-server under valgrind's
 * callgrind instead and reports the server's instructions per call, counted only over the
 * measured calls (its event loop, the socket reads and writes and the script, all in one
 * count): the same figures whatever else runs (about a minute; the MemoryStore rows are
 * left out).
 *
 *   BENCH_CALLGRIND=1 npx tsx bench/limits-cost.ts
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { MemoryStore, limitRateKey, type LimitStep } from '../src/index.js'
import { RedisStore } from '../src/store/redis/store.js'
import { OwnRedisServer } from '../test/redis/servers.js'
import { accessToken, apiKey, user } from '../src/testing/fixtures.js'

const CALLS = 20_000
const APPS = 500
const HOUR = 3_600_000

/**
 * A redis-server under valgrind --tool=callgrind, counting nothing until {@link count} turns
 * it on; `count('off')` dumps and returns the instructions counted since.
 */
class CallgrindRedis {
  readonly #dir = mkdtempSync(join(tmpdir(), 'odg-callgrind-'))
  readonly #port: number
  #child: ChildProcess | undefined
  #dumps = 0

  constructor(port: number) {
    this.#port = port
  }

  get url(): string {
    return `redis://127.0.0.1:${this.#port}`
  }

  async start(): Promise<void> {
    const args = ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${join(this.#dir, 'cg.out')}`, 'redis-server', '--port', String(this.#port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.#dir]
    const child = spawn('valgrind', args, { stdio: 'ignore' })
    this.#child = child
    process.once('exit', () => child.kill('SIGKILL'))
    for (let tries = 0; tries < 300; tries++) {
      if (spawnSync('redis-cli', ['-p', String(this.#port), 'ping'], { encoding: 'utf8' }).stdout.trim() === 'PONG') return
      await sleep(100)
    }
    throw new Error('redis-server under callgrind did not answer in 30 s')
  }

  count(onOff: 'on' | 'off'): number {
    const pid = String(this.#child!.pid)
    if (onOff === 'on') {
      control('-z', pid) // counts from zero
      control('-i', 'on', pid)
      return 0
    }
    control('-d', pid)
    control('-i', 'off', pid)
    this.#dumps++
    const dump = readdirSync(this.#dir).find((file) => file.endsWith(`.${this.#dumps}`))
    const totals = /^(?:totals|summary): (\d+)/m.exec(readFileSync(join(this.#dir, dump!), 'utf8'))
    return Number(totals![1])
  }

  async stop(): Promise<void> {
    this.#child?.kill('SIGTERM')
    await new Promise((resolve) => this.#child?.once('exit', resolve))
    rmSync(this.#dir, { recursive: true, force: true })
  }
}

function control(...args: string[]): void {
  const run = spawnSync('callgrind_control', args, { encoding: 'utf8' })
  if (run.status !== 0) throw new Error(`callgrind_control ${args.join(' ')}: ${run.stderr || run.stdout}`)
}

const CALLGRIND = process.env.BENCH_CALLGRIND === '1'
const server = CALLGRIND ? new CallgrindRedis(17191) : new OwnRedisServer(17191)
await server.start()
const store = new RedisStore({ url: server.url, prefix: 'bench:', ...(CALLGRIND ? { commandTimeoutMs: 60_000 } : {}) })
const admin = new Redis(server.url)
try {
  await store.insertUser(user('bench-user'))
  const tokenHash = 'e'.repeat(64)
  await store.insertAccessToken(accessToken(tokenHash, { userId: 'bench-user', appToken: 'bench-app', expiresAt: Date.now() + 24 * HOUR }))
  await store.insertApiKey(apiKey('benchkey00000000000000000', 'bench-user'))
  const token = () => ({ kind: 'accessToken' as const, tokenHash, now: Date.now() })
  const start = Date.now() - HOUR
  const plan = (i: number): LimitStep[] => [
    { kind: 'rate', key: limitRateKey(`app:a${i}`, 'minute'), limit: 1e9, windowMs: 60_000, cost: 1 },
    { kind: 'rate', key: limitRateKey(`app:a${i}`, 'hour'), limit: 1e9, windowMs: HOUR, cost: 1 },
    { kind: 'quota', key: limitRateKey(`app:a${i}`, 'day'), limit: 1e9, periodStart: start, periodEnd: start + 24 * HOUR, cost: 1 },
  ]
  const cases: Array<[string, (i: number) => Promise<unknown>]> = [
    ['consumeRate, 1 limit', (i) => store.consumeRate(`app:a${i}`, 1e9, 60_000, 1)],
    ['consumeLimits, 1 limit', (i) => store.consumeLimits(plan(i).slice(0, 1))],
    ['consumeLimits, 3 limits', (i) => store.consumeLimits(plan(i))],
    ['lookupRequest (user), 1 rate step', (i) => store.lookupRequest!({ credential: { kind: 'user', userId: 'bench-user' }, budget: 'fixed', rate: { key: `app:a${i}`, limit: 1e9, windowMs: 60_000, cost: 1 } })],
    ['lookupRequest (user), 3 limits', (i) => store.lookupRequest!({ credential: { kind: 'user', userId: 'bench-user' }, budget: 'fixed', limits: plan(i) })],
    ['lookupRequest (token), 1 rate step', (i) => store.lookupRequest!({ credential: token(), budget: 'fixed', rate: { key: `app:a${i}`, limit: 1e9, windowMs: 60_000, cost: 1 } })],
    ['lookupRequest (token), 3 limits', (i) => store.lookupRequest!({ credential: token(), budget: 'fixed', limits: plan(i) })],
    ['lookupRequest (API key), 1 rate step', (i) => store.lookupRequest!({ credential: { kind: 'apiKey', keyId: 'benchkey00000000000000000' }, budget: 'fixed', rate: { key: `app:a${i}`, limit: 1e9, windowMs: 60_000, cost: 1 } })],
  ]
  const rows: Array<[string, number, number]> = []
  for (const [name, call] of cases) {
    for (let i = 0; i < APPS; i++) await call(i) // every key made, the script cached
    const sample = (await call(0)) as { user?: unknown; stepped?: unknown }
    if (name.startsWith('lookup') && (sample.stepped !== 'rate' || sample.user === undefined)) throw new Error(`${name}: no user read`)
    if (server instanceof CallgrindRedis) {
      const calls = CALLS / 10
      server.count('on')
      for (let i = 0; i < calls; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => call((i + j) % APPS)))
      rows.push([name, server.count('off') / calls, 0])
      continue
    }
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
  console.log(CALLGRIND ? 'Redis, per call (server instructions, callgrind):' : 'Redis, per call (server time of the EVALSHA; whole server CPU):')
  for (const [name, value, cpuUs] of rows) {
    const ratio = name.startsWith('lookup') ? value / lookupBase : value / base
    const figure = CALLGRIND ? `${Math.round(value).toLocaleString('en-US').padStart(8)} instructions` : `${value.toFixed(2).padStart(6)} µs`
    console.log(`  ${name.padEnd(36)} ${figure}  (×${ratio.toFixed(2)})${CALLGRIND ? '' : `   cpu ${cpuUs.toFixed(2)} µs`}`)
  }
} finally {
  admin.disconnect()
  await store.close()
  await server.stop()
}

if (CALLGRIND) process.exit(0)

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
