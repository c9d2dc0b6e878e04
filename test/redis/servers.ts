/**
 * Real Redis servers for the tests: the shared one (REDIS_URL, default
 * redis://127.0.0.1:6379), where every test file works under a random key prefix and
 * deletes only its own keys afterwards; and servers a test starts itself on the port
 * range 17000-17199 (a single server to kill or pause, a three-node cluster), each
 * stopped by its pid.
 *
 * Without a reachable Redis, the Redis suites are skipped with a message that says how
 * to point them at one; in CI (CI=true) they fail instead, never skip.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Cluster, Redis } from 'ioredis'

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

/** Whether the shared Redis answers; in CI a missing Redis is an error, not a skip. */
export async function sharedRedisAvailable(suite: string): Promise<boolean> {
  const client = new Redis(REDIS_URL, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 })
  let cause: unknown
  client.on('error', (error: unknown) => (cause ??= error))
  try {
    await client.connect()
    await client.ping()
    return true
  } catch (error) {
    cause ??= error
    const message = `no Redis answers at ${REDIS_URL} (${cause instanceof Error ? cause.message : String(cause)})`
    if (process.env.CI === 'true') throw new Error(`${suite}: ${message}; in CI the Redis suites must run`)
    process.stderr.write(`\n[skipped] ${suite}: ${message}. Start redis-server, or set REDIS_URL=redis://host:port to run it.\n`)
    return false
  } finally {
    client.disconnect()
  }
}

/** Whether redis-server and redis-cli are installed (the tests that start their own servers need them). */
export function redisBinariesAvailable(suite: string): boolean {
  const found = spawnSync('redis-server', ['--version']).status === 0 && spawnSync('redis-cli', ['--version']).status === 0
  if (!found) {
    if (process.env.CI === 'true') throw new Error(`${suite}: redis-server/redis-cli are not installed; in CI the Redis suites must run`)
    process.stderr.write(`\n[skipped] ${suite}: redis-server is not installed (apt-get install redis-server).\n`)
  }
  return found
}

/** A prefix no other run uses. */
export function randomPrefix(name: string): string {
  return `odg-test:${name}:${randomBytes(6).toString('hex')}:`
}

/** Deletes every key under `prefix` (SCAN, never KEYS or FLUSH), on every master of a cluster. */
export async function deletePrefix(client: Redis | Cluster, prefix: string): Promise<void> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client]
  for (const node of nodes) {
    let cursor = '0'
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      cursor = next
      // One DEL per key: on a cluster the keys of one batch live in different slots.
      await Promise.all(keys.map((key) => node.del(key)))
    } while (cursor !== '0')
  }
}

/** A redis-server this test owns, on its own port, with its own data directory. */
export class OwnRedisServer {
  readonly port: number
  readonly dir: string
  readonly #args: string[]
  #process: ChildProcess | undefined

  constructor(port: number, extraArgs: string[] = []) {
    this.port = port
    this.dir = mkdtempSync(join(tmpdir(), `odg-redis-${port}-`))
    this.#args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, '--daemonize', 'no', '--loglevel', 'warning', ...extraArgs]
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`
  }

  get pid(): number | undefined {
    return this.#process?.pid
  }

  /** Starts the server and waits until it answers PING. */
  async start(): Promise<void> {
    if (this.#process !== undefined) throw new Error(`redis-server on ${this.port} is running`)
    const child = spawn('redis-server', this.#args, { stdio: ['ignore', 'ignore', 'pipe'] })
    this.#process = child
    // Even if the test process dies, its servers go with it.
    const killOnExit = (): void => {
      if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGKILL')
    }
    process.once('exit', killOnExit)
    child.once('exit', () => process.off('exit', killOnExit))
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.once('exit', () => {
      if (this.#process === child) this.#process = undefined
    })
    const deadline = Date.now() + 5000
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`redis-server on ${this.port} exited: ${stderr}`)
      if (spawnSync('redis-cli', ['-p', String(this.port), 'ping'], { encoding: 'utf8' }).stdout.trim() === 'PONG') return
      await sleep(20)
    }
    throw new Error(`redis-server on ${this.port} did not answer within 5 s`)
  }

  /** SIGKILL, and waits for the process to be gone. */
  async kill(): Promise<void> {
    const child = this.#process
    if (child === undefined) return
    this.#process = undefined
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGCONT')
    child.kill('SIGKILL')
    await exited
  }

  /** SIGSTOP: the server keeps its connections and answers nothing. */
  pause(): void {
    this.#process?.kill('SIGSTOP')
  }

  resume(): void {
    this.#process?.kill('SIGCONT')
  }

  /** Stops the server (by its pid) and removes its directory. */
  async stop(): Promise<void> {
    await this.kill()
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** A three-master Redis Cluster started from redis-server, stopped by pid afterwards. */
export class OwnRedisCluster {
  readonly servers: OwnRedisServer[]

  constructor(ports: number[]) {
    this.servers = ports.map((port) => new OwnRedisServer(port, ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000']))
  }

  get nodes(): Array<{ host: string; port: number }> {
    return this.servers.map((s) => ({ host: '127.0.0.1', port: s.port }))
  }

  /** Starts the servers, creates the cluster, and waits until every slot is served. */
  async start(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.start()))
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...this.servers.map((s) => `127.0.0.1:${s.port}`), '--cluster-replicas', '0', '--cluster-yes'], {
      encoding: 'utf8',
      timeout: 20_000,
    })
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout} ${create.stderr}`)
    const deadline = Date.now() + 10_000
    while (Date.now() < deadline) {
      const states = this.servers.map((s) => spawnSync('redis-cli', ['-p', String(s.port), 'cluster', 'info'], { encoding: 'utf8' }).stdout)
      if (states.every((info) => info.includes('cluster_state:ok'))) return
      await sleep(50)
    }
    throw new Error('the cluster did not reach cluster_state:ok within 10 s')
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop()))
  }
}
