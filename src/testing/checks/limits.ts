/**
 * The optional `consumeLimits` capability: several limits of one request (GCRA rates and
 * calendar quotas) decided all or nothing, atomically. A store without it skips these
 * checks, with the reason: the gate then serves plans of one limit only.
 *
 * Quota periods here are chosen by the check (the gate computes them from the calendar), so
 * a "day" may be a few hundred milliseconds; the store's clock only says how long is left.
 */
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LimitResult, LimitStep, QuotaLimitStep, RateLimitStep } from '../../limits/limit-steps.js'
import type { GateStore } from '../../store/store.js'
import type { StoreCheck } from '../check.js'
import { randomBytes } from 'node:crypto'
import { limitRateKey } from '../../limits/rate-keys.js'
import { freshRateKey } from '../fixtures.js'

type LimitsStore = GateStore & { consumeLimits: NonNullable<GateStore['consumeLimits']> }

const HOUR_MS = 3_600_000

/** Why a store skips the checks, or `undefined` when it has the capability. */
export function withoutLimits(store: GateStore): string | undefined {
  return typeof store.consumeLimits === 'function' ? undefined : 'the store does not implement the optional consumeLimits: the gate serves plans of one limit only'
}

/**
 * A fresh limit's key. The keys of one call must be of one subject (`limitRateKey`): Redis
 * Cluster decides a call in one script, on one node. The kit's are all of one subject.
 */
const freshLimitKey = (): string => limitRateKey('odg-kit:limits', randomBytes(10).toString('hex'))

const rate = (limit: number, cost = 1, key = freshLimitKey(), windowMs = 60_000): RateLimitStep => ({ kind: 'rate', key, limit, windowMs, cost })
/** A quota of the hour around now (the period the check's clock is in). */
const quota = (limit: number, cost = 1, key = freshLimitKey(), start = Date.now() - HOUR_MS / 2, end = start + HOUR_MS): QuotaLimitStep => ({ kind: 'quota', key, limit, periodStart: start, periodEnd: end, cost })
const read = <S extends LimitStep>(step: S): S => ({ ...step, cost: 0 })

function limits(store: GateStore): LimitsStore['consumeLimits'] {
  return (steps) => (store as LimitsStore).consumeLimits(steps)
}

/** What every limit has left, read without consuming. */
async function remaining(store: GateStore, steps: readonly LimitStep[]): Promise<number[]> {
  return (await limits(store)(steps.map(read))).map((r) => r.remaining)
}

function check(name: string, run: (store: GateStore) => Promise<void>): StoreCheck {
  return { group: 'several limits (optional)', name, slices: ['rates'], skip: withoutLimits, run }
}

