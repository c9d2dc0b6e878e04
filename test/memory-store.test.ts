import { afterAll, describe, expect, it } from 'vitest'
import { createGate, MemoryStore } from '../src/index.js'
import { describeStore } from '../src/testing/index.js'
import { coreRequest } from './support/requests.js'

describeStore('MemoryStore', () => new MemoryStore(), { describe, it, after: afterAll })

describe('MemoryStore bounds', () => {
  it('drops the least recently used rate key when full and the gate reports it', async () => {
    const store = new MemoryStore({ maxRateKeys: 2 })
    const gate = createGate({ store })
    const evicted: string[] = []
    gate.on('rateKeyEvicted', (e) => evicted.push(e.key))
    store.consumeRate('a', 10, 60_000, 1)
    store.consumeRate('b', 10, 60_000, 1)
    store.consumeRate('a', 10, 60_000, 1)
    store.consumeRate('c', 10, 60_000, 1)
    expect(evicted).toEqual(['b'])
    // 'a' was used recently and kept its count; 'b' starts afresh.
    expect(store.consumeRate('a', 10, 60_000, 1).remaining).toBe(7)
    expect(store.consumeRate('b', 10, 60_000, 1).remaining).toBe(9)
  })

  it('does not report a key whose state had already drained', () => {
    let now = 1_000_000
    const store = new MemoryStore({ maxRateKeys: 1, clock: () => now })
    const evicted: string[] = []
    store.attach({ rateKeyEvicted: (key) => evicted.push(key), applicationChanged: () => {} })
    store.consumeRate('a', 10, 1000, 1)
    now += 5000
    store.consumeRate('b', 10, 1000, 1)
    expect(evicted).toEqual([])
  })

  it('rejects a bound that is not a positive integer', () => {
    expect(() => new MemoryStore({ maxRateKeys: 0 })).toThrow(/maxRateKeys must be a positive integer/)
  })
})

describe('MemoryStore shared by several gates', () => {
  it('serves a token registered through another gate at once, though this gate is told nothing', async () => {
    const store = new MemoryStore()
    const other = createGate({ store })
    // A gate on the same store that never hears of changes (its attach does nothing).
    const deaf = new Proxy(store, {
      get(target, name) {
        if (name === 'attach') return () => {}
        const value: unknown = Reflect.get(target, name, target)
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
      },
    })
    const gate = createGate({ store: deaf, applicationCacheMs: 60_000 })
    const status = async () => {
      const outcome = await gate.handle(coreRequest({ headers: { 'x-app-token': 'registered-later-0003' } }))
      return outcome.type === 'next' ? 200 : outcome.response.status
    }
    expect(await status()).toBe(403)
    await other.applications.register({ name: 'Later', appToken: 'registered-later-0003' })
    expect(await status()).toBe(200)
  })
})
