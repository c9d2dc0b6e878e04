// The client's cost of one rate step on Redis, per command, without HTTP around it:
// N EVALSHA of the store's GCRA script at a fixed number in flight, through
//   store                RedisStore.consumeRate (the store's own client, made from a URL)
//   ioredis              client.evalsha on an ioredis client with the store's options
//                        (redisClientDefaults: auto-pipelining, a command timeout)
//   ioredis-no-timeout   the same without the per-command timeout timer
//   ioredis-no-autopipe  the same without auto-pipelining
//   ioredis-plain        ioredis's own defaults (no auto-pipelining, no timeout)
//   ioredis-direct       ioredis with the store's options, the way the store sends on a single
//                        server: its own Command to sendCommand, the socket corked for the turn
//   ioredis5             ioredis 5 (the store's peer range allows it) with the store's options
//   ioredis5-direct      ioredis 5, sent the way the store sends
//   node-redis           the official `redis` client (it writes a tick's commands in one write)
//   node-redis-timeout   the same with a per-command timeout, as the store needs
// Every variant keeps its own connection; rounds run the variants in a shuffled order and
// the figure is the median of process CPU (user + system) per command, so a busy machine
// slows every variant alike. For a count that no neighbour can disturb, run one variant at
// a time under callgrind, which then counts the instructions of the rounds only (warm-up,
// startup and JIT of the first calls left out), and divide by N:
//   BENCH_CALLGRIND=1 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=cg.out \
//     node bench/redis-client.mjs --only ioredis --n 10000 --rounds 1 --warmup 10000
//   callgrind_annotate cg.out | grep TOTALS      (instructions, all threads, GC included)
// Under valgrind every reply is back by the time the client reads, so each turn carries
// all the commands in flight: the counts compare the clients' work per command, not the
// batching that a real load would see.
//
// Needs `npm run build` (it loads dist/). Redis: BENCH_REDIS_URL, or a redis-server it
// starts on BENCH_REDIS_PORT (default 17194), pinned with BENCH_REDIS_CPU when set.
// Options: --n 20000 --inflight 50 --rounds 5 --only a,b
import { spawn, spawnSync } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { Command, Redis } from 'ioredis'
import { Command as Command5, Redis as Redis5 } from 'ioredis5'
import { createClient } from 'redis'
import { RedisStore, redisClientDefaults } from '../dist/redis.js'
import { connectWhenUp } from './redis-server.mjs'
import { median, shuffle } from './stats.mjs'

const { values: opts } = parseArgs({
  options: {
    n: { type: 'string', default: '20000' },
    inflight: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '5000' },
    only: { type: 'string' },
  },
})
const N = Number(opts.n)
const INFLIGHT = Number(opts.inflight)
const ROUNDS = Number(opts.rounds)
const WARMUP = Number(opts.warmup)
const PREFIX = `bench-client:${process.pid}:`
// Limits no run reaches: every step is allowed and writes its key, as on the request path.
const LIMIT = 1_000_000_000
const WINDOW_MS = 3_600_000
// BENCH_CALLGRIND=1: the process runs under callgrind with --instr-atstart=no; only the
// rounds are counted (see callgrind()). The command timeout is armed as the store arms it, but
// long: on a busy machine (or under valgrind) a 500 ms timer firing would end the run.
const CALLGRIND = process.env.BENCH_CALLGRIND === '1'
const TIMEOUT_MS = CALLGRIND ? 60_000 : 5_000