export const limitChecks: readonly StoreCheck[] = [
  check('takes every limit when all of them fit, each answering as its own step', async (store) => {
    const steps = [rate(5), quota(3), rate(10, 2)]
    const first = await limits(store)(steps)
    assert.equal(first.length, 3, 'one result per step')
    assert.deepEqual(first.map((r) => r.allowed), [true, true, true])
    assert.deepEqual(first.map((r) => r.remaining), [4, 2, 8])
    assert.deepEqual(await remaining(store, steps), [4, 2, 8], 'every limit was taken')
    assert.deepEqual(await limits(store)([]), [], 'no steps, no results')
  }),
  check('takes none when one refuses: a refused limit spends none of the others', async (store) => {
    const [a, q, b] = [rate(5), quota(1), quota(4)]
    await limits(store)([q])
    const refused = await limits(store)([a, q, b])
    assert.deepEqual(refused.map((r) => r.allowed), [true, false, true], 'the used-up quota refuses, the others would have fitted')
    assert.deepEqual(refused.map((r) => r.remaining), [5, 0, 4], 'the others answer as they are, nothing taken')
    for (let i = 0; i < 3; i++) await limits(store)([a, q, b])
    assert.deepEqual(await remaining(store, [a, q, b]), [5, 0, 4], 'four refused calls moved no count')
    const [r, c] = [rate(1), quota(3)]
    await limits(store)([r])
    const byRate = await limits(store)([c, r])
    assert.deepEqual(byRate.map((x) => x.allowed), [true, false], 'the used-up rate refuses')
    assert.ok(byRate[1]!.retryAfterMs > 0, 'the refused rate says when it fits again')
    assert.deepEqual(await remaining(store, [c]), [3], 'the quota was not spent')
  }),
  check('decides a rate step exactly as consumeRate does, on the same state', async (store) => {
    const step = rate(3)
    const reference = freshRateKey()
    const compare = (got: LimitResult, expected: LimitResult, what: string) => {
      assert.equal(got.allowed, expected.allowed, `${what}: allowed`)
      assert.equal(got.remaining, expected.remaining, `${what}: remaining`)
      assert.ok(Math.abs(got.resetMs - expected.resetMs) <= 1_000, `${what}: resetMs ${got.resetMs}, consumeRate says ${expected.resetMs}`)
      assert.ok(Math.abs(got.retryAfterMs - expected.retryAfterMs) <= 1_000, `${what}: retryAfterMs ${got.retryAfterMs}, consumeRate says ${expected.retryAfterMs}`)
    }
    for (let i = 0; i < 2; i++) compare((await limits(store)([step]))[0]!, await store.consumeRate(reference, 3, 60_000, 1), `step ${i + 1}`)
    // The same stored state: consumeRate on the key takes the last unit consumeLimits left.
    assert.equal((await store.consumeRate(step.key, 3, 60_000, 1)).remaining, 0, 'consumeRate sees the two steps consumeLimits took')
    await store.consumeRate(reference, 3, 60_000, 1)
    compare((await limits(store)([step]))[0]!, await store.consumeRate(reference, 3, 60_000, 1), 'the refused step')
  }),
  check('counts a quota in its period only: whole again in the next, and never counted across', async (store) => {
    const key = freshLimitKey()
    const end = Date.now() + 500
    const first = quota(2, 1, key, end - HOUR_MS, end)
    assert.equal((await limits(store)([first]))[0]!.remaining, 1)
    assert.equal((await limits(store)([first]))[0]!.remaining, 0)
    const refused = (await limits(store)([first]))[0]!
    assert.equal(refused.allowed, false, 'a third unit does not fit')
    assert.ok(refused.retryAfterMs <= 600, `retryAfterMs ${refused.retryAfterMs} is the time to the period's end`)
    // (A machine too busy to get here before the period's end finds 0 left to wait.)
    if (Date.now() < end - 100) assert.ok(refused.retryAfterMs > 0, 'the refusal says how long until the period ends')
    assert.equal(refused.resetMs, refused.retryAfterMs, 'the whole quota is back at the period end')
    await sleep(Math.max(0, end - Date.now()) + 15)
    const next = quota(2, 1, key, first.periodEnd, first.periodEnd + HOUR_MS)
    const again = (await limits(store)([next]))[0]!
    assert.equal(again.allowed, true, 'the next period starts whole')
    assert.equal(again.remaining, 1, 'nothing of the last period counts in the next')
    assert.ok(again.resetMs > HOUR_MS - 5_000 && again.resetMs <= HOUR_MS, `resetMs ${again.resetMs} is the time to the new period's end`)
    // An instance whose clock lags still sends the old period: it counts in the newer counter.
    const late = (await limits(store)([first]))[0]!
    assert.equal(late.remaining, 0, 'a step of the earlier period counts in the later one, never starting the earlier again')
    assert.equal((await limits(store)([next]))[0]!.allowed, false, 'the later period holds both units')
  }),
  check('reports a quota as a read: 0 to reset while unused, the time to the period end once used', async (store) => {
    const q = quota(3)
    const fresh = (await limits(store)([read(q)]))[0]!
    assert.deepEqual(fresh, { allowed: true, remaining: 3, resetMs: 0, retryAfterMs: 0 })
    const used = (await limits(store)([q]))[0]!
    const toEnd = q.periodEnd - Date.now()
    assert.ok(Math.abs(used.resetMs - toEnd) <= 1_000, `resetMs ${used.resetMs} is the time to the period's end (${toEnd})`)
    assert.equal(used.retryAfterMs, 0, 'units are left')
  }),
  check('reads every limit without consuming when the costs are 0', async (store) => {
    const steps = [rate(3), quota(3)]
    assert.deepEqual(await remaining(store, steps), [3, 3])
    await limits(store)(steps)
    assert.deepEqual(await remaining(store, steps), [2, 2])
    assert.deepEqual(await remaining(store, steps), [2, 2])
  }),
  check('consumes the cost asked for, and refuses a step that does not fit it without consuming', async (store) => {
    const [r, q] = [rate(5, 3), quota(5, 3)]
    assert.deepEqual((await limits(store)([r, q])).map((x) => x.remaining), [2, 2])
    assert.deepEqual((await limits(store)([r, q])).map((x) => x.allowed), [false, false])
    const rest = await limits(store)([{ ...r, cost: 2 }, { ...q, cost: 2 }])
    assert.deepEqual(rest.map((x) => [x.allowed, x.remaining]), [[true, 0], [true, 0]], 'the refused steps of 3 consumed nothing')
  }),
  check('lets exactly as many through as the tightest limit when 50 calls run at once, moving the others by that many', async (store) => {
    // Hour-long windows: no unit comes back while the calls run, however busy the machine.
    for (const [tight, loose] of [[quota(10), rate(20, 1, freshLimitKey(), HOUR_MS)], [rate(10, 1, freshLimitKey(), HOUR_MS), quota(20)]] as const) {
      // Half the calls name the limits in the other order: a store must not deadlock on it.
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => limits(store)(i % 2 === 0 ? [tight, loose] : [loose, tight])))
      const passed = results.filter((r) => r.every((x) => x.allowed))
      assert.equal(passed.length, 10, `calls that passed with the ${tight.kind} of 10 tightest`)
      assert.equal(results.filter((r) => r.some((x) => !x.allowed)).length, 40, 'the others were refused')
      assert.deepEqual(await remaining(store, [loose]), [10], `the ${loose.kind} of 20 moved by exactly the 10 that passed`)
    }
  }),
  check('forgets a quota on reset', async (store) => {
    const q = quota(1)
    await limits(store)([q])
    assert.equal((await limits(store)([q]))[0]!.allowed, false)
    await store.resetRate(q.key)
    assert.equal((await limits(store)([q]))[0]!.allowed, true)
  }),
]
