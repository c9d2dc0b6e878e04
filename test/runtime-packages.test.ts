/**
 * The Bun and Deno binaries of the runtime tests live in test/runtimes/ (its own
 * package.json and lockfile), outside the project's devDependencies: the test run installs
 * them there when they are missing or not the versions the lockfile pins.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { missingRuntimes, RUNTIMES_DIR } from './support/install-runtimes.js'

const project = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { devDependencies: Record<string, string> }
const runtimes = JSON.parse(readFileSync(join(RUNTIMES_DIR, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }

let dir: string | undefined
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

/** A folder with the lockfile pinning `pins`, and `installed` in its node_modules. */
function folder(pins: Record<string, string>, installed: Record<string, string>): string {
  dir = mkdtempSync(join(tmpdir(), 'odg-runtimes-'))
  const packages: Record<string, unknown> = { '': { dependencies: pins } }
  for (const [name, version] of Object.entries(pins)) packages[`node_modules/${name}`] = { version }
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ lockfileVersion: 3, packages }))
  for (const [name, version] of Object.entries(installed)) {
    mkdirSync(join(dir, 'node_modules', name), { recursive: true })
    writeFileSync(join(dir, 'node_modules', name, 'package.json'), JSON.stringify({ name, version }))
  }
  return dir
}

describe('the runtime test packages (test/runtimes)', () => {
  it('pin Bun and Deno to exact versions, and keep them out of the devDependencies npm ci installs', () => {
    expect(Object.keys(runtimes.dependencies).sort()).toEqual(['bun', 'deno'])
    for (const version of Object.values(runtimes.dependencies)) expect(version).toMatch(/^\d+\.\d+\.\d+$/)
    expect(project.devDependencies).not.toHaveProperty('bun')
    expect(project.devDependencies).not.toHaveProperty('deno')
  })

  it('are installed again when one is missing or not the version the lockfile pins, and not when both are', () => {
    const pins = { bun: '1.4.5', deno: '2.9.6' }
    expect(missingRuntimes(folder(pins, {}))).toEqual(['bun', 'deno'])
    expect(missingRuntimes(folder(pins, { bun: '1.4.5', deno: '2.9.5' }))).toEqual(['deno'])
    expect(missingRuntimes(folder(pins, pins))).toEqual([])
  })
})
