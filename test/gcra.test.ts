import { describe, expect, it } from 'vitest'
import { emissionInterval, gcraStep } from '../src/index.js'

/** Runs `n` steps at the same instant and returns what each decided. */
function burst(n: number, limit: number, windowMs: number, nowUs = 1_000_000_000) {
  let tat: number | undefined
  const out = []
  for (let i = 0; i < n; i++) {
    const step = gcraStep(tat, nowUs, limit, windowMs)
    if (step.tat !== undefined) tat = step.tat
    out.push(step)
  }
  return { out, tat }
}

describe('GCRA', () => {
  it('allows exactly the limit at one instant, even when the interval is not a whole number of ms', () => {
    for (const [limit, windowMs] of [[3, 1000], [7, 60_000], [1000, 3_600_000], [1, 1]] as const) {
      const { out } = burst(limit + 1, limit, windowMs)
      expect(out.filter((s) => s.allowed)).toHaveLength(limit)
      expect(out[limit]?.allowed).toBe(false)
    }
  })

  it('allows a fresh key its one request in a three-century window at any microsecond (arrival times past 2^53)', () => {
    // 10^13 ms: now + interval is rounded to an even µs, so taking the window back off must
    // not put the first request's earliest time a µs after now, on one instant in two.
    const windowMs = 10_000_000_000_000
    for (let nowUs = 1_780_000_000_000_000; nowUs < 1_780_000_000_000_008; nowUs++) {
      const first = gcraStep(undefined, nowUs, 1, windowMs)
      expect(first).toMatchObject({ allowed: true, remaining: 0 })
      expect(gcraStep(first.tat, nowUs, 1, windowMs).allowed).toBe(false)
      expect(gcraStep(undefined, nowUs, 3, windowMs)).toMatchObject({ allowed: true, remaining: 2 })
    }
  })

  it('counts remaining down from limit - 1', () => {
    expect(burst(4, 4, 1000).out.map((s) => s.remaining)).toEqual([3, 2, 1, 0])
  })

  it('refuses until exactly one emission interval after the burst, then allows one', () => {
    const now = 5_000_000_000
    const { tat } = burst(10, 10, 10_000, now)
    const refused = gcraStep(tat, now, 10, 10_000)
    expect(refused).toMatchObject({ allowed: false, retryAfterMs: 1000 })
    expect(gcraStep(tat, now + 999_999, 10, 10_000).allowed).toBe(false)
    const later = gcraStep(tat, now + 1_000_000, 10, 10_000)
    expect(later).toMatchObject({ allowed: true, remaining: 0 })
  })

  it('sustains the configured rate and no more', () => {
    // 100 per second for 10 seconds of steady traffic at 200 per second: about 1000 + the burst.
    let tat: number | undefined
    let allowed = 0
    for (let t = 0; t < 10_000_000; t += 5_000) {
      const step = gcraStep(tat, 1_000_000_000 + t, 100, 1000)
      if (step.allowed) {
        allowed++
        tat = step.tat
      }
    }
    expect(allowed).toBeGreaterThanOrEqual(1099)
    expect(allowed).toBeLessThanOrEqual(1100)
  })

  it('gives the time until the full budget is back, and until the next request after the last unit', () => {
    const first = gcraStep(undefined, 0, 4, 1000)
    expect(first).toMatchObject({ resetMs: 250, retryAfterMs: 0, remaining: 3 })
    const { out } = burst(4, 4, 1000, 0)
    expect(out[3]).toMatchObject({ remaining: 0, resetMs: 1000, retryAfterMs: 250 })
  })

  it('reads without changing anything at cost 0', () => {
    const step = gcraStep(undefined, 0, 5, 1000, 0)
    expect(step).toMatchObject({ allowed: true, remaining: 5, tat: undefined })
  })

  it('rounds the emission interval up, so the rate never exceeds the limit', () => {
    expect(emissionInterval(3, 1000)).toBe(333_334)
    expect(emissionInterval(1000, 3_600_000)).toBe(3_600_000)
  })
})
