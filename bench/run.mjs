// npm run bench: every variant's throughput as a ratio to its own framework bare, from
// interleaved rounds, plus server CPU µs per request (differences under 10-15% in req/s
// are noise on a 2-core machine; CPU per request shows small costs more reliably).
//
// Servers are pinned to one core and the load generator to the other, so neither steals
// the other's CPU. Every variant is measured once per round in a shuffled order, and
// ratios are taken within a round, so drift (thermal, neighbours) hits both sides alike.
//
// Each measurement gets a freshly started server process. On this machine one process
// stays fast or slow for its whole life (JIT and memory-layout luck): a byte-identical
// copy of the bare node:http server measured 0.73x of the original, run after run, when
// every server was started once. A new process per window spreads that luck evenly over
// the variants; the medians over rounds then compare like with like.
//
// Variants on Redis (`redis: true`) talk to a redis-server this script starts on
// BENCH_REDIS_PORT, pinned to the load generator's core so that the server's core stays
// the server's; per window it reads the commands the server process sent (counted in its
// client) and the Redis server's CPU (INFO cpu), both per request. Variants on Redis
// Cluster (`redis: 'cluster'`) talk to three masters it starts on BENCH_CLUSTER_PORTS, on
// the same core, whose CPU is summed. Before each Redis window's warm-up, the first
// requests are sent one at a time and their round trips to Redis counted
// (bench/variants.mjs): the first (the credential at first sight) and the median of the
// next ones (seen before).
//
// Knobs (env): BENCH_ROUNDS=8 BENCH_DURATION=4 BENCH_WARMUP=2 (seconds) BENCH_CONNECTIONS=50
//   BENCH_ONLY=node-gate,koa-gate (baselines are added) BENCH_SERVER_CPU=1 BENCH_LOAD_CPU=0
//   BENCH_REDIS_PORT=17190 BENCH_CLUSTER_PORTS=17191,17192,17193 BENCH_REDIS=0 (leave the Redis variants out)
import { spawn, spawnSync } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { cleanup, expectedBody, variants } from './variants.mjs'
import { connectWhenUp } from './redis-server.mjs'
import { median, shuffle } from './stats.mjs'

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
const children = new Set()

