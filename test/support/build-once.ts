/**
 * Vitest's global setup: dist/ built once, before any test file runs, when it is missing.
 * `npm ci` no longer builds it (the demo and most tests run on the sources), and the tests
 * of the built command and package (test/cli*.test.ts, test/runtimes.test.ts, the demo's
 * own) would otherwise each start the same build at once in parallel workers. A dist/
 * older than the sources is rebuilt by the test that needs it (`ensureBuilt`), as before.
 */
import { existsSync } from 'node:fs'
import { CLI, ensureBuilt } from './built-cli.js'

export default function setup(): void {
  if (!existsSync(CLI)) ensureBuilt()
}
