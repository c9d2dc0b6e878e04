/**
 * Local-first counting (`throttle.local`) across four gate processes on a three-shard Redis
 * Cluster the test starts itself (ports 17131-17133 of the project's test range), under a
 * flood from one application: the store's commands per request (INFO commandstats on every
 * shard), the requests admitted against the stated bound, credentials and suspension still
 * decided per request, and the cost of a lease lost with a killed process.
 *
 * The bound (docs/guides/throttling.md "Local-first counting"): with L = units, T = ttlMs,
 * N processes and I = window / limit, at most min(N × L, ⌈T / I⌉) more than the exact gate
 * (limit + ⌊t / I⌋ in any t) lets through; below it by at most L − 1 (a lease is whole or
 * refused) plus what instances hold unspent, at most L each, a killed one's included.
 * Timings are measured, never asserted: the assertions are the bounds, with the elapsed time in them.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { Cluster, Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGate, type Gate } from '../src/index.js'
import { applicationRateKey } from '../src/limits/rate-keys.js'
import { RedisStore, redisClientDefaults } from '../src/store/redis/store.js'
import { monitorCommands, type CommandLog, type Monitored } from './redis/monitor.js'
import { OwnRedisCluster, randomPrefix, redisBinariesAvailable } from './redis/servers.js'

const available = redisBinariesAvailable('leases across four processes on a Redis Cluster')
const GATE_PROCESS = fileURLToPath(new URL('./redis/lease-gate-process.ts', import.meta.url))
const PORTS = [17131, 17132, 17133]
const HOUR = 3_600_000
/** The default plan's limit, per hour; the applications under test get their own. */
const PLAN_LIMIT = 1_000_000
const UNITS = 100
/**
 * T: long enough that every process spends a lease of L well within it even on a busy
 * machine (L / T = 20 requests a second, where the floods give each several times that),
 * so that no lease expires unspent: units that do are counted as spent (the bound's "below
 * the limit" part), and the killed process's lease is then all that goes unused.
 */
const TTL_MS = 5000
const N = 4
const HTTPS = { 'x-forwarded-proto': 'https' }
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

interface Instance {
  child: ChildProcess
  url: string
}

async function startInstance(prefix: string): Promise<Instance> {
  const child = spawn(process.execPath, ['--import', 'tsx', GATE_PROCESS], {
    env: { ...process.env, ODG_CLUSTER_PORTS: PORTS.join(','), ODG_PREFIX: prefix, ODG_APP_LIMIT: String(PLAN_LIMIT), ODG_LEASE_UNITS: String(UNITS), ODG_LEASE_TTL_MS: String(TTL_MS) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gate process did not start: ${stderr}`)), 30_000)
    child.once('exit', (code) => reject(new Error(`gate process exited with ${code}: ${stderr}`)))
    lines.once('line', (line) => {
      clearTimeout(timer)
      resolve((JSON.parse(line) as { port: number }).port)
    })
  })
  return { child, url: `http://127.0.0.1:${port}` }
}

async function stopInstance(instance: Instance, signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
  const { child } = instance
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill(signal)
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
  await exited
  clearTimeout(timer)
}

interface Answer {
  status: number
  source: string | null
}

async function ask(instance: Instance, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(`${instance.url}/resource/x.json`, { headers })
  const text = await res.text()
  return { status: res.status, source: res.status === 200 ? (JSON.parse(text) as { source: string | null }).source : null }
}

/** `total` requests, `concurrency` at once, spread round-robin over `instances`; the statuses and the time it took. */
async function flood(instances: readonly Instance[], total: number, headers: Record<string, string>, concurrency = 32) {
  const answers: Answer[] = []
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const n = next++
        answers.push(await ask(instances[n % instances.length] as Instance, headers))
      }
    }),
  )
  return { answers, elapsedMs: performance.now() - started, admitted: answers.filter((a) => a.status === 200).length }
}

/**
 * The commands the clients sent to the shards while `work` ran, as MONITOR shows them on
 * each: a script's own calls (source `lua`) are part of its one command and left out, as
 * are MONITOR's markers. (INFO commandstats counts a script's calls too: GCRA's TIME, GET
 * and SET beside its EVALSHA.)
 */
