/**
 * Several limits of one request, decided all or nothing: the arithmetic every store's
 * `consumeLimits` shares. A limit is a GCRA rate (exactly {@link gcraStep}) or a calendar
 * quota: a counter of the period [periodStart, periodEnd) that is whole again at
 * periodEnd. MemoryStore calls {@link limitsStep}; Redis and SQL stores run the same
 * arithmetic in one script or function, on the server's clock, and may use it to turn what
 * they read into the answer.
 *
 * A quota's stored value carries its period: `{ periodStart, periodEnd, used }` under the
 * limit's key (one value per key, overwritten by the next period's, so `resetRate` forgets
 * it as it forgets a rate). A step counts against the stored counter when the counter's
 * period started at or after the step's, and from zero when it started before: a count of
 * an earlier period never counts in a later one. (A counter of a later period than the
 * step's is one written by an instance whose clock is ahead at the turn of a period; the
 * step counts in it rather than starting the old period again, so no period ever holds more
 * than the limit.)
 *
 * @see docs/reference/store-contract.md#several-limits-at-once-consumelimits
 */
import { gcraStep, type GcraOutcome, type RateResult } from './gcra.js'

/** A GCRA rate limit, exactly as `consumeRate(key, limit, windowMs, cost)` takes it. */
export interface RateLimitStep {
  readonly kind: 'rate'
  readonly key: string
  readonly limit: number
  readonly windowMs: number
  /** Units to consume; 0 reads without consuming. */
  readonly cost: number
}

/**
 * A calendar quota: at most `limit` units in the period [periodStart, periodEnd) (epoch ms,
 * computed by the gate for a day or a month in a time zone: {@link "open-data-gate"!periodBounds | periodBounds}).
 */
export interface QuotaLimitStep {
  readonly kind: 'quota'
  readonly key: string
  readonly limit: number
  readonly periodStart: number
  readonly periodEnd: number
  /** Units to consume; 0 reads without consuming. */
  readonly cost: number
}

/** One limit of a request, as `consumeLimits` takes it. */
export type LimitStep = RateLimitStep | QuotaLimitStep

/** One limit of an application, named, with the step that reads it (cost 0): what its owner is shown of it. */
export interface LimitRead {
  readonly name: string
  /** Counted but not refusing (a shadow limit before its `enforceFrom`). */
  readonly shadow: boolean
  readonly step: LimitStep
}

/**
 * What one limit decided; a quota's `resetMs` is the time to its period's end (0 while
 * nothing is used), and so is its `retryAfterMs` once it is used up.
 */
export type LimitResult = RateResult

/** A quota's stored counter: its period, and the units used in it. */
export interface QuotaCounter {
  readonly periodStart: number
  readonly periodEnd: number
  readonly used: number
}

/** The outcome of {@link quotaStep}: the decision and the counter to store (if any). */
export interface QuotaOutcome extends RateResult {
  /** The counter to store, or `undefined` when nothing changes. */
  readonly counter: QuotaCounter | undefined
  /** How long the stored counter must live, in ms (see {@link QUOTA_KEEP_MS}). */
  readonly ttlMs: number
}

/**
 * A quota counter lives until its period's end, and at least this long after it is
 * written: a store whose clock runs ahead of the gate's must not drop the counter of a
 * period the gate still counts in. (Keeping it longer is harmless: a later period's step
 * starts from zero whatever is stored.)
 */
export const QUOTA_KEEP_MS = 60_000

/**
 * One quota step.
 * @param stored the key's stored counter, `undefined` for a fresh key
 * @param nowUs the store's clock in µs
 */
export function quotaStep(stored: QuotaCounter | undefined, nowUs: number, limit: number, periodStart: number, periodEnd: number, cost = 1): QuotaOutcome {
  // The counter's period when it is this one or a later one; else the step's, from zero.
  const current = stored !== undefined && stored.periodStart >= periodStart ? stored : undefined
  const start = current?.periodStart ?? periodStart
  const end = current?.periodEnd ?? periodEnd
  const used = current?.used ?? 0
  const toEnd = usToMs(end * 1000 - nowUs)
  if (used + cost > limit) return { allowed: false, remaining: 0, resetMs: toEnd, retryAfterMs: toEnd, counter: undefined, ttlMs: 0 }
  const after = used + cost
  const remaining = limit - after
  return {
    allowed: true,
    remaining,
    resetMs: after > 0 ? toEnd : 0,
    retryAfterMs: remaining > 0 ? 0 : toEnd,
    counter: cost === 0 ? undefined : { periodStart: start, periodEnd: end, used: after },
    ttlMs: Math.max(toEnd, QUOTA_KEEP_MS),
  }
}

