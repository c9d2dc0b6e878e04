/**
 * A PostgreSQL server of a test's own, in a temporary directory, on a port of the
 * PostgreSQL tests' range (15400-15499, each file a span of its own), for tests that stop
 * or restart the server: the shared server is never touched. It runs as the `postgres` OS
 * user when the tests run as root (PostgreSQL refuses root), and is stopped by its data
 * directory and its pid.
 */
import { execFile } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const exec = promisify(execFile)
const BIN = process.env.POSTGRES_BIN ?? '/usr/lib/postgresql/15/bin'
const PORTS = { from: 15400, to: 15499 }

/** Whether this machine can run a server of the tests' own. */
export function ownPostgresPossible(): boolean {
  return existsSync(join(BIN, 'initdb')) && existsSync(join(BIN, 'pg_ctl')) && (process.getuid?.() !== 0 || existsSync('/usr/sbin/runuser'))
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer()
    probe.once('error', () => resolve(false))
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)))
  })
}

/** A span of ports: each test file gives its own, so that no other file takes its port while its server is down. */
export interface PortSpan {
  readonly from: number
  readonly to: number
}

async function freePort(ports: PortSpan): Promise<number> {
  const span = ports.to - ports.from + 1
  const start = Math.floor(Math.random() * span)
  for (let i = 0; i < span; i++) {
    const port = ports.from + ((start + i) % span)
    if (await portIsFree(port)) return port
  }
  throw new Error(`no free port in ${ports.from}-${ports.to}`)
}

export class OwnPostgres {
  readonly dir: string
  port = 0

  private constructor(dir: string) {
    this.dir = dir
  }

  /** The connection string of the server's `postgres` database. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`
  }

  /** Creates a cluster and starts it on a free port of `ports` (within 15400-15499). */
  static async start(ports: PortSpan): Promise<OwnPostgres> {
    if (ports.from < PORTS.from || ports.to > PORTS.to) throw new Error(`ports ${ports.from}-${ports.to} are outside the PostgreSQL tests' range`)
    const dir = mkdtempSync(join(tmpdir(), 'odg-pg-'))
    if (process.getuid?.() === 0) chownSync(dir, uid('postgres'), gid('postgres'))
    const server = new OwnPostgres(dir)
    await server.#as([join(BIN, 'initdb'), '-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync', '--no-instructions'])
    server.port = await freePort(ports)
    await server.startAgain()
    return server
  }

  /** Starts the stopped server on the same port and data. */
  async startAgain(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=40`
    await this.#as([join(BIN, 'pg_ctl'), '-D', join(this.dir, 'data'), '-o', options, '-l', join(this.dir, 'log'), '-w', '-t', '30', 'start'])
  }

  /** Stops the server; `immediate` as a crash would, `fast` as an operator would. */
  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await this.#as([join(BIN, 'pg_ctl'), '-D', join(this.dir, 'data'), '-m', mode, '-w', '-t', '30', 'stop'])
  }

  /** The postmaster's pid, while it runs. */
  pid(): number | undefined {
    const file = join(this.dir, 'data', 'postmaster.pid')
    if (!existsSync(file)) return undefined
    return Number(readFileSync(file, 'utf8').split('\n')[0])
  }

  /** Stops the server (by its pid if pg_ctl cannot) and deletes its directory. */
  async destroy(): Promise<void> {
    const pid = this.pid()
    try {
      if (pid !== undefined) await this.stop('immediate')
    } catch {
      if (pid !== undefined) {
        try {
          process.kill(pid, 'SIGQUIT')
        } catch {
          // already gone
        }
      }
    }
    rmSync(this.dir, { recursive: true, force: true })
  }

  async #as(command: string[]): Promise<void> {
    const [file, ...args] = process.getuid?.() === 0 ? ['/usr/sbin/runuser', '-u', 'postgres', '--', ...command] : command
    await exec(file as string, args, { cwd: this.dir })
  }
}

function uid(name: string): number {
  return Number(/^[^:]+:[^:]*:(\d+)/m.exec(readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${name}:`)) ?? '')?.[1])
}

function gid(name: string): number {
  return Number(/^[^:]+:[^:]*:\d+:(\d+)/m.exec(readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${name}:`)) ?? '')?.[1])
}
