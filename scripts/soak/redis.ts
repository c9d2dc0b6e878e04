/**
 * The soak's own redis-server: on a free port of the soak's range (never the shared
 * 6379), its own data directory, stopped by its pid. Nothing here blocks the event loop:
 * the load driver runs in the same process.
 *
 * Its data is kept in an append-only file that Redis writes (write(2)) before it answers
 * each command, left to the kernel to fsync (`appendfsync no`): a killed redis-server
 * loses nothing it acknowledged, since the kernel still has it; only a crash of the whole
 * machine could, and that is Redis's durability setting, not the gate's. (`always` would
 * fsync each write: on a busy shared VM that stalls Redis for up to 350 ms at a time,
 * measured with its own latency monitor, and the soak would measure the disk.) The
 * latency monitor is on, so stalls of Redis itself show in the report.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'

/** One of Redis's own latency events (LATENCY LATEST): a stall of the server itself. */
export interface RedisStall {
  event: string
  /** The worst, in ms. */
  maxMs: number
}

/** Whether nothing listens on `port` at 127.0.0.1. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

/** The first free port in [from, to]. */
export async function freePort(from: number, to: number): Promise<number> {
  for (let port = from; port <= to; port++) if (await portFree(port)) return port
  throw new Error(`no free port in ${from}-${to}`)
}

/** One PING over a fresh connection: true when the server answers PONG within `timeoutMs`. */
export function ping(port: number, timeoutMs = 200): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    let answer = ''
    const done = (ok: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(ok)
    }
    const timer = setTimeout(() => done(false), timeoutMs)
    socket.once('error', () => done(false))
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString()
      if (answer.includes('\r\n')) done(answer.startsWith('+PONG'))
    })
    socket.write('PING\r\n')
  })
}

export class SoakRedis {
  readonly port: number
  readonly dir = mkdtempSync(join(tmpdir(), 'odg-soak-redis-'))
  #process: ChildProcess | undefined

  constructor(port: number) {
    this.port = port
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`
  }

  /** Starts the server and resolves once it answers PING (after loading its data). */
  async start(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'no', '--latency-monitor-threshold', '25', '--daemonize', 'no', '--loglevel', 'warning']
    const child = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'] })
    this.#process = child
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const deadline = Date.now() + 10_000
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`redis-server on ${this.port} exited: ${stderr}`)
      if (await ping(this.port)) return
      await sleep(20)
    }
    throw new Error(`redis-server on ${this.port} did not answer within 10 s`)
  }

  /** Stops the server by its pid with `signal` (SIGTERM: a clean shutdown; SIGKILL: a crash) and waits until it is gone. */
  async stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    const child = this.#process
    this.#process = undefined
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGCONT')
    child.kill(signal)
    await exited
  }

  /** The stalls Redis's latency monitor saw since this server started (it forgets them on a restart). */
  async stalls(): Promise<RedisStall[]> {
    const client = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null })
    client.on('error', () => {})
    try {
      await client.connect()
      const rows = (await client.call('LATENCY', 'LATEST')) as Array<[string, number, number, number]>
      return rows.map(([event, , , max]) => ({ event, maxMs: max }))
    } catch {
      return []
    } finally {
      client.disconnect()
    }
  }

  /** SIGSTOP: the server keeps its connections and answers nothing. */
  pause(): void {
    this.#process?.kill('SIGSTOP')
  }

  resume(): void {
    this.#process?.kill('SIGCONT')
  }

  /** Stops the server and removes its data directory. */
  async remove(): Promise<void> {
    await this.stop('SIGKILL')
    rmSync(this.dir, { recursive: true, force: true })
  }
}
