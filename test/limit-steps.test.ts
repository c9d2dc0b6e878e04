import { describe, expect, it } from 'vitest'
import { gcraStep, limitsStep, quotaStep, QUOTA_KEEP_MS, type LimitStep } from '../src/index.js'
import { invalidLimitSteps } from '../src/limits/limit-steps.js'
import { MemoryStore } from '../src/store/memory/store.js'

const NOW_MS = 1_800_000_000_000
const NOW = NOW_MS * 1000
const HOUR = 3_600_000
const day: LimitStep = { kind: 'quota', key: 'd', limit: 2, periodStart: NOW_MS - HOUR, periodEnd: NOW_MS + HOUR, cost: 1 }
const minute: LimitStep = { kind: 'rate', key: 'm', limit: 3, windowMs: 60_000, cost: 1 }

describe('quotaStep', () => {
  it('counts up to the limit, then refuses until the period ends', () => {
    const one = quotaStep(undefined, NOW, 2, NOW_MS - HOUR, NOW_MS + HOUR)
    expect(one).toMatchObject({ allowed: true, remaining: 1, resetMs: HOUR, retryAfterMs: 0, counter: { periodStart: NOW_MS - HOUR, periodEnd: NOW_MS + HOUR, used: 1 } })
    const two = quotaStep(one.counter, NOW, 2, NOW_MS - HOUR, NOW_MS + HOUR)
    expect(two).toMatchObject({ allowed: true, remaining: 0, retryAfterMs: HOUR })
    expect(quotaStep(two.counter, NOW, 2, NOW_MS - HOUR, NOW_MS + HOUR)).toMatchObject({ allowed: false, remaining: 0, resetMs: HOUR, retryAfterMs: HOUR, counter: undefined })
  })

  it('starts a later period from zero, and counts an earlier period in the stored later one', () => {
    const old = { periodStart: NOW_MS - 2 * HOUR, periodEnd: NOW_MS - HOUR, used: 2 }
    expect(quotaStep(old, NOW, 2, NOW_MS - HOUR, NOW_MS + HOUR)).toMatchObject({ allowed: true, remaining: 1 })
    const later = { periodStart: NOW_MS, periodEnd: NOW_MS + HOUR, used: 2 }
    expect(quotaStep(later, NOW, 2, NOW_MS - HOUR, NOW_MS)).toMatchObject({ allowed: false, resetMs: HOUR })
  })

  it('keeps a counter until its period ends, and at least QUOTA_KEEP_MS', () => {
    expect(quotaStep(undefined, NOW, 2, NOW_MS - HOUR, NOW_MS + HOUR).ttlMs).toBe(HOUR)
    expect(quotaStep(undefined, NOW, 2, NOW_MS - HOUR, NOW_MS + 10).ttlMs).toBe(QUOTA_KEEP_MS)
  })
})

describe('limitsStep', () => {
  it('takes every step when all fit, each as its own step answers', () => {
    const out = limitsStep([undefined, undefined], NOW, [minute, day])
    expect(out.taken).toBe(true)
    expect(out.results).toEqual([
      { allowed: true, remaining: 2, resetMs: 20_000, retryAfterMs: 0 },
      { allowed: true, remaining: 1, resetMs: HOUR, retryAfterMs: 0 },
    ])
    expect(out.writes[0]?.state).toBe(gcraStep(undefined, NOW, 3, 60_000).tat)
  })

  it('takes none when one refuses, the others answering as a read of their limit', () => {
    const used = { periodStart: NOW_MS - HOUR, periodEnd: NOW_MS + HOUR, used: 2 }
    const out = limitsStep([undefined, used], NOW, [minute, day])
    expect(out.taken).toBe(false)
    expect(out.writes).toEqual([])
    expect(out.results).toEqual([
      { allowed: true, remaining: 3, resetMs: 0, retryAfterMs: 0 },
      { allowed: false, remaining: 0, resetMs: HOUR, retryAfterMs: HOUR },
    ])
  })
})

describe('invalidLimitSteps', () => {
  it('names the step that cannot be decided', () => {
    expect(invalidLimitSteps([minute, day])).toBeUndefined()
    expect(invalidLimitSteps([minute, { ...day, key: 'm' }])).toMatch(/step 1 \("m"\): two steps on one key/)
    expect(invalidLimitSteps([{ ...day, periodEnd: day.periodStart }])).toMatch(/periodStart < periodEnd/)
    expect(invalidLimitSteps([{ ...minute, limit: 0 }])).toMatch(/limit must be a positive integer/)
    expect(invalidLimitSteps([{ ...minute, kind: 'window' } as never])).toMatch(/kind must be 'rate' or 'quota'/)
  })

  it('is what MemoryStore throws for, before it counts anything', () => {
    const store = new MemoryStore({ clock: () => NOW_MS })
    expect(() => store.consumeLimits([minute, { ...minute }])).toThrow(TypeError)
    expect(store.consumeLimits([minute])[0]?.remaining).toBe(2)
  })
})
