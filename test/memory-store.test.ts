import { afterAll, describe, expect, it } from 'vitest'
import { createGate, MemoryStore } from '../src/index.js'
import { describeStore } from '../src/testing/index.js'

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
