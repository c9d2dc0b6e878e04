/**
 * consumeLimits through the store's guard (src/store/guarded-store.ts), as the gate calls
 * every store method: passed through when it answers, a StoreError when it hangs past the
 * timeout (an outage the gate reports), and refused before the store sees it when a step's
 * key holds text no store can keep.
 */
import { describe, expect, it } from 'vitest'
import { StoreDataError, StoreError } from '../src/errors.js'
import type { Emit } from '../src/events.js'
import { MemoryStore, type GateStore, type LimitStep } from '../src/index.js'
import { guardStore } from '../src/store/guarded-store.js'
import { StoreHealth } from '../src/store/store-health.js'

const steps: LimitStep[] = [
  { kind: 'rate', key: '{app:a}:minute', limit: 2, windowMs: 60_000, cost: 1 },
  { kind: 'quota', key: '{app:a}:day', limit: 5, periodStart: 0, periodEnd: Date.now() + 3_600_000, cost: 1 },
]

function guarded(store: Partial<GateStore>, timeoutMs = 50) {
  const events: string[] = []
  const emit: Emit = (event, ..._args) => void events.push(event)
  return { store: guardStore(store, timeoutMs, new StoreHealth('records', emit, () => 'failed')), events }
}

describe('consumeLimits behind the guard', () => {
  it("answers with the store's results", async () => {
    const { store } = guarded(new MemoryStore())
    expect((await store.consumeLimits!(steps)).map((r) => r.remaining)).toEqual([1, 4])
  })

  it('fails a call that hangs past the timeout as the store being down', async () => {
    const { store, events } = guarded({ consumeLimits: () => new Promise(() => {}) })
    const error: unknown = await Promise.resolve(store.consumeLimits!(steps)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StoreError)
    expect((error as StoreError).operation).toBe('consumeLimits')
    expect(events).toEqual(['storeError'])
  })

  it("refuses a step whose key no store can hold, without calling the store", () => {
    let called = false
    const { store } = guarded({ consumeLimits: () => ((called = true), []) })
    expect(() => store.consumeLimits!([steps[0]!, { ...steps[1]!, key: '{app:a}:d\u0000y' }])).toThrow(StoreDataError)
    expect(called).toBe(false)
  })

  it('leaves the method out for a store without it', () => {
    const { store } = guarded({ consumeRate: () => ({ allowed: true, remaining: 1, resetMs: 0, retryAfterMs: 0 }) })
    expect(store.consumeLimits).toBeUndefined()
  })
})
