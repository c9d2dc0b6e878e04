#!/usr/bin/env node
// `prepare`: a git install (npm, pnpm, yarn) gets a clone without dist/, so build it there.
// A working copy that already has dist/ is left alone, and so is `npm ci` in a clone of the
// project (npm_command is `ci` only there: a git install runs `install`), which needs no
// dist/ to run the demo (it runs on the sources) and builds it when the tests that use it
// start (test/support/build-once.ts). `prepack` always rebuilds, so no tarball carries a
// stale build.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'

const root = resolve(import.meta.dirname, '..')
if (process.env.npm_command !== 'ci' && !existsSync(resolve(root, 'dist', 'index.js'))) {
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' })
}
