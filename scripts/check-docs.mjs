#!/usr/bin/env node
// `npm run check:docs`: the committed API reference (docs/reference/api/, Markdown that
// `npm run docs` generates from the TSDoc with TypeDoc) is the one the sources give today.
// It generates the reference again into a temporary folder, compares every file, and
// fails, naming the files that differ, when the committed copy is stale.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'

const root = resolve(import.meta.dirname, '..')
const committed = join(root, 'docs', 'reference', 'api')

/** Every file under `dir`, relative to it, sorted. */
function files(dir) {
  try {
    return readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
      .sort()
  } catch (error) {
    if (error.code === 'ENOENT') return []
    throw error
  }
}

const scratch = mkdtempSync(join(tmpdir(), 'open-data-gate-docs-'))
try {
  const fresh = join(scratch, 'api')
  const typedoc = join(root, 'node_modules', 'typedoc', 'bin', 'typedoc')
  execFileSync(process.execPath, [typedoc, '--out', fresh, '--logLevel', 'Warn'], { cwd: root, stdio: 'inherit' })

  const want = files(fresh)
  const have = files(committed)
  const problems = [
    ...want.filter((file) => !have.includes(file)).map((file) => `missing: ${file}`),
    ...have.filter((file) => !want.includes(file)).map((file) => `no longer generated: ${file}`),
    ...want.filter((file) => have.includes(file) && !readFileSync(join(fresh, file)).equals(readFileSync(join(committed, file)))).map((file) => `differs: ${file}`),
  ]
  if (problems.length > 0) {
    console.error(`docs/reference/api/ is not what the TSDoc generates now (${problems.length} files):`)
    for (const problem of problems.slice(0, 40)) console.error(`  ${problem}`)
    if (problems.length > 40) console.error(`  ... and ${problems.length - 40} more`)
    console.error('Run `npm run docs` and commit docs/reference/api/.')
    process.exitCode = 1
  } else {
    console.log(`docs/reference/api/ is current (${want.length} files).`)
  }
} finally {
  rmSync(scratch, { recursive: true, force: true })
}
