/**
 * The rate step: GCRA with the gate's exact arithmetic ({@link gcraStep}), one atomic
 * step per call, on the store's clock. Windows are a few hundred milliseconds where the
 * check has to wait, so the whole group takes about a second.
 */
import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { group, type StoreCheck } from '../check.js'
import { freshRateKey } from '../fixtures.js'

export const rateChecks: readonly StoreCheck[] = group('rate steps', ['rates'], [
  [
    'allows a burst of exactly the limit, counting down, then refuses until one interval has passed',
    async (store) => {
      const key = freshRateKey()
      const remaining: number[] = []
      for (let i = 0; i < 5; i++) {
        const r = await store.consumeRate(key, 5, 60_000, 1)
        assert.equal(r.allowed, true, `request ${i + 1} of 5 is allowed`)
        remaining.push(r.remaining)
      }
      assert.deepEqual(remaining, [4, 3, 2, 1, 0])
      const refused = await store.consumeRate(key, 5, 60_000, 1)
      assert.equal(refused.allowed, false, 'the sixth request is refused')
      assert.equal(refused.remaining, 0)
      // One request per 12 s: the next one fits within one emission interval.
      assert.ok(refused.retryAfterMs > 11_000 && refused.retryAfterMs <= 12_000, `retryAfterMs ${refused.retryAfterMs} is within one 12 s interval`)
    },
  ],
  [
    'reports the time until the whole budget is back',
    async (store) => {
      const first = await store.consumeRate(freshRateKey(), 10, 60_000, 1)
      assert.ok(first.resetMs > 5_900 && first.resetMs <= 6_000, `resetMs ${first.resetMs} is one 6 s interval`)
      assert.equal(first.retryAfterMs, 0)
    },
  ],
  [
    'allows exactly the limit when three times as many steps on one key run at once',
    async (store) => {
      const key = freshRateKey()
      const limit = 20
      const results = await Promise.all(Array.from({ length: 3 * limit }, () => store.consumeRate(key, limit, 60_000, 1)))
      const allowed = results.filter((r) => r.allowed)
      assert.equal(allowed.length, limit, 'steps allowed')
      assert.deepEqual(
        allowed.map((r) => r.remaining).sort((a, b) => b - a),
        Array.from({ length: limit }, (_, i) => limit - 1 - i),
        'each allowed step saw its own remaining count',
      )
    },
  ],
  [
    'lets a refused client in again once retryAfterMs has passed, one request per interval',
    async (store) => {
      const key = freshRateKey()
      // 4 per 400 ms: one request every 100 ms. Step until refused: a busy machine may
      // earn a step back while it bursts.
      for (let i = 0; i < 4; i++) assert.equal((await store.consumeRate(key, 4, 400, 1)).allowed, true, `request ${i + 1} of a burst of 4 is allowed`)
      let refused
      let refusedAt = 0
      for (let i = 0; i < 10 && refused?.allowed !== false; i++) {
        refusedAt = performance.now()
        refused = await store.consumeRate(key, 4, 400, 1)
      }
      assert.equal(refused?.allowed, false, 'a request beyond the burst is refused')
      assert.ok(refused.retryAfterMs > 0 && refused.retryAfterMs <= 100, `retryAfterMs ${refused.retryAfterMs} is at most one 100 ms interval`)
      await sleep(refused.retryAfterMs + 15)
      assert.equal((await store.consumeRate(key, 4, 400, 1)).allowed, true, 'allowed once retryAfterMs has passed')
      const again = await store.consumeRate(key, 4, 400, 1)
      // Only one interval came back: a second request fits one more interval later. When
      // this machine was too busy to get here within that time, the step says nothing.
      if (performance.now() - refusedAt < refused.retryAfterMs + 95) assert.equal(again.allowed, false, 'only one request came back after one interval')
    },
  ],
  [
    'gives the whole budget back at resetMs',
    async (store) => {
      const key = freshRateKey()
      const start = performance.now()
      let last
      for (let i = 0; i < 3; i++) last = await store.consumeRate(key, 3, 300, 1)
      const drained = await store.consumeRate(key, 3, 300, 0)
      // 3 per 300 ms: a step comes back every 100 ms, so the budget is empty only that long.
      if (performance.now() - start < 100) assert.equal(drained.remaining, 0, 'the burst emptied the budget')
      await sleep(last!.resetMs + 15)
      assert.equal((await store.consumeRate(key, 3, 300, 0)).remaining, 3, 'the whole budget is back after resetMs')
    },
  ],
  [
    'does not count a refused request',
    async (store) => {
      const key = freshRateKey()
      // 2 per minute: nothing comes back during the check.
      await store.consumeRate(key, 2, 60_000, 1)
      await store.consumeRate(key, 2, 60_000, 1)
      const start = performance.now()
      const first = await store.consumeRate(key, 2, 60_000, 1)
      assert.equal(first.allowed, false)
      for (let i = 0; i < 5; i++) assert.equal((await store.consumeRate(key, 2, 60_000, 1)).allowed, false)
      const last = await store.consumeRate(key, 2, 60_000, 1)
      // Counted refusals would push the next allowed request back 30 s each.
      assert.ok(last.retryAfterMs <= first.retryAfterMs, `retryAfterMs went from ${first.retryAfterMs} to ${last.retryAfterMs}: refusals were counted`)
      assert.ok(last.retryAfterMs >= first.retryAfterMs - (performance.now() - start) - 5, 'retryAfterMs runs down with the clock')
    },
  ],
  [
    'consumes the cost asked for, and refuses a step that does not fit without consuming it',
    async (store) => {
      const key = freshRateKey()
      assert.equal((await store.consumeRate(key, 5, 60_000, 3)).remaining, 2)
      assert.equal((await store.consumeRate(key, 5, 60_000, 3)).allowed, false)
      const rest = await store.consumeRate(key, 5, 60_000, 2)
      assert.equal(rest.allowed, true, 'the refused step of 3 consumed nothing')
      assert.equal(rest.remaining, 0)
    },
  ],
  [
    'reads without consuming when the cost is 0',
    async (store) => {
      const key = freshRateKey()
      assert.equal((await store.consumeRate(key, 3, 60_000, 0)).remaining, 3)
      await store.consumeRate(key, 3, 60_000, 1)
      assert.equal((await store.consumeRate(key, 3, 60_000, 0)).remaining, 2)
      assert.equal((await store.consumeRate(key, 3, 60_000, 0)).remaining, 2)
    },
  ],
  [
    'counts keys independently',
    async (store) => {
      const [a, b] = [freshRateKey(), freshRateKey()]
      await store.consumeRate(a, 1, 60_000, 1)
      assert.equal((await store.consumeRate(a, 1, 60_000, 1)).allowed, false)
      assert.equal((await store.consumeRate(b, 1, 60_000, 1)).allowed, true)
    },
  ],
  [
    'forgets a key on reset',
    async (store) => {
      const key = freshRateKey()
      await store.consumeRate(key, 1, 60_000, 1)
      await store.resetRate(key)
      assert.equal((await store.consumeRate(key, 1, 60_000, 1)).allowed, true)
    },
  ],
])
