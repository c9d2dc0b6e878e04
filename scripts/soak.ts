/**
 * `npm run soak [-- --minutes N] [-- --instances N]`: mixed traffic on several gate
 * processes sharing one Redis, which is restarted twice and paused once under load.
 * Prints the figures, writes them as JSON and a plot (SVG) under soak-results/, and exits
 * non-zero when a figure that must be zero is not, or a request took longer than
 * storeTimeoutMs + 100 ms. See CONTRIBUTING.md, "Soak".
 */
import { fork, type ChildProcess } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { createGate } from '../src/index.js'
import { RedisStore } from '../src/store/redis/store.js'
import { type Sample, SoakClient, type Verdict } from './soak/client.js'
import { freePort, ping, type RedisStall, SoakRedis } from './soak/redis.js'
import { limitFigures, overlaps, type Outage, percentile, svgPlot, timeline } from './soak/report.js'
import { GATE_SETTINGS, LATENCY_BOUND_MS, PORT_RANGE } from './soak/settings.js'
import { type Stall, watchStalls } from './soak/stalls.js'
import { CALLBACK_PREFIX, type Credential, HOT_LIMIT, type Instance, Traffic, type World } from './soak/traffic.js'

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '3' },
    instances: { type: 'string', default: '3' },
    workers: { type: 'string', default: '6' },
    out: { type: 'string', default: 'soak-results' },
  },
})
const minutes = Number(args.minutes)
const instanceCount = Number(args.instances)
const workers = Number(args.workers)
if (!(minutes > 0) || !Number.isInteger(instanceCount) || instanceCount < 2 || !Number.isInteger(workers) || workers < 1) {
  console.error('usage: npm run soak -- [--minutes N] [--instances N>=2] [--workers N]')
  process.exit(2)
}
const DURATION_MS = minutes * 60_000
/** After Redis answers again, how long the gate gets to use it again before a 503 counts against it ("within a second", docs/guides/redis.md). */
const RECOVERY_MARGIN_MS = 1000
/** How long Redis stays down or paused: 2 to 5 s. */
const DOWN_MS = Math.min(5000, Math.max(2000, DURATION_MS * 0.02))
/** Each worker's pause between actions, up to: the load stays well below what the machine can take, so latency reflects the outages, not a saturated CPU. */
const THINK_MS = 60
const PREFIX = `soak:${process.pid}:`

/** When the run started, in ms since the soak's origin: events are reported relative to it. */
let runStartMs = 0

const log = (line: string) => process.stdout.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${line}\n`)

interface Child {
  process: ChildProcess
  instance: Instance
  events: Array<{ name: string; at: number; [key: string]: unknown }>
  memory: Array<(measure: Measure) => void>
  /** Its event loop's stalls, ms since the soak's origin. */
  stalls: Stall[]
}

/** A gate process's memory after a full GC, and how late its event loop ran since the last measure. */
interface Measure {
  usage: NodeJS.MemoryUsage
  loop: { p99Ms: number; maxMs: number }
}

async function startChild(redisUrl: string, epoch: number): Promise<Child> {
  const child = fork(new URL('./soak/gate-process.ts', import.meta.url), [], {
    execArgv: ['--expose-gc', '--import', 'tsx'],
    env: { ...process.env, REDIS_URL: redisUrl, ODG_PREFIX: PREFIX, ODG_SOAK: JSON.stringify(GATE_SETTINGS) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const events: Child['events'] = []
  const memory: Child['memory'] = []
  const stalls: Stall[] = []
  const instance = await new Promise<Instance>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('a gate process did not start within 20 s')), 20_000)
    child.once('exit', (code) => reject(new Error(`a gate process exited with ${code}`)))
    child.on('message', (message: { type: string; http?: number; https?: number; usage?: NodeJS.MemoryUsage; loop?: Measure['loop']; at?: number; name?: string }) => {
      if (message.type === 'listening') {
        clearTimeout(timer)
        resolve({ http: `http://127.0.0.1:${message.http}`, https: `https://127.0.0.1:${message.https}` })
      } else if (message.type === 'stall') {
        const stall = message as unknown as Stall
        stalls.push({ from: stall.from - epoch, to: stall.to - epoch })
      } else if (message.type === 'event') {
        events.push({ ...message, name: message.name as string, at: (message.at as number) - epoch - runStartMs })
      } else if (message.type === 'memory') {
        memory.shift()?.({ usage: message.usage as NodeJS.MemoryUsage, loop: message.loop as Measure['loop'] })
      }
    })
  })
  return { process: child, instance, events, memory, stalls }
}