async function commandsDuring<T>(logs: readonly CommandLog[], work: () => Promise<T>): Promise<{ value: T; commands: Monitored[] }> {
  await Promise.all(logs.map((log) => log.settled()))
  const from = logs.map((log) => log.seen.length)
  const value = await work()
  await Promise.all(logs.map((log) => log.settled()))
  const commands = logs.flatMap((log, i) => log.seen.slice(from[i]).filter((entry) => entry.source !== 'lua' && !(/^echo$/i.test(entry.args[0] ?? '') && entry.args[1]?.startsWith('monitor-marker-'))))
  return { value, commands }
}

/** The commands on an application's rate key. */
function onRateKey(commands: readonly Monitored[], appToken: string): number {
  const key = `rate:{${applicationRateKey(appToken)}}`
  return commands.filter((entry) => entry.args.some((arg) => arg.includes(applicationRateKey(appToken)) || arg.includes(key))).length
}

describe.skipIf(!available)('leases of a hot application across four processes on a three-shard Redis Cluster', () => {
  const cluster = new OwnRedisCluster(PORTS)
  const prefix = randomPrefix('leases')
  let client: Cluster
  let nodes: Redis[] = []
  let logs: CommandLog[] = []
  let gate: Gate
  let instances: Instance[] = []
  const figures: string[] = []

  /** An application on the default (leased) plan, with its own limit per hour. */
  const application = async (name: string, limit: number) => {
    const { appToken } = await gate.applications.register({ name })
    await gate.applications.update(appToken, { limit })
    return appToken
  }

  beforeAll(async () => {
    try {
      await cluster.start()
    } catch (error) {
      await cluster.stop()
      throw error
    }
    client = new Cluster(cluster.nodes, { enableOfflineQueue: false, enableAutoPipelining: true, redisOptions: redisClientDefaults(2000) })
    client.on('error', () => {})
    await new Promise<void>((resolve) => client.once('ready', () => resolve()))
    nodes = PORTS.map((port) => new Redis({ port, host: '127.0.0.1' }))
    logs = await Promise.all(nodes.map((node) => monitorCommands(node)))
    gate = createGate({ store: new RedisStore({ client, prefix }), usage: false, basic: { scrypt: { logN: 10 } }, storeTimeoutMs: 2000 })
    instances = await Promise.all(Array.from({ length: N }, () => startInstance(prefix)))
  }, 120_000)

  afterAll(async () => {
    await Promise.all(instances.map((instance) => stopInstance(instance)))
    await gate?.close()
    client?.disconnect()
    for (const log of logs) log.stop()
    for (const node of nodes) node.disconnect()
    await cluster.stop()
    if (figures.length > 0) process.stdout.write(`\n[leases on a Redis Cluster, ${N} processes, L = ${UNITS}, T = ${TTL_MS} ms]\n${figures.join('\n')}\n`)
  }, 60_000)

  it('costs the store at most 0.1 command per request of a hot application within its limit', async () => {
    const appToken = await application('hot', PLAN_LIMIT)
    const headers = { 'x-app-token': appToken }
    // The application into each process's cache: one read each, before the count.
    for (const instance of instances) expect((await ask(instance, headers)).status).toBe(200)
    const { value, commands } = await commandsDuring(logs, () => flood(instances, 4000, headers))
    const { answers, elapsedMs } = value
    expect(answers.every((a) => a.status === 200 && a.source === 'lease')).toBe(true)
    const rate = onRateKey(commands, appToken)
    figures.push(`within the limit: 4000 requests in ${Math.round(elapsedMs)} ms; ${commands.length} commands on the 3 shards (${rate} on its rate key): ${(commands.length / 4000).toFixed(4)} per request (${(rate / 4000).toFixed(4)})`)
    expect(commands.length / 4000).toBeLessThanOrEqual(0.1)
  }, 120_000)

  it('admits a flood past the limit within the stated bound, at most 0.1 command per request', async () => {
    const limit = 2000
    const interval = HOUR / limit // I = 1.8 s
    const extra = Math.min(N * UNITS, Math.ceil(TTL_MS / interval))
    const appToken = await application('flood', limit)
    const headers = { 'x-app-token': appToken }
    const { value, commands: sent } = await commandsDuring(logs, () => flood(instances, 8000, headers))
    const { admitted, answers, elapsedMs } = value
    const commands = sent.length
    const rate = onRateKey(sent, appToken)
    expect(answers.every((a) => a.status === 200 || a.status === 429)).toBe(true)
    const upper = limit + Math.floor(elapsedMs / interval) + extra
    figures.push(`past the limit: 8000 requests in ${Math.round(elapsedMs)} ms, limit ${limit}: ${admitted} admitted (bound ${upper}); ${commands} commands (${rate} on its rate key): ${(commands / 8000).toFixed(4)} per request`)
    expect(admitted).toBeLessThanOrEqual(upper)
    // Below the limit by at most the units a refused process waits for and what the processes hold unspent.
    expect(admitted).toBeGreaterThanOrEqual(limit - (UNITS - 1) - N * UNITS)
    expect(commands / 8000).toBeLessThanOrEqual(0.1)
  }, 120_000)

  it('refuses a revoked API key and a revoked access token on the very next request in every process, while the leases hold units', async () => {
    const appToken = await application('credentials', PLAN_LIMIT)
    const user = await gate.users.create({ username: `lease-${Date.now()}`, password: 'correct horse battery staple', displayName: 'Ada', email: 'ada@example.org' })
    const { keyId, keySecret } = await gate.apiKeys.create(user.id, { name: 'lease' })
    const { accessToken } = await gate.tokens.issue({ userId: user.id, appToken })
    const withKey = { ...HTTPS, 'x-app-token': appToken, authorization: basic(keyId, keySecret) }
    const withToken = { ...HTTPS, authorization: `Bearer ${accessToken}` }
    for (let round = 0; round < 5; round++) {
      for (const instance of instances) {
        expect(await ask(instance, withKey)).toEqual({ status: 200, source: 'lease' })
        expect(await ask(instance, withToken)).toEqual({ status: 200, source: 'lease' })
      }
    }
    expect(await gate.apiKeys.revoke(keyId)).toBeTruthy()
    for (const instance of instances) expect((await ask(instance, withKey)).status).toBe(401)
    expect(await gate.tokens.revoke(accessToken)).toBe(true)
    for (const instance of instances) expect((await ask(instance, withToken)).status).toBe(401)
    // The application's own requests are still served from the leases.
    for (const instance of instances) expect(await ask(instance, { 'x-app-token': appToken })).toEqual({ status: 200, source: 'lease' })
  }, 60_000)

  it('refuses a suspended application in every process from the moment it learns of it, whatever its lease holds, and never lets one through after', async () => {
    const appToken = await application('suspended', PLAN_LIMIT)
    const headers = { 'x-app-token': appToken }
    await flood(instances, 400, headers)
    await gate.applications.suspend(appToken, { reason: 'flooding' })
    for (const instance of instances) {
      // The change notice tells every process at once; the application cache's 5 s bound it regardless.
      await expect.poll(async () => (await ask(instance, headers)).status, { timeout: 15_000, interval: 20 }).toBe(403)
    }
    const after = await flood(instances, 400, headers)
    expect(after.answers.every((a) => a.status === 403)).toBe(true)
  }, 60_000)

  it('loses at most a lease with a killed process: the others admit the rest of the budget, within the bound', async () => {
    const limit = 1000
    const interval = HOUR / limit // I = 3.6 s
    const extra = Math.min(N * UNITS, Math.ceil(TTL_MS / interval))
    const appToken = await application('killed', limit)
    const headers = { 'x-app-token': appToken }
    const [doomed, ...others] = [instances[3], instances[0], instances[1], instances[2]] as [Instance, ...Instance[]]
    const started = performance.now()
    // The doomed process grows its lease (1, 2, 4, … 64, then 100) and holds most of the last one.
    let admitted = 0
    for (let i = 0; i < 128; i++) if ((await ask(doomed, headers)).status === 200) admitted++
    expect(admitted).toBe(128)
    await stopInstance(doomed, 'SIGKILL')
    instances = instances.filter((instance) => instance !== doomed)
    const rest = await flood(others, 3000, headers)
    admitted += rest.admitted
    const elapsedMs = performance.now() - started
    const refilled = Math.floor(elapsedMs / interval)
    const lost = limit + refilled - admitted
    figures.push(`killed process: limit ${limit}, ${admitted} admitted in ${Math.round(elapsedMs)} ms (bound ${limit + refilled + extra}); ${lost} units not admitted (bound ${2 * UNITS - 2}: the lost lease, and the units a process refused a lease waits for)`)
    expect(admitted).toBeLessThanOrEqual(limit + refilled + extra)
    expect(lost).toBeLessThanOrEqual(2 * (UNITS - 1))
  }, 120_000)
})