async function startRedis() {
  if (process.env.BENCH_REDIS_URL) return { url: process.env.BENCH_REDIS_URL, stop: async () => {} }
  const port = Number(process.env.BENCH_REDIS_PORT ?? 17194)
  const dir = await mkdtemp(path.join(os.tmpdir(), 'odg-bench-redis-client-'))
  const argv = ['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning']
  const cpu = process.env.BENCH_REDIS_CPU
  const child = cpu === undefined ? spawn(argv[0], argv.slice(1), { stdio: 'ignore' }) : spawn('taskset', ['-c', cpu, ...argv], { stdio: 'ignore' })
  const url = `redis://127.0.0.1:${port}`
  ;(await connectWhenUp(child, port)).disconnect()
  return {
    url,
    async stop() {
      child.kill()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/**
 * The SHA-1 of the store's GCRA script, read off the EVALSHA its consumeRate sends; after
 * that call the server knows the script (the store sends EVAL on NOSCRIPT).
 */
let SHA
async function gcraSha(url) {
  const store = new RedisStore({ url, prefix: PREFIX })
  await ready(store.client)
  let sha
  const send = store.client.sendCommand.bind(store.client)
  store.client.sendCommand = (command, stream) => {
    if (command.name === 'evalsha') sha ??= String(command.args[0])
    return send(command, stream)
  }
  await store.consumeRate('k0', LIMIT, WINDOW_MS, 1)
  await store.close()
  return sha
}

async function ready(client) {
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve))
  return client
}

/** Each variant: make() gives { step(i) → Promise, close() }. */
const variants = {
  async store(url) {
    const store = new RedisStore({ url, prefix: PREFIX, commandTimeoutMs: TIMEOUT_MS })
    await ready(store.client)
    return { step: (i) => store.consumeRate(`k${i & 63}`, LIMIT, WINDOW_MS, 1), close: () => store.close() }
  },
  async ioredis(url) {
    return ioredisVariant(url, redisClientDefaults(TIMEOUT_MS))
  },
  async 'ioredis-no-timeout'(url) {
    return ioredisVariant(url, { ...redisClientDefaults(TIMEOUT_MS), commandTimeout: undefined })
  },
  async 'ioredis-no-autopipe'(url) {
    return ioredisVariant(url, { ...redisClientDefaults(TIMEOUT_MS), enableAutoPipelining: false })
  },
  async 'ioredis-plain'(url) {
    return ioredisVariant(url, {})
  },
  async ioredis5(url) {
    return ioredisVariant(url, redisClientDefaults(TIMEOUT_MS), Redis5)
  },
  // What the store could do on a single server: its own Command, sent by sendCommand
  // (the command timeout still applies), the socket corked until the event loop's turn ends.
  async 'ioredis-direct'(url) {
    return directVariant(url, Redis, Command)
  },
  async 'ioredis5-direct'(url) {
    return directVariant(url, Redis5, Command5)
  },
  async 'node-redis'(url) {
    return nodeRedisVariant(url, undefined)
  },
  async 'node-redis-timeout'(url) {
    return nodeRedisVariant(url, TIMEOUT_MS)
  },
}

const keys = Array.from({ length: 64 }, (_, i) => `${PREFIX}rate:{k${i}}`)

async function ioredisVariant(url, options, Client = Redis) {
  const client = await ready(new Client(url, options))
  const limit = String(LIMIT)
  const windowMs = String(WINDOW_MS)
  return { step: (i) => client.evalsha(SHA, 1, keys[i & 63], limit, windowMs, '1'), close: () => client.quit() }
}

async function directVariant(url, Client, CommandClass) {
  const client = await ready(new Client(url, redisClientDefaults(TIMEOUT_MS)))
  const limit = String(LIMIT)
  const windowMs = String(WINDOW_MS)
  let corked = null
  const uncork = () => {
    corked.uncork()
    corked = null
  }
  const step = (i) => {
    if (corked === null) {
      corked = client.stream
      corked.cork()
      setImmediate(uncork)
    }
    return client.sendCommand(new CommandClass('evalsha', [SHA, '1', keys[i & 63], limit, windowMs, '1'], { replyEncoding: 'utf8' }))
  }
  return { step, close: () => client.quit() }
}

async function nodeRedisVariant(url, timeout) {
  const base = createClient({ url })
  base.on('error', () => {})
  await base.connect()
  const client = timeout === undefined ? base : base.withCommandOptions({ timeout })
  const args = [String(LIMIT), String(WINDOW_MS), '1']
  return { step: (i) => client.evalSha(SHA, { keys: [keys[i & 63]], arguments: args }), close: () => base.quit() }
}

/** Under valgrind --tool=callgrind --instr-atstart=no: count instructions from here (on) or stop (off). */
function callgrind(onOff) {
  if (!CALLGRIND) return
  const r = spawnSync('callgrind_control', ['-i', onOff, String(process.pid)], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`callgrind_control -i ${onOff}: ${r.stderr || r.stdout}`)
}

/** N steps, INFLIGHT at a time; the process's CPU µs per step. */
async function measure(step, n, counted = false) {
  let next = 0
  const worker = async () => {
    while (next < n) await step(next++)
  }
  if (counted) callgrind('on')
  const before = process.cpuUsage()
  await Promise.all(Array.from({ length: Math.min(INFLIGHT, n) }, worker))
  const used = process.cpuUsage(before)
  if (counted) callgrind('off')
  return (used.user + used.system) / n
}

async function main() {
  const names = opts.only ? opts.only.split(',').map((s) => s.trim()) : Object.keys(variants)
  for (const name of names) if (!(name in variants)) throw new Error(`unknown variant ${name}; known: ${Object.keys(variants).join(', ')}`)
  const redis = await startRedis()
  try {
    SHA = await gcraSha(redis.url)
    const made = {}
    for (const name of names) {
      made[name] = await variants[name](redis.url)
      // The first calls compile the code on the path; the rounds measure it compiled.
      await measure(made[name].step, WARMUP)
    }
    const samples = Object.fromEntries(names.map((name) => [name, []]))
    for (let round = 1; round <= ROUNDS; round++) {
      for (const name of shuffle(names)) samples[name].push(await measure(made[name].step, N, true))
    }
    const w = Math.max(...names.map((n) => n.length))
    const base = median(samples[names.includes('ioredis') ? 'ioredis' : names[0]])
    console.log(`${N} EVALSHA of the GCRA script, ${INFLIGHT} in flight, ${ROUNDS} interleaved rounds; process CPU µs per command (median, min–max)`)
    for (const name of names) {
      const s = samples[name]
      console.log(`  ${name.padEnd(w)}  ${median(s).toFixed(2).padStart(6)}  (${Math.min(...s).toFixed(2)}–${Math.max(...s).toFixed(2)})  ${(median(s) / base).toFixed(2)}×`)
    }
    for (const name of names) await made[name].close()
  } finally {
    await redis.stop()
  }
}

await main()
