/**
 * Local-first counting (`throttle.local`, src/config/local-counting.ts): this process's
 * leases of hot applications' budgets. A lease is a share of a rate key's budget the store
 * gave this process in one GCRA step of cost = the lease's size; its units are spent here,
 * one per request, until none is left or it expires (`ttlMs` after it was asked for). Then
 * the next request takes another, and requests that come meanwhile wait for that one.
 *
 * The size adapts to what this process spends: 1 at first (a request costs the store what
 * it costs without a lease), doubled each time a lease is spent within half its time, up
 * to `units`; a lease that expires with units left makes the next one the size of what was
 * spent. A cold application thus costs the store a command per request and wastes nothing;
 * a hot one a command per `units` requests.
 *
 * A lease the store refuses (fewer units left than asked for) is asked for again at once
 * with the units the refusal says are left, if any; refused again (or none left), this
 * process's requests for that key are refused until the lease would fit (`retryAfterMs`):
 * a flood past the limit costs the store at most two commands per instance per refusal,
 * not one per request.
 *
 * Why at most min(N × L, ⌈T / I⌉) more than without leases, in any interval (N instances,
 * L = `units`, T = `ttlMs`, I = windowMs / limit): a unit is spent only between its lease's
 * grant in the store and `ttlMs` after the lease was asked for, so what is admitted in an
 * interval was granted in it or in the `ttlMs` before it (GCRA grants at most limit + t / I
 * in any t); and what was granted before the interval and is spent in it is at most what
 * the instances held unspent when it began, at most L each (one lease per key at a time).
 * docs/guides/throttling.md "Local-first counting" says it in full.
 */
import { LRUCache } from 'lru-cache'
import { emissionInterval, type RateResult } from '../limits/gcra.js'
import type { Awaitable } from '../store/store.js'
import { isPromiseLike } from '../util/awaitable.js'

/** A result decided from a lease, marked so that the verdict names its source. */
export type LeasedRate = RateResult & { readonly leased: true }

/** What the leases are made of. */
export interface LeaseParts {
  /** L: the largest lease, in units (requests). */
  readonly units: number
  /** T: how long a lease may be spent, in ms from when it was asked for. */
  readonly ttlMs: number
  /** Takes `units` of a key's budget: one GCRA step of that cost in the store (it may throw or reject: the store failed). */
  readonly take: (key: string, limit: number, windowMs: number, units: number) => Awaitable<RateResult>
  /** A monotonic clock in ms. Default `performance.now`. */
  readonly now?: () => number
}

/** One key's lease in this process. */
interface Lease {
  limit: number
  windowMs: number
  /** Units not spent yet. */
  left: number
  /** Units spent of the current lease. */
  spent: number
  /** The size of the current lease, or of the next one once it is spent or expired. */
  next: number
  /** Until when (this process's clock) the units may be spent. */
  expiresAt: number
  /** The store's answer to the current lease, and when it came. */
  granted: RateResult | undefined
  grantedAt: number
  /** A refused lease: until when requests are refused here, and the store's answer. */
  refusedUntil: number
  refusal: RateResult | undefined
  refusedAt: number
  /** The lease being taken, which requests that come meanwhile wait for. */
  pending: Promise<void> | undefined
}

/** Keys whose lease a process keeps, at most: a key forgotten drops its unspent units (counted, never spent). */
const MAX_LEASES = 10_000

export class Leases {
  readonly #units: number
  readonly #ttlMs: number
  readonly #take: LeaseParts['take']
  readonly #now: () => number
  readonly #leases = new LRUCache<string, Lease>({ max: MAX_LEASES })

  constructor(parts: LeaseParts) {
    this.#units = parts.units
    this.#ttlMs = parts.ttlMs
    this.#take = parts.take
    this.#now = parts.now ?? (() => performance.now())
  }

  /**
   * Spends a unit of `key`'s lease for one request: at once while the lease lasts, after a
   * store call when a new one must be taken. A refusal is a result (`allowed: false`).
   * @throws what the store's step throws (the promise rejects with it): no lease was had
   */
  spend(key: string, limit: number, windowMs: number): Awaitable<LeasedRate> {
    let lease = this.#leases.get(key)
    if (lease === undefined) {
      lease = { limit, windowMs, left: 0, spent: 0, next: 1, expiresAt: 0, granted: undefined, grantedAt: 0, refusedUntil: 0, refusal: undefined, refusedAt: 0, pending: undefined }
      this.#leases.set(key, lease)
    } else if (lease.limit !== limit || lease.windowMs !== windowMs) {
      // The application's limit changed: what was leased under the old one is dropped.
      lease.limit = limit
      lease.windowMs = windowMs
      lease.left = 0
      lease.refusedUntil = 0
      lease.next = 1
    }
    return this.#spend(lease, key)
  }

