// Instructions per request of a variant's server, counted by callgrind: a figure no
// neighbour on the machine can disturb, for the costs of a few hundred nanoseconds that the
// req/s of bench/run.mjs (10-15% noise on a 2-core machine) cannot show.
//
//   npm run build && INSTR_NODE_FLAGS='--predictable --hash-seed=1 --random-seed=1' \
//     node bench/instructions.mjs node-bare node-gate hono-gate
//   INSTR_N=4000 INSTR_WARMUP=6000 INSTR_CONNECTIONS=10 node bench/instructions.mjs node-gate
//   node bench/instructions.mjs --dir ../other-checkout node-gate    # another build's bench/
//   BENCH_REDIS_URL=redis://127.0.0.1:6379 INSTR_CONNECTIONS=1 node bench/instructions.mjs express-gate-redis-oauth
//   BENCH_REDIS_CLUSTER=17191,17192,17193 INSTR_CONNECTIONS=1 node bench/instructions.mjs node-gate-cluster-oauth
//
// A variant on Redis (`redis: true` in bench/variants.mjs) runs on the Redis server at
// BENCH_REDIS_URL, which this script neither starts nor flushes: it drops the keys the
// server made (under its process id, as bench/variants.mjs names them) once it is done.
// A Cluster variant (`redis: 'cluster'`) runs on the three masters whose ports
// BENCH_REDIS_CLUSTER names (a cluster of your own: `npm run bench` starts one and stops it),
// and its keys are dropped from each. Only the server's own instructions are counted, not Redis's.
//
// Each variant's server (bench/server.mjs) runs under valgrind --tool=callgrind with
// instrumentation off; this process sends it INSTR_WARMUP requests (startup, JIT tiering
// and the first garbage collections left out), turns counting on (callgrind_control -i on),
// sends INSTR_N requests on INSTR_CONNECTIONS keep-alive connections, turns it off and
// divides the total by INSTR_N. The warm-up's first half runs on a set of connections that
// it then closes, its second half on the connections the counted requests use: the first
// connections to close, and the first new ones after them, make V8 deoptimize and then
// recompile Node's own socket and stream code (tens of functions, for a few thousand
// requests). When the count began on new connections after a warm-up on one set, that
// recompiling fell inside it: some 100,000 instructions per request of compiler work, which
// moved by 10,000 at a time with the shape of the code under test, more than most of what
// was being compared. The count covers every thread of the server (the JIT's
// and the garbage collector's included), so allocation is paid for where it happens. Under
// valgrind the server is some 50 times slower than the client: every connection's next
// request is waiting whenever it reads, so the counts compare the servers' work per
// request at a steady load, not the batching a real load would give them.
//
// The servers flush usage once an hour here (BENCH_USAGE_FLUSH_MS, bench/variants.mjs): at
// valgrind's pace the default 10 s flush fell inside some counts and not others.
//
// INSTR_NODE_FLAGS are given to the server's node. With V8's --predictable (no concurrent
// compiling or marking) and fixed seeds, a variant's count repeats within 0.2% from one
// process to the next (node-bare: 156,226, 156,027, 156,187); without, it moved by 10%.
// Between variants, though, a different shape of code can still move the JIT's and the
// garbage collector's work by several thousand instructions: compare differences of tens
// of thousands, or the same variant on two builds.
import { spawn, spawnSync } from 'node:child_process'
import { readFile, rm } from 'node:fs/promises'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'

const { values: opts, positionals: names } = parseArgs({ allowPositionals: true, options: { dir: { type: 'string' } } })
const here = path.dirname(fileURLToPath(import.meta.url))
const benchDir = opts.dir === undefined ? here : path.join(path.resolve(opts.dir), 'bench')
const N = Number(process.env.INSTR_N ?? 4000)
const WARMUP = Number(process.env.INSTR_WARMUP ?? 6000)
const CONNECTIONS = Number(process.env.INSTR_CONNECTIONS ?? 10)
const NODE_FLAGS = (process.env.INSTR_NODE_FLAGS ?? '').split(' ').filter(Boolean)
if (names.length === 0) {
  console.error('usage: node bench/instructions.mjs [--dir checkout] variant...   (names as in bench/variants.mjs)')
  process.exit(2)
}

