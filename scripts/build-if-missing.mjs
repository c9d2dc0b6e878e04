#!/usr/bin/env node
// `prepare`: a git install (npm, pnpm, yarn) gets a clone without dist/, so build it there.
// A working copy that already has dist/ is left alone (npm ci stays fast); `prepack`
// always rebuilds, so no tarball carries a stale build.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'

const root = resolve(import.meta.dirname, '..')
if (!existsSync(resolve(root, 'dist', 'index.js'))) {
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' })
}
