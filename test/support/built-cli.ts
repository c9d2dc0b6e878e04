/**
 * The `open-data-gate` command as an operator runs it: dist/cli.js, the package's `bin`, in
 * a child process. Built first when dist/ is missing or older than the sources (CI builds
 * before it tests, so this only costs a developer's first run).
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../', import.meta.url))
export const CLI = join(root, 'dist', 'cli.js')

function newest(dir: string): number {
  let latest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs)
  }
  return latest
}

/** Builds dist/ with tsup when `file` (the CLI, or another entry such as dist/fetch.js) is missing or stale. */
export function ensureBuilt(file = CLI): void {
  const sources = Math.max(newest(join(root, 'src')), newest(join(root, 'adapters')))
  if (existsSync(file) && statSync(file).mtimeMs >= sources) return
  execFileSync(process.execPath, [join(root, 'node_modules', 'tsup', 'dist', 'cli-default.js')], { cwd: root, stdio: 'ignore' })
}

export interface CliRun {
  code: number
  stdout: string
  stderr: string
  ms: number
}

/** Runs the command with `args`, optionally writing `input` to its standard input. */
export function cli(args: string[], options: { input?: string; env?: Record<string, string> } = {}): Promise<CliRun> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr, ms: performance.now() - started }))
    child.stdin.end(options.input ?? '')
  })
}


/**
 * Runs the command on a pseudo-terminal (util-linux `script`), typing each of `keys` once
 * the output so far ends in a prompt (": "). What the terminal showed comes back.
 */
export function atTerminal(args: string[], keys: string[]): Promise<{ code: number; output: string }> {
  const command = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], { env: { PATH: process.env.PATH ?? '', TERM: 'dumb' }, stdio: ['pipe', 'pipe', 'pipe'] })
    let output = ''
    let typed = 0
    let seen = 0
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const prompts = output.split(': ').length - 1
      if (prompts > seen && typed < keys.length && output.endsWith(': ')) {
        seen = prompts
        child.stdin.write(keys[typed++] as string)
      }
    })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code: code ?? -1, output }))
  })
}
