/**
 * `open-data-gate/testing`: the conformance kit. Every {@link GateStore} passes it —
 * MemoryStore, RedisStore, PostgresStore, and yours: it is the definition of "implements
 * the contract". It checks the contract slice by slice (applications, rates, users, API
 * keys, OAuth), each check in `checks/` by record kind: the slices a store declares
 * (`slices`), or else, with {@link checkStore}, the ones it implements. Runner-agnostic (assertions are `node:assert/strict`), so it runs
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
import { KIT_SLICES, slicesPresent, type StoreSlice } from '../store/slices.js'
import type { Awaitable, GateStore } from '../store/store.js'
import { DEFAULT_CHECK_TIMEOUT_MS, runCheck, runChecks, type StoreCheck, type StoreReport } from './check.js'
import { apiKeyChecks } from './checks/api-keys.js'
import { applicationChecks } from './checks/applications.js'
import { codeChecks } from './checks/codes.js'
import { expiryChecks } from './checks/expiry.js'
import { grantChecks } from './checks/grants.js'
import { rateChecks } from './checks/rates.js'
import { limitChecks } from './checks/limits.js'
import { requestLookupChecks } from './checks/request-lookup.js'
import { requestLookupLimitChecks } from './checks/request-lookup-limits.js'
import { sessionChecks } from './checks/sessions.js'
import { tokenChecks } from './checks/tokens.js'
import { userChecks } from './checks/users.js'
import { gateChecks } from './gate-checks.js'
import { usageChecks } from './checks/usage.js'

export type { StoreReport } from './check.js'
export type { StoreSlice } from '../store/slices.js'

/**
 * A store under test: a whole {@link GateStore}, or a store of some of its slices (say
 * applications and rates, or rates alone for a `rateStore`).
 */
export type StoreUnderTest = Partial<GateStore>

/** Makes the store under test. Called once per run; may be async (connect, create a schema). */
export type StoreFactory<S extends StoreUnderTest = GateStore> = () => Awaitable<S>

/** Options of {@link checkStore}. */
export interface CheckStoreOptions<S extends StoreUnderTest = GateStore> {
  /**
   * The slices to check (`'applications'`, `'rates'`, `'users'`, `'apiKeys'`, `'oauth'`).
   * Default: the slices the store has at least one method of, so that a slice left half
   * done fails on what it lacks; every slice when it has none.
   */
  slices?: readonly StoreSlice[]
  /** Called once after the last check with the store the factory made: close it, drop its schema or keys. */
  cleanup?: (store: S) => Awaitable<void>
  /** How long one check may take before it fails as hung, in ms. Default 10 000. */
  timeoutMs?: number
}

/** The whole kit, in the order it runs. */
const ALL_CHECKS: readonly StoreCheck[] = [
  ...applicationChecks,
  ...userChecks,
  ...apiKeyChecks,
  ...tokenChecks,
  ...grantChecks,
  ...codeChecks,
  ...sessionChecks,
  ...expiryChecks,
  ...rateChecks,
  ...limitChecks,
  ...requestLookupChecks,
  ...requestLookupLimitChecks,
  ...gateChecks(),
  ...usageChecks,
]

/** The checks of the kit that need no slice outside `slices`. */
function checksOf(slices: readonly StoreSlice[]): StoreCheck[] {
  return ALL_CHECKS.filter((check) => check.slices.every((slice) => slices.includes(slice)))
}

/** The names of every check, as {@link checkStore} reports them (`group: behaviour`). */
export const storeCheckNames: readonly string[] = ALL_CHECKS.map((check) => `${check.group}: ${check.name}`)

/**
 * Runs the checks of the store's slices (see {@link CheckStoreOptions.slices}) against one
 * store and reports which passed and which failed, with the reason. Never throws for a
 * failing check; throws only if `factory` or `cleanup` does.
 *
 * @example
 * import { checkStore } from 'open-data-gate/testing'
 * const report = await checkStore(() => new MyStore({ url }), { cleanup: (store) => store.close() })
 * for (const { name, error } of report.failed) console.error(`${name}\n  ${error}`)
 * process.exitCode = report.failed.length === 0 ? 0 : 1
 *
 * @example
 * // a store of applications and rates only
 * const report = await checkStore(() => new SmallStore(), { slices: ['applications', 'rates'] })
 */
