/**
 * What a conformance check is, and how a list of them runs against one store: each in
 * turn, each with a time limit, each failure caught and named.
 */
import { KIT_SLICES, type StoreSlice } from '../store/slices.js'
import type { Awaitable, GateStore } from '../store/store.js'

/** One check of the contract: a named behaviour, run against a store. */
export interface StoreCheck {
  /** The part of the contract, such as `authorization codes`. */
  readonly group: string
  /** The behaviour, such as `lets exactly one of 50 concurrent consumers win`. */
  readonly name: string
  /** The slices of the contract the check needs: it runs only against a store checked for all of them. */
  readonly slices: readonly StoreSlice[]
  /**
   * Why the check does not apply to `store`, or `undefined` when it does: a check of an
   * optional capability the store leaves out. A skipped check is reported with its reason.
   */
  readonly skip?: (store: GateStore) => string | undefined
  /** Resolves when the store behaves; rejects (an `AssertionError`) when it does not. */
  readonly run: (store: GateStore) => Promise<void>
}

/** The name a check is reported under: `group: name`. */
export const fullName = (check: StoreCheck): string => `${check.group}: ${check.name}`

/** Builds the checks of one group, each needing `slices`. */
export function group(name: string, slices: readonly StoreSlice[], checks: ReadonlyArray<readonly [string, (store: GateStore) => Promise<void>]>): StoreCheck[] {
  return checks.map(([check, run]) => ({ group: name, name: check, slices, run }))
}

/** How long one check may take before it fails as hung, by default. */
export const DEFAULT_CHECK_TIMEOUT_MS = 10_000

/** Runs one check, failing it when it takes longer than `timeoutMs` (a store that never answers). */
export async function runCheck(check: StoreCheck, store: GateStore, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not finish within ${timeoutMs} ms: a store call never answered`)), timeoutMs)
  })
  try {
    await Promise.race([check.run(store), hung])
  } finally {
    clearTimeout(timer)
  }
}

/** What {@link checkStore} found. */
export interface StoreReport {
  /** The slices the run checked. */
  readonly slices: readonly StoreSlice[]
  /** The names of the checks the store passed, in the order they ran. */
  readonly passed: string[]
  /** The checks it failed, each with the reason (the assertion's message). */
  readonly failed: Array<{ readonly name: string; readonly error: string }>
  /** The checks of an optional capability the store does not have, each with the reason. */
  readonly skipped: Array<{ readonly name: string; readonly reason: string }>
}

/**
 * Runs `checks` one after the other against the store `factory` makes once, then calls
 * `cleanup`. `checks` may be chosen by the store (its slices) once it is made.
 */
export async function runChecks<S extends GateStore>(
  checks: readonly StoreCheck[] | ((store: S) => readonly StoreCheck[]),
  factory: () => Awaitable<S>,
  options: { cleanup?: ((store: S) => Awaitable<void>) | undefined; timeoutMs?: number | undefined },
): Promise<StoreReport> {
  const store = await factory()
  const chosen = typeof checks === 'function' ? checks(store) : checks
  const slices = KIT_SLICES.filter((slice) => chosen.some((check) => check.slices.includes(slice)))
  const report: StoreReport = { slices, passed: [], failed: [], skipped: [] }
  try {
    for (const check of chosen) {
      const reason = check.skip?.(store)
      if (reason !== undefined) {
        report.skipped.push({ name: fullName(check), reason })
        continue
      }
      try {
        await runCheck(check, store, options.timeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS)
        report.passed.push(fullName(check))
      } catch (error) {
        report.failed.push({ name: fullName(check), error: error instanceof Error ? error.message : String(error) })
      }
    }
  } finally {
    await options.cleanup?.(store)
  }
  return report
}
