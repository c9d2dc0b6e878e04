/**
 * Whether a store is answering, as the gate sees it through its guard: an outage is one
 * `storeError` event when it starts and one `storeRecovered` when the store answers again,
 * however many requests fail in between.
 *
 * While a store is down, at most one call at a time goes to it (the probe); the others fail
 * at once instead of each waiting for the timeout, so a paused server costs one timeout per
 * probe, not one per request. The first call that succeeds ends the outage.
 *
 * After a call fails, no probe goes out for as long as that call took: a request whose call
 * just waited out the timeout gets its next call answered at once, instead of becoming the
 * next probe and waiting a second time (the soak found requests with three store calls in a
 * row that waited three timeouts on a paused Redis). A call that fails at once (a refused
 * connection) costs no wait, so the next probe may go at once too.
 */
import type { Emit, StoreErrorEvent } from '../events.js'

/** Which store of the gate: `records` (`store`) or `rates` (`rateStore`, when it is a separate one). */
export type StoreRole = 'records' | 'rates' | 'records+rates'

export class StoreHealth {
  readonly #role: StoreRole
  readonly #emit: Emit
  readonly #outcome: (operation: string) => StoreErrorEvent['outcome']
  #downSince: number | null = null
  #failures = 0
  #probing = false
  /** While down: no probe before this time (ms, Date.now()). */
  #probeAfter = 0

  constructor(role: StoreRole, emit: Emit, outcome: (operation: string) => StoreErrorEvent['outcome']) {
    this.#role = role
    this.#emit = emit
    this.#outcome = outcome
  }

  /** The store failed its last call and has not answered since. */
  get down(): boolean {
    return this.#downSince !== null
  }

  /**
   * Whether a call may go to the store now: always while it is up; while it is down, only
   * when no other call is already finding out whether it is back.
   */
  admit(): boolean {
    if (this.#downSince === null) return true
    if (this.#probing || Date.now() < this.#probeAfter) return false
    this.#probing = true
    return true
  }

  /** A call was not tried because the store is down and another call is probing it. */
  refused(): void {
    this.#failures++
  }

  /** @param elapsedMs how long the failed call took */
  failed(operation: string, error: unknown, elapsedMs = 0): void {
    this.#probing = false
    this.#failures++
    this.#probeAfter = Math.max(this.#probeAfter, Date.now() + elapsedMs)
    if (this.#downSince !== null) return
    this.#downSince = Date.now()
    this.#failures = 1
    this.#emit('storeError', { operation, error, outcome: this.#outcome(operation), store: this.#role })
  }

  succeeded(): void {
    this.#probing = false
    if (this.#downSince === null) return
    const downMs = Date.now() - this.#downSince
    this.#downSince = null
    this.#emit('storeRecovered', { store: this.#role, downMs, failedCalls: this.#failures })
  }
}
