/**
 * Compatibility shim: the conformance suite now lives in the published kit,
 * `open-data-gate/testing` (src/testing/). Branches written against the old
 * `describeStoreConformance(name, makeFixture)` keep working through this mapping; new
 * tests call `describeStore` directly.
 */
import { afterAll, describe, it } from 'vitest'
import type { GateStore } from '../src/index.js'
import { describeStore } from '../src/testing/index.js'

export interface StoreFixture {
  store: GateStore
  /** Called once, after the last check. */
  cleanup?: () => Promise<void> | void
}

/** @deprecated use `describeStore` from `open-data-gate/testing`. The fixture is made once per suite. */
export function describeStoreConformance(name: string, makeStore: () => Promise<StoreFixture> | StoreFixture): void {
  let fixture: StoreFixture | undefined
  describeStore(
    name,
    async () => {
      fixture = await makeStore()
      return fixture.store
    },
    { describe, it, after: afterAll, cleanup: async () => fixture?.cleanup?.() },
  )
}