  /** Drops a key's lease (its unspent units were counted in the store and are not spent). */
  forget(key: string): void {
    this.#leases.delete(key)
  }

  /** The units this process holds unspent for `key` (0 when its lease expired). */
  held(key: string): number {
    const lease = this.#leases.get(key)
    return lease === undefined || this.#now() >= lease.expiresAt ? 0 : lease.left
  }

  #spend(lease: Lease, key: string): Awaitable<LeasedRate> {
    const now = this.#now()
    if (lease.left > 0 && now < lease.expiresAt) {
      lease.left--
      lease.spent++
      return this.#passed(lease, now)
    }
    if (now < lease.refusedUntil) return this.#refused(lease, now)
    const pending = lease.pending
    if (pending !== undefined) return pending.then(() => this.#spend(lease, key))
    // Spent within half its time: twice the size (it would have lasted); spent later: the
    // same; expired with units left: what was spent.
    if (now < lease.expiresAt - this.#ttlMs / 2) lease.next = 2 * lease.next
    else if (now >= lease.expiresAt && lease.left > 0) lease.next = Math.max(1, lease.spent)
    lease.left = 0
    lease.expiresAt = 0
    const size = (lease.next = Math.min(lease.next, this.#cap(lease)))
    return this.#lease(lease, key, size, now, true)
  }

  /**
   * Takes a lease of `size`, then spends from it. Refused, and `fit`: once more with the
   * units the refusal says are left, when there are some (a second command, so that a
   * budget is not left unused for want of a whole lease).
   */
  #lease(lease: Lease, key: string, size: number, askedAt: number, fit: boolean): Awaitable<LeasedRate> {
    const taken = this.#take(key, lease.limit, lease.windowMs, size)
    if (!isPromiseLike(taken)) {
      const smaller = this.#took(lease, size, askedAt, taken, fit)
      return smaller === 0 ? this.#spend(lease, key) : this.#lease(lease, key, smaller, this.#now(), false)
    }
    let smaller = 0
    const promise = Promise.resolve(taken).then(
      (result) => {
        smaller = this.#took(lease, size, askedAt, result, fit)
        if (smaller === 0) lease.pending = undefined
      },
      (error: unknown) => {
        lease.pending = undefined
        throw error
      },
    )
    lease.pending = promise
    return promise.then(() => {
      if (smaller === 0) return this.#spend(lease, key)
      lease.pending = undefined
      return this.#lease(lease, key, smaller, this.#now(), false)
    })
  }

  /** A lease is at most L, and at most the limit (a larger step never fits). */
  #cap(lease: Lease): number {
    return Math.min(this.#units, lease.limit)
  }

  /**
   * The store's answer to a lease asked for at `askedAt`.
   * @returns the size of a smaller lease to ask for at once (refused, `fit`, and some units left), or 0
   */
  #took(lease: Lease, size: number, askedAt: number, result: RateResult, fit: boolean): number {
    const now = this.#now()
    if (result.allowed) {
      lease.left = size
      lease.spent = 0
      lease.expiresAt = askedAt + this.#ttlMs
      lease.granted = result
      lease.grantedAt = now
      lease.refusedUntil = 0
      return 0
    }
    const left = fit ? unitsLeft(result, lease.limit, lease.windowMs) : 0
    if (left >= 1 && left < size) return left
    lease.left = 0
    lease.refusedUntil = now + Math.max(1, result.retryAfterMs)
    lease.refusal = result
    lease.refusedAt = now
    return 0
  }

  /**
   * A request let through by the lease. `remaining`: what the store had left once it gave
   * the lease, plus the units this process has not spent yet (other instances' requests
   * since are not in it); `resetMs`: the store's, less the time since.
   */
  #passed(lease: Lease, now: number): LeasedRate {
    const granted = lease.granted as RateResult
    const elapsed = now - lease.grantedAt
    return { allowed: true, remaining: Math.min(lease.limit, granted.remaining + lease.left), resetMs: Math.max(0, Math.ceil(granted.resetMs - elapsed)), retryAfterMs: 0, leased: true }
  }

  #refused(lease: Lease, now: number): LeasedRate {
    const refusal = lease.refusal as RateResult
    const elapsed = now - lease.refusedAt
    return { allowed: false, remaining: 0, resetMs: Math.max(0, Math.ceil(refusal.resetMs - elapsed)), retryAfterMs: Math.max(1, Math.ceil(lease.refusedUntil - now)), leased: true }
  }
}

/**
 * The units a refused step says are left, at least: the budget less the time its arrival
 * time is ahead (`resetMs`, rounded up to a ms, so this never counts a unit that is not there).
 */
function unitsLeft(refusal: RateResult, limit: number, windowMs: number): number {
  const interval = emissionInterval(limit, windowMs)
  return Math.max(0, Math.floor((interval * limit - refusal.resetMs * 1000) / interval))
}
