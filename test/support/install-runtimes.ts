/**
 * Vitest's global setup: the Bun and Deno binaries for test/runtimes.test.ts, installed
 * into test/runtimes/node_modules from that folder's own package.json and lockfile (exact
 * versions, from the npm registry) when they are missing or not the pinned versions.
 *
 * They are not devDependencies of the project: together they are about 200 MB and two
 * install scripts, which made `npm ci` (and so `npm ci && npm run demo`) several times
 * slower for everyone who never runs the runtime tests. The first test run pays for them
 * once; later runs only read two package.json files.
 *
 * When the install fails (no network, no cache) the runtime tests skip with a notice
 * saying why; in CI (CI=true) the run stops here instead, since those tests must run.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const RUNTIMES_DIR = fileURLToPath(new URL('../runtimes/', import.meta.url))

/** The packages test/runtimes/package-lock.json pins that are not installed at that version. */
export function missingRuntimes(dir: string = RUNTIMES_DIR): string[] {
  const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string; dependencies?: Record<string, string> }>
  }
  const wanted = Object.keys(lock.packages['']?.dependencies ?? {})
  return wanted.filter((name) => {
    const installed = join(dir, 'node_modules', name, 'package.json')
    if (!existsSync(installed)) return true
    const { version } = JSON.parse(readFileSync(installed, 'utf8')) as { version?: string }
    return version !== lock.packages[`node_modules/${name}`]?.version
  })
}

/** `npm ci` in `dir`, with none of the calling npm's settings (its prefix is the project's). */
export function installRuntimes(dir: string = RUNTIMES_DIR): void {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')))
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error', '--prefix', dir], {
    cwd: dir,
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
    shell: process.platform === 'win32',
  })
}

export default function setup(): void {
  const missing = missingRuntimes()
  if (missing.length === 0) return
  console.log(`Installing ${missing.join(' and ')} for the runtime tests into test/runtimes/node_modules (once)...`)
  try {
    installRuntimes()
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error)
    if (process.env.CI === 'true') throw new Error(`the runtime tests' packages (test/runtimes) could not be installed, and in CI they must run: ${reason}`)
    console.warn(`the runtime tests' packages (test/runtimes) could not be installed: ${reason}`)
  }
}
