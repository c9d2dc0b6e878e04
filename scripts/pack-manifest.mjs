#!/usr/bin/env node
// The package.json a tarball carries names no `prepare` script. `prepare` is for a git
// install (a clone has no dist/, scripts/build-if-missing.mjs builds it), and its file is
// not in the package: in a tarball it would only make npm warn about an install script
// that cannot run. So `prepack` (after the build) takes it out of package.json, and
// `postpack` puts the file back exactly as it was.
//
//   node scripts/pack-manifest.mjs strip     # prepack
//   node scripts/pack-manifest.mjs restore   # postpack
//
// A pack that failed between the two leaves the saved copy behind; the next strip puts it
// back first, so the working copy never loses its `prepare`.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'

const root = resolve(import.meta.dirname, '..')
const manifest = resolve(root, 'package.json')
const saved = resolve(root, 'package.json.before-pack')

const mode = process.argv[2]
if (mode === 'strip') {
  if (existsSync(saved)) renameSync(saved, manifest)
  const text = readFileSync(manifest, 'utf8')
  const pkg = JSON.parse(text)
  if (pkg.scripts?.prepare !== undefined) {
    writeFileSync(saved, text)
    delete pkg.scripts.prepare
    writeFileSync(manifest, `${JSON.stringify(pkg, null, 2)}\n`)
  }
} else if (mode === 'restore') {
  if (existsSync(saved)) renameSync(saved, manifest)
} else {
  console.error('usage: node scripts/pack-manifest.mjs strip|restore')
  process.exit(2)
}