function intEnv(name, fallback, min) {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`)
  return n
}

function readConfig() {
  const config = {
    rounds: intEnv('BENCH_ROUNDS', 8, 1),
    duration: intEnv('BENCH_DURATION', 4, 1),
    warmup: intEnv('BENCH_WARMUP', 2, 0),
    connections: intEnv('BENCH_CONNECTIONS', 50, 1),
    serverCpu: intEnv('BENCH_SERVER_CPU', 1, 0),
    loadCpu: intEnv('BENCH_LOAD_CPU', 0, 0),
    redisPort: intEnv('BENCH_REDIS_PORT', 17190, 1),
    clusterPorts: (process.env.BENCH_CLUSTER_PORTS || '17191,17192,17193').split(',').map(Number),
    redis: intEnv('BENCH_REDIS', 1, 0) === 1,
    only: process.env.BENCH_ONLY || null,
  }
  if (config.serverCpu === config.loadCpu) throw new Error('BENCH_SERVER_CPU and BENCH_LOAD_CPU must differ')
  if (config.clusterPorts.length !== 3 || !config.clusterPorts.every((p) => Number.isInteger(p) && p > 0)) throw new Error('BENCH_CLUSTER_PORTS must be three ports')
  return config
}

function selectVariants(only, redis) {
  const byName = new Map(variants.map((v) => [v.name, v]))
  for (const v of variants) {
    const base = byName.get(v.baseline)
    if (!base || base.baseline !== base.name || base.framework !== v.framework) {
      throw new Error(`variant ${v.name}: baseline "${v.baseline}" must be a bare ${v.framework} variant`)
    }
  }
  if (!only) return redis ? variants : variants.filter((v) => !v.redis)
  const wanted = new Set()
  for (const name of only.split(',').map((s) => s.trim()).filter(Boolean)) {
    const v = byName.get(name)
    if (!v) throw new Error(`BENCH_ONLY: unknown variant "${name}"; known: ${[...byName.keys()].join(', ')}`)
    wanted.add(v.name).add(v.baseline)
  }
  return variants.filter((v) => wanted.has(v.name))
}

function spawnPinned(cpu, script, args) {
  const child = spawn('taskset', ['-c', String(cpu), process.execPath, path.join(root, 'bench', script), ...args], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  children.add(child)
  child.on('exit', () => children.delete(child))
  return child
}

// Sends `msg` (unless undefined) and waits for the child's next message of `type`; a
// child that dies or stays silent fails the run instead of hanging it.
function ask(child, msg, type, timeoutMs, who) {
  return new Promise((resolve, reject) => {
    const finish = (settle, value) => {
      clearTimeout(timer)
      child.off('message', onMessage).off('exit', onExit).off('error', onError)
      settle(value)
    }
    const onMessage = (m) => m?.type === type && finish(resolve, m)
    const onExit = (code, signal) => finish(reject, new Error(`${who}: process exited (${signal ?? `code ${code}`})`))
    const onError = (err) => finish(reject, new Error(`${who}: ${err.message}`))
    const timer = setTimeout(() => finish(reject, new Error(`${who}: no answer within ${timeoutMs} ms`)), timeoutMs)
    child.on('message', onMessage).on('exit', onExit).on('error', onError)
    try {
      if (msg !== undefined) child.send(msg)
    } catch (err) {
      onError(err)
    }
  })
}

// One request before any load: a wrong status, body or missing limiter headers means the
// variant isn't measuring what its name says.
function probe(v, port, headers) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: v.path, headers, agent: false }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => { body += chunk })
      res.on('end', () => {
        const problems = []
        if (res.statusCode !== 200) problems.push(`status ${res.statusCode}`)
        if (body !== expectedBody) problems.push(`body ${JSON.stringify(body.slice(0, 200))}`)
        for (const [name, re] of Object.entries(v.expectHeaders ?? {})) {
          if (!re.test(String(res.headers[name] ?? ''))) problems.push(`header ${name}: ${JSON.stringify(res.headers[name] ?? null)} !~ ${re}`)
        }
        if (problems.length) reject(new Error(`${v.name} is misconfigured: ${problems.join('; ')}`))
        else resolve()
      })
    })
    req.setTimeout(5000, () => req.destroy(new Error(`${v.name}: probe timed out`)))
    req.on('error', reject)
  })
}

async function load(loader, server, seconds, connections) {
  const job = { url: server.url, headers: server.headers, connections, duration: seconds }
  const r = await ask(loader, job, 'result', (seconds + 30) * 1000, 'load generator')
  if (r.failed) throw new Error(`autocannon failed on ${server.v.name}: ${r.failed}`)
  if (r.non2xx || r.errors || r.timeouts || !r.requests) {
    throw new Error(`${server.v.name}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts in ` +
      `${r.requests} requests (status codes ${JSON.stringify(r.statusCodeStats)}): the bench is misconfigured, aborting`)
  }
  return r
}

// Busy time per CPU in µs from /proc/stat (USER_HZ ticks, 100 per second on Linux), steal
// included. Minus our own processes' CPU time it shows what else ran on a core during a
// window: the machine is shared, and a test run next door makes req/s meaningless.
async function cpuBusyUs() {
  const busy = {}
  for (const line of (await readFile('/proc/stat', 'utf8')).split('\n')) {
    const m = /^cpu(\d+)\s+(.*)/.exec(line)
    if (!m) continue
    const [user, nice, system, , , , , steal] = m[2].split(/\s+/).map(Number)
    busy[m[1]] = (user + nice + system + steal) * 10_000
  }
  return busy
}

/** A redis-server of the bench's, pinned to the load generator's core, and a client to read its INFO. */
async function redisServer(config, port, dir, extra = []) {
  const child = spawn('taskset', ['-c', String(config.loadCpu), 'redis-server', '--port', String(port), '--bind', '127.0.0.1',
    '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no', '--loglevel', 'warning', ...extra], { stdio: ['ignore', 'ignore', 'inherit'] })
  children.add(child)
  child.on('exit', () => children.delete(child))
  const client = await connectWhenUp(child, port)
  return {
    client,
    /** used_cpu_sys + used_cpu_user of the Redis server, in µs. */
    async cpuUs() {
      const info = await client.info('cpu')
      const field = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)[1])
      return (field('used_cpu_sys') + field('used_cpu_user')) * 1e6
    },
    stop() {
      client.disconnect()
      child.kill()
    },
  }
}

/** The bench's own redis-server: nothing else runs on it, so its CPU is the variants'. */
async function startRedis(config) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'odg-bench-redis-'))
  const server = await redisServer(config, config.redisPort, dir)
  process.env.BENCH_REDIS_URL = `redis://127.0.0.1:${config.redisPort}`
  return {
    cpuUs: () => server.cpuUs(),
    async stop() {
      server.stop()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** The bench's own three-master Redis Cluster (every slot served, no replicas); its CPU is the three servers'. */
async function startCluster(config) {
  const dirs = await Promise.all(config.clusterPorts.map((port) => mkdtemp(path.join(os.tmpdir(), `odg-bench-cluster-${port}-`))))
  const servers = []
  const stop = async () => {
    for (const server of servers) server.stop()
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
  }
  try {
    for (const [i, port] of config.clusterPorts.entries()) {
      servers.push(await redisServer(config, port, dirs[i], ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000']))
    }
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...config.clusterPorts.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8', timeout: 20_000 })
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout} ${create.stderr}`)
    for (let i = 0; ; i++) {
      const states = await Promise.all(servers.map((server) => server.client.cluster('INFO')))
      if (states.every((info) => info.includes('cluster_state:ok'))) break
      if (i === 200) throw new Error('the bench cluster did not reach cluster_state:ok within 10 s')
      await sleep(50)
    }
  } catch (err) {
    await stop()
    throw err
  }
  process.env.BENCH_REDIS_CLUSTER = config.clusterPorts.join(',')
  return {
    async cpuUs() {
      return (await Promise.all(servers.map((server) => server.cpuUs()))).reduce((a, b) => a + b, 0)
    },
    stop,
  }
}

function summarize(selected, samples) {
  const of = (name) => samples.filter((s) => s.variant === name)
  const inRound = (name, round) => samples.find((s) => s.variant === name && s.round === round)
  return selected.map((v) => {
    const mine = of(v.name)
    const ratios = mine.map((s) => s.rps / inRound(v.baseline, s.round).rps)
    const extra = mine.map((s) => s.cpuUsPerReq - inRound(v.baseline, s.round).cpuUsPerReq)
    const ratio = median(ratios)
    return {
      name: v.name, framework: v.framework, baseline: v.baseline,
      rps: median(mine.map((s) => s.rps)),
      ratio, ratioMin: Math.min(...ratios), ratioMax: Math.max(...ratios),
      p99Ms: median(mine.map((s) => s.p99)),
      cpuUsPerReq: median(mine.map((s) => s.cpuUsPerReq)),
      extraCpuUsPerReq: median(extra),
      serverCpuPct: median(mine.map((s) => s.serverCpuPct)),
      loadCpuPct: median(mine.map((s) => s.loadCpuPct)),
      otherCpuPct: Math.max(...mine.map((s) => Math.max(s.otherOnServerCpuPct, s.otherOnLoadCpuPct))),
      queriesPerReq: mine[0]?.queriesPerReq === null ? null : median(mine.map((s) => s.queriesPerReq)),
      redisCmdPerReq: v.redis ? median(mine.map((s) => s.redisCmdPerReq)) : null,
      redisCpuUsPerReq: v.redis ? median(mine.map((s) => s.redisCpuUsPerReq)) : null,
      roundTrips: v.redis ? median(mine.map((s) => s.roundTrips)) : null,
      firstRoundTrips: v.redis ? Math.max(...mine.map((s) => s.firstRoundTrips)) : null,
      ...(v.target !== undefined && { target: v.target, pass: ratio >= v.target }),
      ...(v.peer !== undefined && { peer: v.peer }),
    }
  })
}

const signed = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(1)}`

function printTable(rows) {
  const withQueries = rows.some((r) => r.queriesPerReq !== null)
  const redis = rows.some((r) => r.redisCmdPerReq !== null)
  const head = ['variant', 'req/s', '× bare', 'min–max', 'p99 ms', 'CPU µs/req', '+µs/req', 'srv CPU', 'load CPU', 'others max',
    ...(redis ? ['Redis cmd/req', 'Redis µs/req', 'trips (1st)'] : []), ...(withQueries ? ['SQL/req'] : [])]
  const body = rows.map((r) => [
    r.name, r.rps.toFixed(0), r.ratio.toFixed(2), `${r.ratioMin.toFixed(2)}–${r.ratioMax.toFixed(2)}`,
    r.p99Ms.toFixed(0), r.cpuUsPerReq.toFixed(1),
    r.name === r.baseline ? '–' : signed(r.extraCpuUsPerReq),
    `${r.serverCpuPct.toFixed(0)}%`, `${r.loadCpuPct.toFixed(0)}%`, `${r.otherCpuPct.toFixed(0)}%`,
    ...(redis ? [r.redisCmdPerReq === null ? '–' : r.redisCmdPerReq.toFixed(2), r.redisCpuUsPerReq === null ? '–' : r.redisCpuUsPerReq.toFixed(1),
      r.roundTrips === null ? '–' : `${r.roundTrips} (${r.firstRoundTrips})`] : []),
    ...(withQueries ? [r.queriesPerReq === null ? '–' : r.queriesPerReq.toFixed(2)] : []),
  ])
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)))
  const line = (row) => '  ' + row.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')
  console.log(line(head))
  for (const row of body) console.log(line(row))
}

function report(config, summary, samples) {
  const rounds = `${config.rounds} rounds × (${config.warmup} s warm-up + ${config.duration} s), ${config.connections} connections`
  console.log(`\nResults: medians over ${rounds}; ratios and +µs are taken within each round.`)
  for (const fw of [...new Set(summary.map((r) => r.framework))]) {
    console.log(`\n${fw === 'node' ? 'node:http' : fw}`)
    printTable(summary.filter((r) => r.framework === fw))
  }

  const nodeBare = summary.find((r) => r.framework === 'node' && r.name === r.baseline)
  const otherBares = summary.filter((r) => r.name === r.baseline && r !== nodeBare)
  if (nodeBare && otherBares.length) {
    const vsNode = (name) => median(samples.filter((s) => s.variant === name)
      .map((s) => s.rps / samples.find((n) => n.variant === nodeBare.name && n.round === s.round).rps))
    console.log(`\nbare frameworks vs ${nodeBare.name}: ` + otherBares.map((r) => `${r.name} ${vsNode(r.name).toFixed(2)}×`).join(', '))
  }

  const targeted = summary.filter((r) => r.target !== undefined)
  if (targeted.length) {
    console.log('\nTargets (median ratio to bare, same round):')
    const w = Math.max(...targeted.map((r) => r.name.length))
    for (const r of targeted) {
      console.log(`  ${r.pass ? 'PASS' : 'MISS'}  ${r.name.padEnd(w)}  ${r.ratio.toFixed(2)} vs target ≥ ${r.target.toFixed(2)}` +
        `  (rounds ${r.ratioMin.toFixed(2)}–${r.ratioMax.toFixed(2)}, ${signed(r.extraCpuUsPerReq)} µs/req)`)
    }
  }

  const byName = new Map(summary.map((r) => [r.name, r]))
  const inRound = (name, round) => samples.find((s) => s.variant === name && s.round === round)
  const perRound = (a, b, f) => median(samples.filter((s) => s.variant === a && inRound(b, s.round)).map((s) => f(s, inRound(b, s.round))))

  const peered = summary.filter((r) => r.peer !== undefined && byName.has(r.peer))
  if (peered.length) {
    console.log("\nAgainst the host's own limiter (median of the rounds' req/s ratios, same round):")
    const w = Math.max(...peered.map((r) => r.name.length))
    for (const r of peered) {
      const ratio = perRound(r.name, r.peer, (a, b) => a.rps / b.rps)
      const cpu = perRound(r.name, r.peer, (a, b) => a.cpuUsPerReq - b.cpuUsPerReq)
      console.log(`  ${ratio >= 1 ? 'PASS' : 'MISS'}  ${r.name.padEnd(w)}  ${ratio.toFixed(2)}× ${r.peer}'s req/s (target ≥ 1.00; ${signed(cpu)} µs of server CPU per request)`)
    }
  }
  const redisLines = []
  const check = (ok, text) => redisLines.push(`  ${ok ? 'PASS' : 'MISS'}  ${text}`)
  // Commands per request are counted between two instants while requests are in flight:
  // a window's edges leave a few commands without their request (< 0.5% at 50 connections).
  const EDGE = 1.005
  for (const name of ['node-gate-redis', 'express-gate-redis', 'koa-gate-redis']) {
    const r = byName.get(name)
    if (!r) continue
    check(r.redisCmdPerReq <= 1.0 * EDGE, `${name}: ${r.redisCmdPerReq.toFixed(3)} Redis commands per app-token request (target ≤ 1.0)`)
    check(r.redisCpuUsPerReq <= 10, `${name}: ${r.redisCpuUsPerReq.toFixed(1)} µs of redis-server CPU per request (target ≤ 10)`)
  }
  // One round trip per request whatever the credential (the OAuth token, the API key and
  // the warm password each in one script with the rate step).
  for (const name of ['node-gate-redis-oauth', 'express-gate-redis-oauth', 'koa-gate-redis-oauth', 'node-gate-redis-api-key', 'node-gate-redis-password']) {
    const r = byName.get(name)
    if (r) check(r.redisCmdPerReq <= 1.0 * EDGE, `${name}: ${r.redisCmdPerReq.toFixed(3)} Redis commands per request (target ≤ 1.0)`)
  }
  // Redis Cluster: the commands a request needs (the step, the token or key, the user) sent
  // to their nodes at once, one round trip once the instance has seen the credential.
  const clusterCommands = { 'node-gate-cluster': 1, 'node-gate-cluster-oauth': 3, 'node-gate-cluster-api-key': 3, 'node-gate-cluster-password': 2 }
  for (const [name, commands] of Object.entries(clusterCommands)) {
    const r = byName.get(name)
    if (r) check(r.redisCmdPerReq <= commands * EDGE, `${name}: ${r.redisCmdPerReq.toFixed(3)} Redis commands per request (target ≤ ${commands})`)
  }
  // Round trips, counted on requests sent one at a time once the credential was seen.
  for (const r of summary.filter((r) => r.roundTrips !== null && !r.name.startsWith('express-rlflex'))) {
    check(r.roundTrips <= 1, `${r.name}: ${r.roundTrips} round trip(s) to Redis per request (target 1; first sight: ${r.firstRoundTrips})`)
  }
  if (byName.has('express-gate-redis') && byName.has('express-rlflex-redis')) {
    const ratio = perRound('express-gate-redis', 'express-rlflex-redis', (a, b) => a.rps / b.rps)
    const flex = byName.get('express-rlflex-redis')
    check(ratio >= 1, `express-gate-redis: ${ratio.toFixed(2)}× the req/s of express + RateLimiterRedis (target ≥ 1.00; ` +
      `RateLimiterRedis: ${flex.redisCmdPerReq.toFixed(2)} cmd/req, ${flex.redisCpuUsPerReq.toFixed(1)} Redis µs/req)`)
  }
  if (byName.has('express-gate-redis-oauth') && byName.has('express-rlflex-redis-passport-bearer')) {
    const ratio = perRound('express-gate-redis-oauth', 'express-rlflex-redis-passport-bearer', (a, b) => a.rps / b.rps)
    check(ratio >= 1.5, `express-gate-redis-oauth: ${ratio.toFixed(2)}× the req/s of express + RateLimiterRedis + passport-http-bearer on the same Redis (target ≥ 1.50)`)
    const redisCpu = perRound('express-gate-redis-oauth', 'express-rlflex-redis-passport-bearer', (a, b) => a.redisCpuUsPerReq / b.redisCpuUsPerReq)
    check(redisCpu <= 0.5, `express-gate-redis-oauth: ${redisCpu.toFixed(2)}× their Redis CPU per request (target ≤ 0.50)`)
  }
  if (byName.has('node-gate-redis') && byName.has('node-gate')) {
    const extra = perRound('node-gate-redis', 'node-gate', (a, b) => a.cpuUsPerReq - b.cpuUsPerReq)
    check(extra <= 12, `node-gate-redis: ${signed(extra)} µs of server CPU per request over node-gate on the memory store (target ≤ 12)`)
  }
  if (byName.has('node-gate-redis-oauth') && byName.has('node-gate-redis')) {
    const extra = perRound('node-gate-redis-oauth', 'node-gate-redis', (a, b) => a.cpuUsPerReq - b.cpuUsPerReq)
    check(extra <= 20, `node-gate-redis-oauth: ${signed(extra)} µs of server CPU per request over an app-token request on Redis (target ≤ 20)`)
  }
  if (byName.has('koa-gate')) {
    const r = byName.get('koa-gate')
    check(r.extraCpuUsPerReq <= 8, `koa-gate: ${signed(r.extraCpuUsPerReq)} µs of server CPU per app-token request over bare Koa (target ≤ 8)`)
  }
  if (redisLines.length) console.log(`\nRedis targets:\n${redisLines.join('\n')}`)

  // A saturated load generator with an idle-ish server measures autocannon, not the server.
  const loadBound = samples.filter((s) => s.loadCpuPct > 95 && s.serverCpuPct < 90)
  if (loadBound.length) {
    console.log(`\nNote: in ${loadBound.length} window(s) the load generator was saturated while the server was not ` +
      `(${[...new Set(loadBound.map((s) => s.variant))].join(', ')}); their req/s understate the server.`)
  }
  const disturbed = samples.filter((s) => Math.max(s.otherOnServerCpuPct, s.otherOnLoadCpuPct) > 5)
  if (disturbed.length) {
    console.log(`\nWarning: in ${disturbed.length} of ${samples.length} windows other processes (or the hypervisor) ` +
      `took more than 5% of a bench core ("others max"). Their req/s and ratios are unreliable; ` +
      `CPU µs/req is measured per process and suffers much less. Rerun on a quiet machine.`)
  }
}

async function main() {
  const config = readConfig()
  const selected = selectVariants(config.only, config.redis)
  const redis = selected.some((v) => v.redis === true) ? await startRedis(config) : null
  const cluster = selected.some((v) => v.redis === 'cluster') ? await startCluster(config) : null
  const redisOf = (v) => (v.redis === 'cluster' ? cluster : redis)
  console.log(`bench: ${selected.map((v) => v.name).join(', ')}; servers on cpu ${config.serverCpu}, load on cpu ${config.loadCpu}`)

  const start = async (v) => {
    const child = spawnPinned(config.serverCpu, 'server.mjs', [v.name])
    const ready = await ask(child, undefined, 'ready', 20_000, `server ${v.name}`)
    if (!v.redis) {
      await probe(v, ready.port, ready.headers)
      return { v, child, headers: ready.headers, url: `http://127.0.0.1:${ready.port}${v.path}` }
    }
    // The probe and four requests more, one at a time, their round trips to Redis counted;
    // a pause after the first lets what it writes in the background (a key's last use) land.
    await ask(child, 'trips-on', 'trips-on', 5000, `server ${v.name}`)
    await probe(v, ready.port, ready.headers)
    await sleep(200)
    for (let i = 0; i < 4; i++) await probe(v, ready.port, ready.headers)
    const { requests } = await ask(child, 'trips-off', 'trips', 5000, `server ${v.name}`)
    const trips = { first: requests[0].roundTrips, seen: median(requests.slice(1).map((r) => r.roundTrips)) }
    return { v, child, trips, headers: ready.headers, url: `http://127.0.0.1:${ready.port}${v.path}` }
  }
  const loader = spawnPinned(config.loadCpu, 'load.mjs', [])

  const samples = []
  const orders = []
  for (let round = 1; round <= config.rounds; round++) {
    const order = shuffle(selected)
    orders.push(order.map((v) => v.name))
    for (const v of order) {
      const server = await start(v)
      if (config.warmup > 0) await load(loader, server, config.warmup, config.connections)
      const before = await ask(server.child, 'usage', 'usage', 5000, `server ${server.v.name}`)
      const redisBefore = server.v.redis ? await redisOf(server.v).cpuUs() : 0
      const busyBefore = await cpuBusyUs()
      const t0 = performance.now()
      const r = await load(loader, server, config.duration, config.connections)
      const busyAfter = await cpuBusyUs()
      const after = await ask(server.child, 'usage', 'usage', 5000, `server ${server.v.name}`)
      const redisAfter = server.v.redis ? await redisOf(server.v).cpuUs() : 0
      const wallUs = (performance.now() - t0) * 1000
      const cpuUs = after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system
      const served = after.requests - before.requests
      const others = (cpu, ours) => Math.max(0, busyAfter[cpu] - busyBefore[cpu] - ours) / wallUs * 100
      const sample = {
        round, variant: server.v.name, rps: r.requests / r.seconds, p99: r.p99,
        requests: r.requests, served, cpuUsPerReq: cpuUs / served,
        serverCpuPct: cpuUs / wallUs * 100,
        // Near 100% with the server below it: the load generator, not the server, is the limit.
        loadCpuPct: r.cpuUs / wallUs * 100,
        otherOnServerCpuPct: others(config.serverCpu, cpuUs),
        otherOnLoadCpuPct: others(config.loadCpu, r.cpuUs + redisAfter - redisBefore),
        redisCmdPerReq: server.v.redis ? (after.redisCommands - before.redisCommands) / served : null,
        redisCpuUsPerReq: server.v.redis ? (redisAfter - redisBefore) / served : null,
        roundTrips: server.trips?.seen ?? null,
        firstRoundTrips: server.trips?.first ?? null,
        // Statements the store sent per request served, for the variants on a database.
        queriesPerReq: after.queries === null ? null : (after.queries - before.queries) / served,
      }
      samples.push(sample)
      console.log(`  round ${round}/${config.rounds}  ${server.v.name.padEnd(20)} ${sample.rps.toFixed(0).padStart(6)} req/s  ` +
        `${sample.cpuUsPerReq.toFixed(1).padStart(6)} µs/req  p99 ${String(r.p99).padStart(3)} ms  ` +
        `others ${sample.otherOnServerCpuPct.toFixed(0)}%/${sample.otherOnLoadCpuPct.toFixed(0)}%` +
        (server.v.redis ? `  Redis ${sample.redisCmdPerReq.toFixed(2)} cmd/req ${sample.redisCpuUsPerReq.toFixed(1)} µs/req, ${sample.roundTrips} trip(s) (first ${sample.firstRoundTrips})` : ''))
      server.child.kill()
    }
  }

  const summary = summarize(selected, samples)
  report(config, summary, samples)

  const out = path.join(root, '.bench', 'results.json')
  await mkdir(path.dirname(out), { recursive: true })
  const machine = { node: process.version, cpus: os.cpus().map((c) => c.model), platform: `${os.platform()} ${os.release()}` }
  await writeFile(out, JSON.stringify({ date: new Date().toISOString(), machine, config, orders, summary, samples }, null, 2) + '\n')
  console.log(`\nwritten ${path.relative(process.cwd(), out) || out}`)
  await redis?.stop()
  await cluster?.stop()
}

function stopChildren() {
  for (const child of children) child.kill()
}
process.on('exit', stopChildren)
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping the servers`)
    stopChildren()
    process.exit(128 + os.constants.signals[signal])
  })
}

try {
  await main()
} catch (err) {
  console.error(`\nbench failed: ${err.message}`)
  process.exitCode = 1
} finally {
  stopChildren()
  await cleanup()
}