/** Starts `name`'s server under callgrind; resolves once it prints its port and headers. */
function startServer(name, outFile) {
  const child = spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${outFile}`, process.execPath, ...NODE_FLAGS, path.join(benchDir, 'server.mjs'), name], {
    // A server under valgrind is slow enough for the store's default timeouts to fire.
    env: { ...process.env, BENCH_STORE_TIMEOUT_MS: '60000', BENCH_USAGE_FLUSH_MS: process.env.BENCH_USAGE_FLUSH_MS ?? '3600000' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (chunk) => { stderr += chunk })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (chunk) => {
      out += chunk
      const line = out.split('\n').find((l) => l.startsWith('{'))
      if (line) resolve({ child, ...JSON.parse(line) })
    })
    child.on('exit', (code) => reject(new Error(`server ${name} exited (${code}): ${stderr.slice(-2000)}`)))
  })
}

/** `n` GET requests, `CONNECTIONS` at a time on keep-alive connections; every answer must be a 200. */
async function send(port, urlPath, headers, n, agent) {
  let next = 0
  const one = () => new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, headers, agent }, (res) => {
      res.resume()
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))))
    })
    req.on('error', reject)
  })
  const worker = async () => {
    while (next < n) {
      next++
      // A keep-alive connection the server closed as the request left (its timeout, on a
      // server this slow) resets: sent again on a new one, the server having done nothing.
      for (let attempt = 1; ; attempt++) {
        try {
          await one()
          break
        } catch (error) {
          if (attempt === 3 || error?.code !== 'ECONNRESET') throw error
        }
      }
    }
  }
  await Promise.all(Array.from({ length: CONNECTIONS }, worker))
}

const newAgent = () => new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS })

function instrument(onOff, pid) {
  const r = spawnSync('callgrind_control', ['-i', onOff, String(pid)], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`callgrind_control -i ${onOff}: ${r.stderr || r.stdout}`)
}

/** The keys a Redis variant's server made (valgrind runs node in its own process: the same pid). */
async function dropKeys(pid, cluster) {
  const urls = cluster ? process.env.BENCH_REDIS_CLUSTER.split(',').map((port) => `redis://127.0.0.1:${port}`) : [process.env.BENCH_REDIS_URL]
  for (const url of urls) {
    const client = new Redis(url)
    try {
      for (const pattern of [`bench:${pid}:*`, `rlflx:${pid}:*`, `rlflx-tokens:${pid}:*`]) {
        // One DEL per key: on a Cluster node, the keys of one DEL must share a slot.
        for await (const keys of client.scanStream({ match: pattern, count: 1000 })) for (const key of keys) await client.del(key)
      }
    } finally {
      client.disconnect()
    }
  }
}

const { variants } = await import(path.join(benchDir, 'variants.mjs'))
for (const name of names) {
  const variant = variants.find((v) => v.name === name)
  if (!variant) throw new Error(`unknown variant ${name}`)
  if (variant.redis === 'cluster' && !process.env.BENCH_REDIS_CLUSTER) throw new Error(`${name} needs Redis Cluster: set BENCH_REDIS_CLUSTER to its three masters' ports`)
  if (variant.redis && variant.redis !== 'cluster' && !process.env.BENCH_REDIS_URL) throw new Error(`${name} needs Redis: set BENCH_REDIS_URL`)
  const outFile = path.join(os.tmpdir(), `odg-instructions-${process.pid}-${name}.out`)
  const server = await startServer(name, outFile)
  try {
    // Half of it on one set of connections, closed, the rest and the count on a second (see the header).
    const first = newAgent()
    await send(server.port, variant.path, server.headers, WARMUP - Math.floor(WARMUP / 2), first)
    first.destroy()
    const second = newAgent()
    await send(server.port, variant.path, server.headers, Math.floor(WARMUP / 2), second)
    instrument('on', server.child.pid)
    await send(server.port, variant.path, server.headers, N, second)
    instrument('off', server.child.pid)
    second.destroy()
  } finally {
    server.child.kill('SIGINT')
    await new Promise((resolve) => server.child.once('exit', resolve))
    if (variant.redis) await dropKeys(server.child.pid, variant.redis === 'cluster')
  }
  // One file for all threads (callgrind's default), or one per thread: sum their totals.
  const files = (await import('node:fs')).readdirSync(os.tmpdir()).filter((f) => f.startsWith(path.basename(outFile)))
  let total = 0
  for (const f of files) {
    const text = await readFile(path.join(os.tmpdir(), f), 'utf8')
    for (const m of text.matchAll(/^totals: (\d+)/gm)) total += Number(m[1])
    await rm(path.join(os.tmpdir(), f))
  }
  console.log(`${name.padEnd(24)} ${(total / N).toFixed(0).padStart(9)} instructions/request  (N=${N}, ${CONNECTIONS} connections)`)
}
