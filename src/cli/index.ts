#!/usr/bin/env node
/**
 * The `open-data-gate` command (the package's `bin`). See `open-data-gate --help` and
 * docs/guides/cli.md.
 */
import { run } from './main.js'

void run(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env }).then((code) => {
  // Exit once the output is written, even if a driver still holds a reconnect timer.
  process.stdout.write('', () => process.exit(code))
})