export function checkStore<S extends StoreUnderTest>(factory: StoreFactory<S>, options: CheckStoreOptions<S> = {}): Promise<StoreReport> {
  validateTimeout(options.timeoutMs)
  const declared = options.slices === undefined ? undefined : validSlices(options.slices)
  return runChecks((store) => {
    const present = slicesPresent(store)
    return checksOf(declared ?? (present.length === 0 ? KIT_SLICES : present))
  }, factory as StoreFactory<GateStore>, options as CheckStoreOptions<GateStore>)
}

/** A test runner's `describe`: vitest's, node:test's, mocha's. */
export type DescribeFunction = (name: string, body: () => void) => unknown
/**
 * A test runner's `it` (or `test`). The body takes no declared parameter (mocha would read
 * one as a `done` callback) and finds the runner's test context, to skip a check of a
 * capability the store leaves out, as its first argument (vitest, node:test) or `this`
 * (mocha); a runner without one runs such a check as passed.
 */
export type ItFunction = (name: string, body: () => Promise<void>) => unknown
/** A runner's hook that runs once after every test of the enclosing suite: vitest's `afterAll`, node:test's `after`. */
export type AfterFunction = (body: () => Promise<void>) => unknown

/** Options of {@link describeStore}. */
export interface DescribeStoreOptions<S extends StoreUnderTest = GateStore> {
  describe: DescribeFunction
  it: ItFunction
  /**
   * The slices to check. Default: every slice (the suite is declared before the store is
   * made, so it cannot look): a store of fewer slices says which it has.
   */
  slices?: readonly StoreSlice[]
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
export function describeStore<S extends StoreUnderTest>(name: string, factory: StoreFactory<S>, options: DescribeStoreOptions<S>): void {
  const { describe, it, after, cleanup } = options
  if (typeof describe !== 'function' || typeof it !== 'function') {
    throw new TypeError('open-data-gate/testing: describeStore needs your runner\'s describe and it: describeStore(name, factory, { describe, it })')
  }
  if (cleanup !== undefined && typeof after !== 'function') {
    throw new TypeError('open-data-gate/testing: describeStore with cleanup needs your runner\'s after hook (vitest afterAll, node:test after)')
  }
  validateTimeout(options.timeoutMs)
  const checks = checksOf(options.slices === undefined ? KIT_SLICES : validSlices(options.slices))
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
    for (const check of checks) groups.set(check.group, [...(groups.get(check.group) ?? []), check])
    for (const [groupName, checks] of groups) {
      describe(groupName, () => {
        for (const check of checks) {
          it(check.name, async function (this: unknown, ...args: unknown[]) {
            const made = (await store()) as GateStore
            const reason = check.skip?.(made)
            if (reason !== undefined) return skipTest(reason, args[0], this)
            await runCheck(check, made, timeoutMs)
          })
        }
      })
    }
  })
}

/**
 * Marks the running test skipped, with `reason`, through whichever runner's context has a
 * `skip`: vitest's (which throws to stop the test) and node:test's take the reason, mocha's
 * `this.skip()` does not.
 */
function skipTest(reason: string, ...contexts: unknown[]): void {
  for (const context of contexts) {
    // vitest's context is a function object, node:test's and mocha's plain objects.
    const skip = (typeof context === 'object' && context !== null) || typeof context === 'function' ? (context as { skip?: unknown }).skip : undefined
    if (typeof skip === 'function') {
      ;(skip as (note: string) => void).call(context, reason)
      return
    }
  }
}

/** @throws {TypeError} unless every entry names a slice */
function validSlices(slices: readonly StoreSlice[]): readonly StoreSlice[] {
  if (!Array.isArray(slices) || slices.some((slice) => !KIT_SLICES.includes(slice))) {
    throw new TypeError(`open-data-gate/testing: slices must be a list of ${KIT_SLICES.map((slice) => `'${slice}'`).join(', ')}, got ${JSON.stringify(slices)}`)
  }
  return slices
}

function validateTimeout(timeoutMs: number | undefined): void {
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new TypeError(`open-data-gate/testing: timeoutMs must be a positive number, got ${String(timeoutMs)}`)
  }
}
