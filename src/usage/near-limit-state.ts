/**
 * What an application's owner is shown of its limits: which of them it is near now
 * (`gate.applications.nearLimit`, the `nearLimit` field of `GET /api/applications`).
 *
 * Read, never kept: each limit of the application's plan is read from the rate store with
 * a step of cost 0 (one `consumeLimits` call for a plan, one `consumeRate` for a single
 * limit), and compared with the `nearLimit.thresholds` as the alerts compare a request's
 * result (./near-limit.ts). So every instance sharing the store shows the same state, on
 * every store, and the state is exact now: a budget that came back is no longer shown.
 * When the limit was reported near that threshold in the current window (its alert, once
 * across instances), when that was is read from the one unit the reporting instance took
 * of `near-limit:<app token>:<limit>:<percent>:<window>`: a key of limit 1 for the window, taken
 * at that moment, so its state tells when.
 * @see docs/guides/plans.md "What the owner sees"
 */
import type { LimitRead, LimitResult } from '../limits/limit-steps.js'
import { nearLimitRateKey } from '../limits/rate-keys.js'
import { alertWindow } from './near-limit.js'
import type { ApplicationRecord, RateStore } from '../store/store.js'

/** One limit an application is near: what `gate.applications.nearLimit` gives. Times are epoch ms. */
export interface NearLimit {
  /** The limit's name, as `RateLimit-Policy` names it (`app` for a single limit). */
  readonly name: string
  /** The highest of `nearLimit.thresholds` its use has reached: 0.8 for 80%, 1 when none is left. */
  readonly threshold: number
  /** Requests per window, or per period. */
  readonly limit: number
  /** Requests still allowed now. */
  readonly remaining: number
  /** The rolling window, in ms; for a quota, its current period's length. */
  readonly windowMs: number
  /** A quota's current period: the whole budget comes back at `end`. `null` for a rolling window. */
  readonly period: { readonly start: number; readonly end: number } | null
  /** A shadow limit: it would refuse, but only counts (until its `enforceFrom`). */
  readonly shadow: boolean
  /**
   * When the gate reported the application at this threshold of this limit in the current
   * window (its `nearLimit` alert), or `null` when it has not: the limit reached it in an
   * earlier window and no request has been counted since, or it is a shadow limit (never
   * reported).
   */
  readonly since: number | null
}

/** The limits of an application and how to read them: the gate's throttle. */
export type LimitReads = (application: Pick<ApplicationRecord, 'appToken' | 'plan' | 'limit'>, now: number) => LimitRead[]

/** Reads which limits an application is near. */
export class NearLimitReader {
  readonly #thresholds: readonly number[]
  readonly #rates: Pick<RateStore, 'consumeRate' | 'consumeLimits'>
  readonly #limitReads: LimitReads

  /**
   * @param thresholds `nearLimit.thresholds`, ascending
   * @param rates the guarded rate store
   */
  constructor(thresholds: readonly number[], rates: Pick<RateStore, 'consumeRate' | 'consumeLimits'>, limitReads: LimitReads) {
    this.#thresholds = thresholds
    this.#rates = rates
    this.#limitReads = limitReads
  }

  /**
   * The limits `application` is at or past a threshold of now, closest to refusing first;
   * `[]` when none. Only reads the store.
   * @throws what the rate store throws
   */
  async of(application: Pick<ApplicationRecord, 'appToken' | 'plan' | 'limit'>): Promise<NearLimit[]> {
    const now = Date.now()
    const reads = this.#limitReads(application, now)
    if (reads.length === 0) return []
    const results = await this.#read(reads)
    const near: Array<Omit<NearLimit, 'since'>> = []
    for (let i = 0; i < reads.length; i++) {
      const { name, shadow, step } = reads[i] as LimitRead
      const remaining = (results[i] as LimitResult).remaining
      const threshold = this.#crossed(step.limit - remaining, step.limit)
      if (threshold === undefined) continue
      const quota = step.kind === 'quota'
      const windowMs = quota ? step.periodEnd - step.periodStart : step.windowMs
      near.push({ name, threshold, limit: step.limit, remaining, windowMs, period: quota ? { start: step.periodStart, end: step.periodEnd } : null, shadow })
    }
    near.sort((a, b) => (b.limit - b.remaining) / b.limit - (a.limit - a.remaining) / a.limit)
    return Promise.all(near.map(async (limit) => ({ ...limit, since: limit.shadow ? null : await this.#reported(application.appToken, limit, now) })))
  }

  /** The highest threshold `used` of `limit` has reached, as the alerts count it; `undefined` below the lowest. */
  #crossed(used: number, limit: number): number | undefined {
    let crossed: number | undefined
    for (const threshold of this.#thresholds) {
      if (used < limit * threshold) break
      crossed = threshold
    }
    return crossed
  }

  /** Each limit's state now, in one store call. */
  async #read(reads: readonly LimitRead[]): Promise<readonly LimitResult[]> {
    const only = reads[0] as LimitRead
    if (reads.length === 1 && only.step.kind === 'rate') return [await this.#rates.consumeRate(only.step.key, only.step.limit, only.step.windowMs, 0)]
    const consumeLimits = this.#rates.consumeLimits
    if (consumeLimits === undefined) throw new TypeError('open-data-gate: the rate store has no consumeLimits, which reads a plan of several limits')
    return consumeLimits.call(this.#rates, reads.map((read) => read.step))
  }

  /** When the alert of `threshold` in the current window was taken, or `null`: the claim key read without taking it. */
  async #reported(appToken: string, { name, threshold, windowMs, period }: Omit<NearLimit, 'since'>, now: number): Promise<number | null> {
    const window = alertWindow(windowMs, period === null ? null : period.start, now)
    const claim = await this.#rates.consumeRate(nearLimitRateKey(appToken, name, threshold, window), 1, windowMs, 0)
    // Taken: the key's one unit comes back a window after it was taken.
    return claim.remaining === 0 ? now + claim.resetMs - windowMs : null
  }
}
