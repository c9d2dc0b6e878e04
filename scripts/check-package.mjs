#!/usr/bin/env node
// Checks the package as users get it. From a clean clone of the committed HEAD (no dist/,
// nothing but what git holds), `npm pack` must build the code itself; the tarball must
// hold every file package.json points at; publint and attw lint it; then it is installed
// in a scratch project and used from ESM, CommonJS and TypeScript: 5.9 and 7.x, strict,
// with `nodenext` and with `bundler` resolution, with no `types` list, and without
// @types/node for the Fetch and Hono adapters; all without OpenTelemetry, then the metrics
// with it. A git install of the same commit must build and run too.
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

/** What a fresh `npm i -D typescript` installs today, beside the 5.9 the project builds with. */
const TYPESCRIPT_7 = '7.0.2'

const root = resolve(import.meta.dirname, '..')
const run = (cmd, args, cwd = root) => execFileSync(cmd, args, { cwd, stdio: 'inherit' })
const read = (cmd, args, cwd = root) => execFileSync(cmd, args, { cwd, encoding: 'utf8' })
const scratch = mkdtempSync(join(tmpdir(), 'open-data-gate-pack-'))
const fail = (message) => {
  console.error(`package: ${message}`)
  process.exitCode = 1
  throw new Error(message)
}

try {
  // 1. A clean clone of what is committed: uncommitted files and a local dist/ do not count.
  const head = read('git', ['rev-parse', 'HEAD']).trim()
  const dirty = read('git', ['status', '--porcelain', '--untracked-files=no']).trim()
  if (dirty !== '') console.warn(`package: uncommitted changes are not checked (packing ${head.slice(0, 12)})`)
  const clone = join(scratch, 'clone')
  run('git', ['clone', '--quiet', '--no-checkout', root, clone])
  run('git', ['checkout', '--quiet', head], clone)
  if (existsSync(join(clone, 'dist'))) fail('the clone has a dist/ before packing: is dist/ committed?')
  run('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', '--loglevel=error'], clone)

  // 2. Pack with no prior build: `prepack` must build.
  // (The build's own output goes to stdout too, so the tarball is found by name, not from --json.)
  run('npm', ['pack', '--pack-destination', scratch, '--loglevel=error'], clone)
  const filename = readdirSync(scratch).find((name) => name.endsWith('.tgz'))
  if (filename === undefined) fail('npm pack made no tarball')
  const tarball = join(scratch, filename)
  const files = new Set(read('tar', ['-tzf', tarball]).split('\n').filter(Boolean).map((p) => p.replace(/^package\//, '')))
  const manifest = JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8'))
  const pointedAt = new Set([manifest.main, manifest.module, manifest.types, ...targetsOf(manifest.exports), ...targetsOf(manifest.typesVersions)])
  const missing = [...pointedAt].filter((p) => typeof p === 'string' && p.startsWith('./dist/') && !files.has(p.slice(2)))
  if (![...files].some((f) => f.startsWith('dist/'))) fail('the tarball has no dist/: prepack did not build')
  if (missing.length > 0) fail(`the tarball lacks files package.json points at: ${missing.join(', ')}`)
  for (const required of ['LICENSE', 'README.md', 'CHANGELOG.md', 'package.json']) if (!files.has(required)) fail(`the tarball has no ${required}`)
  // The packed package.json names no script npm would run, or warn about, at install:
  // `prepare` is for git installs only, and its file is not in the package.
  const packedScripts = JSON.parse(read('tar', ['-xzOf', tarball, 'package/package.json'])).scripts ?? {}
  const installScripts = ['preinstall', 'install', 'postinstall', 'prepare'].filter((name) => packedScripts[name] !== undefined)
  if (installScripts.length > 0) fail(`the packed package.json names install scripts: ${installScripts.join(', ')}`)
  if (read('git', ['status', '--porcelain'], clone).trim() !== '') fail(`packing left the clone changed:\n${read('git', ['status', '--porcelain'], clone)}`)
  console.log(`package: ${filename}, ${files.size} files, ${(statSync(tarball).size / 1024).toFixed(0)} kB, dist/ built by prepack`)
  run('npx', ['publint', 'run', tarball, '--strict'])
  run('npx', ['attw', tarball])

  // 3. Installed in a scratch project, used from ESM, CommonJS and TypeScript.
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'))
  const pinned = (name) => `${name}@${lock.packages[`node_modules/${name}`].version}`
  const project = join(scratch, 'project')
  cpSync(join(root, 'scripts', 'package-smoke'), project, { recursive: true })
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'smoke', private: true, type: 'commonjs' }))
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', tarball,
    ...['express', 'koa', 'fastify', 'hono', 'ioredis', 'pg', 'typescript', '@types/express', '@types/koa', '@types/node', '@types/pg'].map(pinned),
    `typescript7@npm:typescript@${TYPESCRIPT_7}`], project)
  run('node', ['esm.mjs'], project)
  // A git install builds dist/ itself (`prepare`, in a clone npm makes of the repository).
  const fromGit = join(scratch, 'from-git')
  mkdirSync(fromGit)
  cpSync(join(root, 'scripts', 'package-smoke', 'esm.mjs'), join(fromGit, 'esm.mjs'))
  writeFileSync(join(fromGit, 'package.json'), JSON.stringify({ name: 'smoke-git', private: true }))
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', `git+file://${clone}#${head}`, ...['express', 'koa', 'fastify', 'hono', 'pg'].map(pinned)], fromGit)
  if (!existsSync(join(fromGit, 'node_modules', 'open-data-gate', 'dist', 'index.js'))) fail('a git install has no dist/: prepare did not build')
  run('node', ['esm.mjs'], fromGit)
  console.log('package: a git install builds and runs')
  run('node', ['cjs.cjs'], project)
  // The package's bin, as an operator runs it: npx finds it in the installed tarball.
  const help = execFileSync('npx', ['--no-install', 'open-data-gate', '--help'], { cwd: project }).toString()
  if (!help.startsWith('Usage: open-data-gate')) throw new Error(`npx open-data-gate --help printed:\n${help}`)
  const compilers = [
    ['TypeScript 5.9', join(project, 'node_modules', 'typescript', 'bin', 'tsc')],
    [`TypeScript ${TYPESCRIPT_7}`, join(project, 'node_modules', 'typescript7', 'bin', 'tsc')],
  ]
  for (const [name, tsc] of compilers) {
    // tsconfig.notypes.json: a node:http app with no `types` list, TypeScript 7's default.
    // tsconfig.fetch.json: the Fetch and Hono adapters with `types: []`, nothing from @types/node.
    for (const config of ['tsconfig.json', 'tsconfig.bundler.json', 'tsconfig.libcheck.json', 'tsconfig.notypes.json', 'tsconfig.fetch.json']) {
      console.log(`package: ${name}, ${config}`)
      run('node', [tsc, '-p', config], project)
    }
  }
  // The smokes and type checks above ran without @opentelemetry/api (an optional peer): with it, the gate records.
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', ...['@opentelemetry/api', '@opentelemetry/sdk-metrics'].map(pinned)], project)
  run('node', ['metrics.mjs'], project)
  console.log('package: ok')
} finally {
  rmSync(scratch, { recursive: true, force: true })
}

/** Every string leaf of an `exports` or `typesVersions` map. */
function targetsOf(value) {
  if (typeof value === 'string') return [value]
  if (value === null || typeof value !== 'object') return []
  return Object.values(value).flatMap(targetsOf)
}