/** What a store keeps per limit: a rate's arrival time in µs, a quota's counter, or nothing (`undefined`). */
export type LimitState = number | QuotaCounter | undefined

/** The outcome of {@link limitsStep}. */
export interface LimitsOutcome {
  /** Whether every step allowed, so that every step is taken. */
  readonly taken: boolean
  /** One result per step, in the order of the steps. */
  readonly results: LimitResult[]
  /** When taken: per step, the rate's new arrival time or the quota's new counter to store (`undefined`: leave it). Empty when not taken. */
  readonly writes: ReadonlyArray<{ readonly state: number | QuotaCounter; readonly ttlMs: number } | undefined>
}

/**
 * Several steps, all or nothing. When every step allows, every one is taken, and each
 * result is what its own step answers. When any refuses, none is taken: a refused step
 * answers its refusal, and a step that would have fitted answers as a read (cost 0) of its
 * limit as it is, with `allowed: true`.
 * @param stored each step's stored state, in the order of the steps (a rate's arrival time, a quota's counter)
 */
export function limitsStep(stored: readonly LimitState[], nowUs: number, steps: readonly LimitStep[]): LimitsOutcome {
  const outcomes = steps.map((step, i) => one(step, stored[i], nowUs, step.cost))
  if (outcomes.every((outcome) => outcome.allowed)) {
    return {
      taken: true,
      results: outcomes.map(resultOf),
      writes: outcomes.map((outcome) => {
        const state = 'tat' in outcome ? outcome.tat : outcome.counter
        return state === undefined ? undefined : { state, ttlMs: outcome.ttlMs }
      }),
    }
  }
  return {
    taken: false,
    results: outcomes.map((outcome, i) => (outcome.allowed ? resultOf(one(steps[i]!, stored[i], nowUs, 0)) : resultOf(outcome))),
    writes: [],
  }
}

function one(step: LimitStep, stored: LimitState, nowUs: number, cost: number): GcraOutcome | QuotaOutcome {
  if (step.kind === 'rate') return gcraStep(typeof stored === 'number' ? stored : undefined, nowUs, step.limit, step.windowMs, cost)
  return quotaStep(typeof stored === 'object' ? stored : undefined, nowUs, step.limit, step.periodStart, step.periodEnd, cost)
}

function resultOf(outcome: RateResult): LimitResult {
  return { allowed: outcome.allowed, remaining: outcome.remaining, resetMs: outcome.resetMs, retryAfterMs: outcome.retryAfterMs }
}

/**
 * Why `steps` cannot be decided, or `undefined`: a step of an unknown kind, a limit that is
 * not a positive integer, a cost that is not a non-negative integer, a window or a period
 * that is empty, or two steps on one key (each limit of a request has a key of its own).
 */
export function invalidLimitSteps(steps: readonly LimitStep[]): string | undefined {
  if (!Array.isArray(steps)) return 'steps must be an array'
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i]!
    const at = `step ${i} (${typeof step?.key === 'string' ? JSON.stringify(step.key) : 'no key'})`
    if (typeof step?.key !== 'string' || step.key === '') return `${at}: key must be a non-empty string`
    if (!Number.isSafeInteger(step.limit) || step.limit < 1) return `${at}: limit must be a positive integer`
    if (!Number.isSafeInteger(step.cost) || step.cost < 0) return `${at}: cost must be a non-negative integer`
    if (step.kind === 'rate') {
      if (!Number.isSafeInteger(step.windowMs) || step.windowMs < 1) return `${at}: windowMs must be a positive integer`
    } else if (step.kind === 'quota') {
      if (!Number.isSafeInteger(step.periodStart) || !Number.isSafeInteger(step.periodEnd) || step.periodEnd <= step.periodStart) return `${at}: periodStart and periodEnd must be integers, periodStart < periodEnd`
    } else {
      return `${at}: kind must be 'rate' or 'quota'`
    }
    for (let j = 0; j < i; j++) if (steps[j]!.key === step.key) return `${at}: two steps on one key`
  }
  return undefined
}

function usToMs(us: number): number {
  return us <= 0 ? 0 : Math.ceil(us / 1000)
}
