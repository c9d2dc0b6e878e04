#!/usr/bin/env node
// Checks the package as users get it: builds, packs, lints the tarball (publint, attw),
// installs it in a scratch project and uses it from ESM, CommonJS and TypeScript.
import { execFileSync } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const root = resolve(import.meta.dirname, '..')
const run = (cmd, args, cwd = root) => execFileSync(cmd, args, { cwd, stdio: 'inherit' })
const scratch = mkdtempSync(join(tmpdir(), 'open-data-gate-pack-'))
try {
  run('npm', ['run', 'build'])
  const [{ filename }] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: root }).toString())
  const tarball = join(scratch, filename)
  run('npx', ['publint', 'run', tarball, '--strict'])
  run('npx', ['attw', tarball])

  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'))
  const pinned = (name) => `${name}@${lock.packages[`node_modules/${name}`].version}`
  const project = join(scratch, 'project')
  cpSync(join(root, 'scripts', 'package-smoke'), project, { recursive: true })
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'smoke', private: true }))
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', tarball,
    ...['express', 'koa', 'typescript', '@types/express', '@types/koa', '@types/node'].map(pinned)], project)
  run('node', ['esm.mjs'], project)
  run('node', ['cjs.cjs'], project)
  // The package's bin, as an operator runs it: npx finds it in the installed tarball.
  const help = execFileSync('npx', ['--no-install', 'open-data-gate', '--help'], { cwd: project }).toString()
  if (!help.startsWith('Usage: open-data-gate')) throw new Error(`npx open-data-gate --help printed:\n${help}`)
  run('npx', ['tsc', '-p', 'tsconfig.json'], project)
  run('npx', ['tsc', '-p', 'tsconfig.libcheck.json'], project)
  console.log('package: ok')
} finally {
  rmSync(scratch, { recursive: true, force: true })
}