function measure(child: Child): Promise<Measure> {
  return new Promise((resolve) => {
    child.memory.push(resolve)
    child.process.send({ type: 'memory' })
  })
}

async function stopChild(child: Child): Promise<void> {
  if (child.process.exitCode !== null) return
  const exited = new Promise((resolve) => child.process.once('exit', resolve))
  child.process.send({ type: 'stop' })
  const timer = setTimeout(() => child.process.kill('SIGKILL'), 5000)
  await exited
  clearTimeout(timer)
}

const mb = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10

async function main(): Promise<number> {
  const port = await freePort(...PORT_RANGE)
  const redis = new SoakRedis(port)
  const children: Child[] = []
  let client: SoakClient | undefined
  try {
    await redis.start()
    log(`redis-server on ${port} (append-only file), ${instanceCount} gate processes, ${minutes} min, scrypt logN ${GATE_SETTINGS.scryptLogN}`)

    // The world: applications, users, keys and tokens, made through a gate of the soak's own.
    const admin = createGate({ store: new RedisStore({ url: redis.url, prefix: PREFIX }), basic: { scrypt: { logN: GATE_SETTINGS.scryptLogN } } })
    const register = async (name: string, extra: { callbackPrefix?: string; limit?: number } = {}) => {
      const { appToken, secretToken } = await admin.applications.register({ name, ...extra })
      return { appToken, secretToken }
    }
    const apps = await Promise.all([1, 2, 3, 4].map((n) => register(`soak app ${n}`)))
    const hotApp = await register('soak hot app', { limit: HOT_LIMIT.limit })
    const oauthClient = await register('soak OAuth client', { callbackPrefix: CALLBACK_PREFIX })
    const users = []
    for (const n of [1, 2, 3, 4]) {
      const username = `soak-user-${n}`
      const password = `soak password ${n} ${process.pid}`
      const user = await admin.users.create({ username, password, displayName: `Soak User ${n}`, email: `${username}@soak.example` })
      users.push({ id: user.id, username, password })
    }
    await admin.users.create({ username: 'mallory', password: `mallory ${Math.random()}`, displayName: 'Mallory', email: 'mallory@soak.example' })
    const keys: Credential[] = []
    const tokens: Credential[] = []
    for (const user of users) {
      for (let i = 0; i < 3; i++) {
        const { keyId, keySecret } = await admin.apiKeys.create(user.id, { name: `setup key ${i}` })
        keys.push({ id: keyId, secret: keySecret, user, revokedAt: null, pendingSince: null })
      }
      for (let i = 0; i < 10; i++) {
        const { accessToken } = await admin.tokens.issue({ userId: user.id, appToken: oauthClient.appToken })
        tokens.push({ id: accessToken, user, revokedAt: null, pendingSince: null })
      }
    }
    await admin.close()

    const epoch = Date.now()
    const driverStalls: Stall[] = []
    const stopWatching = watchStalls(80, (stall) => driverStalls.push({ from: stall.from - epoch, to: stall.to - epoch }))
    const origin = performance.now() - (Date.now() - epoch)
    children.push(...(await Promise.all(Array.from({ length: instanceCount }, () => startChild(redis.url, epoch)))))
    client = new SoakClient(origin)
    const world: World = { instances: children.map((c) => c.instance), apps, hotApp, client: oauthClient, users, mallory: 'mallory', keys, tokens }
    const traffic = new Traffic(client, world)
    await traffic.touchApplications()
    const start = client.now()
    runStartMs = start
    const loadBefore = loadavg()
    log(`gates at ${world.instances.map((i) => `${i.http} ${i.https}`).join(', ')}; warming up`)

    // The run: traffic all along; the faults at fixed fractions of it.
    const runUntil = start + DURATION_MS
    const running = traffic.run(workers, runUntil, THINK_MS)
    const outages: Outage[] = []
    const stalls: RedisStall[] = []
    const at = async (fraction: number) => {
      const wait = start + fraction * DURATION_MS - client!.now()
      if (wait > 0) await sleep(wait)
    }
    const waitForPing = async () => {
      while (!(await ping(port))) await sleep(10)
      return client!.now()
    }
    const fault = async (label: string, action: () => Promise<void>) => {
      const began = client!.now()
      await action()
      const recovered = await waitForPing()
      outages.push({ label, start: began, recovered, windowEnd: recovered + RECOVERY_MARGIN_MS })
      log(`${label}: Redis answered again after ${Math.round(recovered - began)} ms`)
    }
    // Warm-up: the first tenth of the run (at most 20 s), then memory is measured.
    await sleep(Math.min(20_000, DURATION_MS * 0.1))
    const warm = await Promise.all(children.map(measure))
    const schedule = async () => {
      await at(0.25)
      await fault('restart (SIGTERM)', async () => {
        stalls.push(...(await redis.stalls()))
        await redis.stop('SIGTERM')
        await sleep(DOWN_MS)
        await redis.start()
      })
      await at(0.5)
      await fault('pause (SIGSTOP)', async () => {
        redis.pause()
        await sleep(DOWN_MS)
        redis.resume()
      })
      await at(0.75)
      await fault('crash (SIGKILL) + restart', async () => {
        stalls.push(...(await redis.stalls()))
        await redis.stop('SIGKILL')
        await sleep(DOWN_MS)
        await redis.start()
      })
    }
    await Promise.all([running, schedule()])
    const end = client.now()
    log(`run over after ${Math.round((end - start) / 1000)} s; auditing every credential on every instance`)
    const auditFrom = client.samples.length
    const audit = await traffic.audit(3, 500)
    const auditSamples = client.samples.slice(auditFrom)
    const endMemory = await Promise.all(children.map(measure))
    stalls.push(...(await redis.stalls()))

    // A 503 (or temporarily_unavailable) counts as the outage's only when the request overlapped one.
    stopWatching()
    const outsideOutages: Array<{ kind: string; status: number; instance: number; atS: number }> = []
    const unavailableOutside = new Set<Sample>()
    for (const sample of client.samples) {
      if (sample.verdict === 'outage-503' && !overlaps(sample, outages)) {
        sample.verdict = 'unexpected'
        unavailableOutside.add(sample)
        outsideOutages.push({ kind: sample.kind, status: sample.status, instance: sample.instance, atS: round((sample.start - start) / 1000) })
      }
    }
    const samples = client.samples.filter((s) => s.end <= end)
    const verdicts: Record<Verdict, number> = { ok: 0, 'outage-503': 0, 'should-work-failed': 0, 'should-fail-worked': 0, unexpected: 0, unjudged: 0 }
    const byStatus: Record<string, number> = {}
    const byKind: Record<string, { requests: number; byStatus: Record<string, number>; verdicts: Partial<Record<Verdict, number>> }> = {}
    for (const s of client.samples) {
      verdicts[s.verdict]++
      byStatus[s.status] = (byStatus[s.status] ?? 0) + 1
      const kind = (byKind[s.kind] ??= { requests: 0, byStatus: {}, verdicts: {} })
      kind.requests++
      kind.byStatus[s.status] = (kind.byStatus[s.status] ?? 0) + 1
      kind.verdicts[s.verdict] = (kind.verdicts[s.verdict] ?? 0) + 1
    }
    const latencies = client.samples.map((s) => s.end - s.start).sort((a, b) => a - b)
    const slowest = [...client.samples]
      .sort((a, b) => b.end - b.start - (a.end - a.start))
      .slice(0, 8)
      .map((s) => ({ kind: s.kind, status: s.status, instance: s.instance, atS: round((s.start - start) / 1000), ms: Math.round(s.end - s.start) }))
    // A request in flight across a stall of the process serving it or of the driver timing it:
    // the machine did not run the soak for that while (other work on a shared CPU).
    const across = (s: { start: number; end: number }, stalls: Stall[]) => stalls.some((st) => st.to >= s.start && st.from <= s.end)
    const stalled = new Set(client.samples.filter((s) => across(s, driverStalls) || across(s, (children[s.instance] as Child).stalls)))
    // A stall can make an instance's store call miss its timeout though Redis answered: the
    // instance then has an outage of its own, from the stall to its storeRecovered.
    const stallOutages = children.map((c) => {
      const windows: Array<{ start: number; end: number }> = []
      c.events.forEach((e, i) => {
        if (e.name !== 'storeError') return
        const at = e.at + start
        if (outages.some((o) => at >= o.start && at <= o.windowEnd)) return
        const stall = [...c.stalls, ...driverStalls].find((st) => st.to >= at - 600 && st.from <= at)
        const recovered = c.events.slice(i).find((r) => r.name === 'storeRecovered')
        if (stall !== undefined && recovered !== undefined) windows.push({ start: stall.from, end: recovered.at + start + 100 })
      })
      return windows
    })
    /**
     * Excused: a request in flight across a stall of the machine that failed on the store or
     * took longer than the bound, or a store failure during an instance's own outage that a
     * stall caused.
     */
    const excused = (s: Sample) =>
      (stalled.has(s) && (unavailableOutside.has(s) || s.status === 0 || s.end - s.start > LATENCY_BOUND_MS)) ||
      (unavailableOutside.has(s) && (stallOutages[s.instance] as Array<{ start: number; end: number }>).some((w) => s.end >= w.start && s.start <= w.end))
    const excusedSamples = client.samples.filter(excused)
    const allStalls = [...driverStalls, ...children.flatMap((c) => c.stalls)]
    const fiveXx = client.samples.filter((s) => (s.status >= 500 || s.status === 0) && !excused(s))
    const limits = limitFigures(samples, outages, HOT_LIMIT.limit, HOT_LIMIT.windowMs, instanceCount)
    const storeEvents = children.map((c, i) => ({
      instance: i,
      storeError: c.events.filter((e) => e.name === 'storeError').length,
      storeRecovered: c.events.filter((e) => e.name === 'storeRecovered').length,
      internalError: c.events.filter((e) => e.name === 'internalError').length,
      events: c.events,
    }))
    const memory = children.map((_, i) => {
      const before = (warm[i] as Measure).usage
      const after = (endMemory[i] as Measure).usage
      return { instance: i, warm: { rssMB: mb(before.rss), heapUsedMB: mb(before.heapUsed) }, end: { rssMB: mb(after.rss), heapUsedMB: mb(after.heapUsed) }, heapGrowthMB: mb(after.heapUsed - before.heapUsed) }
    })
    /** Growth of the heap after a full GC, warm-up to the end, that still counts as noise. */
    const MEMORY_NOISE_MB = 16
    // Whole seconds only: a last partial second would show as a drop in throughput.
    const seconds = timeline(samples.map((s) => ({ ...s, start: s.start - start, end: s.end - start })), Math.floor((end - start) / 1000) * 1000)
    const relOutages = outages.map((o) => ({ ...o, start: o.start - start, recovered: o.recovered - start, windowEnd: o.windowEnd - start }))

    const checks = {
      'unexpected 5xx (anything but a 503 of a record lookup during an outage)': fiveXx.filter((s) => s.verdict !== 'outage-503').length,
      'tokens that should work and failed': verdicts['should-work-failed'],
      'tokens that should fail and worked': verdicts['should-fail-worked'],
      'unexpected answers (of any status)': client.samples.filter((s) => s.verdict === 'unexpected' && !excused(s)).length,
      [`requests over ${LATENCY_BOUND_MS} ms`]: client.samples.filter((s) => s.end - s.start > LATENCY_BOUND_MS && !excused(s)).length,
      'requests excused by a stall of the machine, beyond 0.5% of all': excusedSamples.length > client.samples.length * 0.005 ? excusedSamples.length : 0,
      'hot-app limit exceeded outside the outages': Math.max(0, limits.excessOutsideOutages),
      'hot-app limit exceeded beyond the documented tolerance during outages': Math.max(0, limits.excessDuringOutages),
      'flows that failed (not explained by an outage)': traffic.flows.failed,
      'internalError events': storeEvents.reduce((n, e) => n + e.internalError, 0),
      'storeError events outside the faults, not at a stall of the machine': children.reduce(
        (n, c) =>
          n +
          c.events.filter((e) => {
            if (e.name !== 'storeError') return false
            const at = e.at + start
            if (outages.some((o) => at >= o.start && at <= o.windowEnd)) return false
            return !across({ start: at - 600, end: at }, [...c.stalls, ...driverStalls])
          }).length,
        0,
      ),
      [`instances that used Redis again more than ${RECOVERY_MARGIN_MS} ms after it answered`]: relOutages.reduce(
        (n, o) => n + children.filter((c) => (c.events.find((e) => e.name === 'storeRecovered' && e.at >= o.start)?.at ?? 0) - o.recovered > RECOVERY_MARGIN_MS).length,
        0,
      ),
      'instances with storeError and storeRecovered not paired': storeEvents.filter((e) => e.storeError !== e.storeRecovered).length,
      [`instances whose heap grew more than ${MEMORY_NOISE_MB} MB`]: memory.filter((m) => m.heapGrowthMB > MEMORY_NOISE_MB).length,
      'audit: credentials wrong after the run (lost or half-written)': audit.wrong,
      'audit: credentials still unavailable after three retries': audit.unavailable,
    }
    const failed = Object.entries(checks).filter(([, n]) => n !== 0)
    const stamp = new Date(epoch).toISOString().replace(/[:.]/g, '-')
    const result = {
      when: new Date(epoch).toISOString(),
      settings: {
        minutes,
        instances: instanceCount,
        workers,
        thinkMs: THINK_MS,
        ...GATE_SETTINGS,
        onStoreError: 'memory',
        latencyBoundMs: LATENCY_BOUND_MS,
        recoveryMarginMs: RECOVERY_MARGIN_MS,
        downMs: DOWN_MS,
        redis: 'own redis-server, appendonly yes, appendfsync no (written before each reply, fsync left to the kernel)',
        hotAppLimit: HOT_LIMIT,
        node: process.version,
      },
      passed: failed.length === 0,
      checks,
      requests: client.samples.length,
      requestsPerSecond: Math.round(samples.length / ((end - start) / 1000)),
      byStatus,
      verdicts,
      latencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)), max: round(latencies.at(-1) ?? 0), slowest },
      outages: relOutages.map((o) => ({
        label: o.label,
        startS: round(o.start / 1000),
        downMs: Math.round(o.recovered - o.start),
        /** Per instance: from Redis answering PING to the gate's storeRecovered. */
        recoveryLagMs: children.map((c) => {
          const event = c.events.find((e) => e.name === 'storeRecovered' && e.at >= o.start)
          return event === undefined ? null : Math.round(event.at - o.recovered)
        }),
      })),
      /** The machine's load average (1, 5, 15 min) before and after: the soak shares it with whatever else runs. */
      loadAverage: { before: loadBefore.map(round), after: loadavg().map(round) },
      limits,
      flows: traffic.flows,
      credentials: {
        oauthTokens: tokens.length,
        oauthRevoked: tokens.filter((t) => t.revokedAt !== null).length,
        apiKeys: keys.length,
        apiKeysDeleted: keys.filter((k) => k.revokedAt !== null).length,
        unsettled: [...tokens, ...keys].filter((c) => c.revokedAt === null && c.pendingSince !== null).length,
        audit: { ...audit, requests: auditSamples.length },
      },
      memory,
      /** How late each gate process's event loop ran during the run (CPU starvation on a shared machine shows here). */
      eventLoopDelay: endMemory.map((m, i) => ({ instance: i, p99Ms: round(m.loop.p99Ms), maxMs: round(m.loop.maxMs) })),
      /** Stalls of the machine: event loops (gate processes, the driver) that ran 80 ms or more late, and the requests they excuse. */
      machineStalls: {
        driver: driverStalls.length,
        gates: children.map((c) => c.stalls.length),
        longestMs: Math.round(Math.max(0, ...allStalls.map((st) => st.to - st.from))),
        requestsAcross: stalled.size,
        excused: excusedSamples.length,
        excusedSamples: excusedSamples.slice(0, 20).map((s) => ({ kind: s.kind, status: s.status, instance: s.instance, atS: round((s.start - start) / 1000), ms: Math.round(s.end - s.start) })),
      },
      /** Stalls of Redis itself (its latency monitor, events over 25 ms), per server run. */
      redisStalls: stalls,
      storeEvents,
      byKind,
      surprises: traffic.surprises,
      /** Store failures (503, temporarily_unavailable) of requests that overlapped no outage window. */
      unavailableOutsideOutages: outsideOutages.slice(0, 50),
      timeline: seconds,
    }
    mkdirSync(args.out, { recursive: true })
    const base = `${args.out}/soak-${stamp}`
    writeFileSync(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`)
    const title = `open-data-gate soak, ${minutes} min, ${instanceCount} gates on one Redis: ${result.requests} requests, ${result.passed ? 'passed' : 'FAILED'}`
    writeFileSync(`${base}.svg`, svgPlot(seconds, relOutages, LATENCY_BOUND_MS, title))

    console.log('')
    console.log(`requests served:   ${result.requests} (${result.requestsPerSecond}/s), flows ${traffic.flows.completed}/${traffic.flows.started} completed (${traffic.flows.interruptedByOutage} stopped by an outage, ${traffic.flows.replays} code replays)`)
    console.log(`by status:         ${Object.entries(byStatus).map(([s, n]) => `${s}: ${n}`).join(', ')}`)
    console.log(`verdicts:          ${Object.entries(verdicts).map(([s, n]) => `${s}: ${n}`).join(', ')}`)
    console.log(`latency:           p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms, max ${result.latencyMs.max} ms (bound ${LATENCY_BOUND_MS} ms)`)
    console.log(`outages:           ${result.outages.map((o) => `${o.label} at ${o.startS} s for ${o.downMs} ms (storeRecovered ${o.recoveryLagMs.join('/')} ms after)`).join('; ')}`)
    console.log(`load average:      ${result.loadAverage.before.join(' ')} before, ${result.loadAverage.after.join(' ')} after`)
    console.log(`hot app limit:     ${limits.admitted} admitted, ${limits.refused} refused; over the limit outside outages ${limits.excessOutsideOutages}, during ${limits.overLimitDuringOutages} (tolerance ${instanceCount + 1}x)`)
    console.log(`memory (heap after GC, MB): ${memory.map((m) => `#${m.instance} ${m.warm.heapUsedMB} -> ${m.end.heapUsedMB}`).join(', ')}`)
    console.log(`event loop delay:  ${result.eventLoopDelay.map((e) => `#${e.instance} p99 ${e.p99Ms} ms, max ${e.maxMs} ms`).join('; ')}`)
    console.log(`machine stalls:    driver ${driverStalls.length}, gates ${children.map((c) => c.stalls.length).join('/')} (longest ${result.machineStalls.longestMs} ms); ${stalled.size} requests in flight across one, ${excusedSamples.length} requests excused (a store failure or over ${LATENCY_BOUND_MS} ms, caused by a stall)`)
    console.log(`Redis stalls:      ${stalls.length === 0 ? 'none over 25 ms' : stalls.map((s) => `${s.event} ${s.maxMs} ms`).join(', ')}`)
    console.log(`store events:      ${storeEvents.map((e) => `#${e.instance} storeError ${e.storeError}, storeRecovered ${e.storeRecovered}`).join('; ')}`)
    console.log('checks (must be 0):')
    for (const [name, n] of Object.entries(checks)) console.log(`  ${n === 0 ? 'ok  ' : 'FAIL'} ${name}: ${n}`)
    if (outsideOutages.length > 0) console.log(`store failures outside the outages: ${JSON.stringify(outsideOutages.slice(0, 5))}`)
    console.log(`slowest: ${JSON.stringify(slowest)}`)
    if (traffic.surprises.length > 0) console.log(`first surprises: ${JSON.stringify(traffic.surprises.slice(0, 5))}`)
    console.log(`written: ${base}.json, ${base}.svg`)
    console.log(failed.length === 0 ? 'soak passed' : `soak FAILED: ${failed.map(([name]) => name).join('; ')}`)
    return failed.length === 0 ? 0 : 1
  } finally {
    await Promise.all(children.map(stopChild))
    await client?.close()
    await redis.remove()
  }
}

const round = (ms: number) => Math.round(ms * 10) / 10

process.exitCode = await main().catch((error: unknown) => {
  console.error(error)
  return 1
})
