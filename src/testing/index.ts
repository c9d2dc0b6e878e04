/**
 * `open-data-gate/testing`: the conformance kit. Every {@link GateStore} passes it —
 * MemoryStore, RedisStore, PostgresStore, and yours: it is the definition of "implements
 * the contract". Runner-agnostic (assertions are `node:assert/strict`), so it runs
 * under vitest, node:test, mocha or a plain script.
 *
 * The store is made once per run and shared by every check: each check uses fresh
 * random ids and rate keys of its own, so checks never see each other's records and a
 * run is safe on a server other runs share. Checks run one after the other; the whole kit
 * takes a second or two (its timed checks wait a few hundred milliseconds). The expiry
 * checks assume the store's clock agrees with this machine's within about 100 ms.
 *
 * @module open-data-gate/testing
 */
import type { Awaitable, GateStore } from '../store/store.js'
import { DEFAULT_CHECK_TIMEOUT_MS, runCheck, runChecks, type StoreCheck, type StoreReport } from './check.js'
import { gateChecks } from './gate-checks.js'
import { rateChecks } from './rate-checks.js'
import { recordChecks } from './record-checks.js'
import { usageChecks } from './usage-checks.js'

export type { StoreReport } from './check.js'

/** Makes the store under test. Called once per run; may be async (connect, create a schema). */
export type StoreFactory<S extends GateStore = GateStore> = () => Awaitable<S>

/** Options of {@link checkStore}. */
export interface CheckStoreOptions<S extends GateStore = GateStore> {
  /** Called once after the last check with the store the factory made: close it, drop its schema or keys. */
  cleanup?: (store: S) => Awaitable<void>
  /** How long one check may take before it fails as hung, in ms. Default 10 000. */
  timeoutMs?: number
}

/** The whole kit, in the order it runs. */
const ALL_CHECKS: readonly StoreCheck[] = [...recordChecks, ...rateChecks, ...gateChecks(), ...usageChecks]

/** The names of every check, as {@link checkStore} reports them (`group: behaviour`). */
export const storeCheckNames: readonly string[] = ALL_CHECKS.map((check) => `${check.group}: ${check.name}`)

/**
 * Runs every check against one store and reports which passed and which failed, with the
 * reason. Never throws for a failing check; throws only if `factory` or `cleanup` does.
 *
 * @example
 * import { checkStore } from 'open-data-gate/testing'
 * const report = await checkStore(() => new MyStore({ url }), { cleanup: (store) => store.close() })
 * for (const { name, error } of report.failed) console.error(`${name}\n  ${error}`)
 * process.exitCode = report.failed.length === 0 ? 0 : 1
 */
export function checkStore<S extends GateStore>(factory: StoreFactory<S>, options: CheckStoreOptions<S> = {}): Promise<StoreReport> {
  validateTimeout(options.timeoutMs)
  return runChecks(ALL_CHECKS, factory, options)
}

/** A test runner's `describe`: vitest's, node:test's, mocha's. */
export type DescribeFunction = (name: string, body: () => void) => unknown
/** A test runner's `it` (or `test`). */
export type ItFunction = (name: string, body: () => Promise<void>) => unknown
/** A runner's hook that runs once after every test of the enclosing suite: vitest's `afterAll`, node:test's `after`. */
export type AfterFunction = (body: () => Promise<void>) => unknown

/** Options of {@link describeStore}. */
export interface DescribeStoreOptions<S extends GateStore = GateStore> {
  describe: DescribeFunction
  it: ItFunction
  /** Runs `cleanup` once the suite is done: vitest's `afterAll`, node:test's `after`. Required with `cleanup`. */
  after?: AfterFunction
  /** Called once after the last check with the store the factory made. */
  cleanup?: (store: S) => Awaitable<void>
  /** How long one check may take before it fails as hung, in ms. Default 10 000. */
  timeoutMs?: number
}

/**
 * Declares the kit as a test suite in your runner: one `describe` per part of the
 * contract, one `it` per check. The store is made by the first check that runs and
 * shared by the rest; `cleanup` runs in `after` at the end.
 *
 * @example
 * // vitest
 * import { afterAll, describe, it } from 'vitest'
 * import { describeStore } from 'open-data-gate/testing'
 * describeStore('MyStore', () => new MyStore({ url }), { describe, it, after: afterAll, cleanup: (store) => store.close() })
 *
 * @example
 * // node:test
 * import { after, describe, it } from 'node:test'
 * import { describeStore } from 'open-data-gate/testing'
 * describeStore('MyStore', () => new MyStore({ url }), { describe, it, after, cleanup: (store) => store.close() })
 */
export function describeStore<S extends GateStore>(name: string, factory: StoreFactory<S>, options: DescribeStoreOptions<S>): void {
  const { describe, it, after, cleanup } = options
  if (typeof describe !== 'function' || typeof it !== 'function') {
    throw new TypeError('open-data-gate/testing: describeStore needs your runner\'s describe and it: describeStore(name, factory, { describe, it })')
  }
  if (cleanup !== undefined && typeof after !== 'function') {
    throw new TypeError('open-data-gate/testing: describeStore with cleanup needs your runner\'s after hook (vitest afterAll, node:test after)')
  }
  validateTimeout(options.timeoutMs)
  const timeoutMs = options.timeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS
  let made: Promise<S> | undefined
  const store = () => (made ??= Promise.resolve().then(factory))
  describe(`${name} implements the GateStore contract`, () => {
    if (cleanup !== undefined && after !== undefined) {
      after(async () => {
        if (made !== undefined) await cleanup(await made)
      })
    }
    const groups = new Map<string, StoreCheck[]>()
    for (const check of ALL_CHECKS) groups.set(check.group, [...(groups.get(check.group) ?? []), check])
    for (const [groupName, checks] of groups) {
      describe(groupName, () => {
        for (const check of checks) it(check.name, async () => runCheck(check, await store(), timeoutMs))
      })
    }
  })
}

function validateTimeout(timeoutMs: number | undefined): void {
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new TypeError(`open-data-gate/testing: timeoutMs must be a positive number, got ${String(timeoutMs)}`)
  }
}
