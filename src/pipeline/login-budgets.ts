/**
 * The failure budgets of password sign-ins, spent through the throttle's rate store:
 * - per username (`login:<username key>`): every attempt spends a unit before scrypt runs,
 *   and a success starts the count again; once spent, further attempts are refused at once.
 * - per client address (`login-ip:<address>`), across all usernames: each failure spends a
 *   unit; once spent, the address gets no answer that depends on a password, and this
 *   process remembers it, so its next attempts cost no store call.
 * - the address's latest failure (`login-ip-last:<address>`): a one-unit key started again
 *   at each failure, which says whether the address has been quiet for a whole window.
 *
 * @see docs/guides/authentication.md "HTTP Basic"; docs/security.md
 */
import { LRUCache } from 'lru-cache'
import { andThen } from '../util/awaitable.js'
import { retryAfterSeconds, ThrottledError } from '../errors.js'
import type { Emit } from '../events.js'
import type { ResolvedConfig } from '../config/options.js'
import type { ClientInfo } from '../http/proxy.js'
import type { Throttle } from './throttle.js'
import type { Awaitable } from '../store/store.js'
import type { RateResult } from '../limits/gcra.js'
import { usernameLookups } from '../rules/usernames.js'
import { loginAddressLastRateKey, loginAddressRateKey, loginRateKey } from '../limits/rate-keys.js'

/** The options these budgets read: `basic.failures` and `basic.addressFailures`. */
export type LoginBudgetOptions = Pick<ResolvedConfig['basic'], 'failures' | 'addressFailures'>

export class LoginBudgets {
  readonly #options: LoginBudgetOptions
  readonly #throttle: Throttle
  readonly #emit: Emit
  /** Addresses seen past their failure budget, and until when (ms). */
  readonly #addressBlockedUntil = new LRUCache<string, number>({ max: 10_000 })

  constructor(options: LoginBudgetOptions, throttle: Throttle, emit: Emit) {
    this.#options = options
    this.#throttle = throttle
    this.#emit = emit
  }

  /** The key of a username's budget: one per account, whatever width or case the name is typed in (RFC 8265). */
  usernameKey(sentUsername: string): string {
    return loginRateKey(usernameLookups(sentUsername).key)
  }

  /** Whether usernames have a budget at all (`basic.failures` is not `false`). */
  get limitsUsernames(): boolean {
    return this.#options.failures !== null
  }

  /**
   * One attempt against the username's budget, in one atomic step, so a burst of guesses
   * cannot all pass a check made before any failure is recorded. Call only when
   * {@link limitsUsernames}.
   * @throws {ThrottledError} when it is spent (which also counts a failure of the address: a refused attempt is still a guess)
   */
  async spendUsernameAttempt(usernameKey: string, address: string, client: ClientInfo): Promise<void> {
    const policy = this.#options.failures
    if (policy === null) return
    const budget = await this.#throttle.consume(usernameKey, policy.limit, policy.windowMs, 1)
    if (budget !== null && !budget.allowed) {
      await this.countAddressFailure(address)
      throw this.#lockedOut(budget.retryAfterMs, client)
    }
  }

  /** A success: the username's count starts again. */
  resetUsername(usernameKey: string): Promise<void> {
    return this.#throttle.reset(usernameKey)
  }

  /** Whether the username's budget is known to be spent (no store call). */
  usernameBlocked(usernameKey: string): boolean {
    return this.#throttle.isBlocked(usernameKey)
  }

  /**
   * Refuses an address this process knows to be past its budget. No store call.
   * @throws {ThrottledError} when it is
   */
  refuseBlockedAddress(address: string, client: ClientInfo): void {
    if (this.#addressBlockedUntil.size === 0) return
    const until = this.#addressBlockedUntil.get(address)
    const blocked = until === undefined ? 0 : Math.max(0, until - Date.now())
    if (blocked > 0) throw this.#addressLockedOut(blocked, client)
  }

  /**
   * Reads the address's budget in the store (without spending), once its turn in the hash
   * queue has come: one address has one hash running at a time, so a burst from it cannot
   * pass a stale reading.
   * @throws {ThrottledError} when it has no room
   */
  async refuseSpentAddress(address: string, client: ClientInfo): Promise<void> {
    const policy = this.#options.addressFailures
    if (policy === null) return
    const spentMs = this.#noteAddress(address, await this.#throttle.consume(loginAddressRateKey(address), policy.limit, policy.windowMs, 0))
    if (spentMs > 0) throw this.#addressLockedOut(spentMs, client)
  }

  /**
   * One failed password attempt from the address: a unit of its budget, and the time of its
   * latest failure (a one-unit key started again, so it is spent until a whole window after
   * the latest failure: what {@link addressQuiet} reads).
   */
  async countAddressFailure(address: string): Promise<void> {
    const policy = this.#options.addressFailures
    if (policy === null) return
    this.#noteAddress(address, await this.#throttle.consume(loginAddressRateKey(address), policy.limit, policy.windowMs, 1))
    await this.#throttle.reset(loginAddressLastRateKey(address))
    await this.#throttle.consume(loginAddressLastRateKey(address), 1, policy.windowMs, 1)
  }

  /**
   * Whether no password attempt from the address failed for a whole window. Read from the
   * store only for a cache hit on a locked-out username (rare); without an address budget
   * nothing bounds the exemption, so no address is quiet.
   */
  addressQuiet(address: string): Awaitable<boolean> {
    const policy = this.#options.addressFailures
    if (policy === null) return false
    return andThen(this.#throttle.consume(loginAddressLastRateKey(address), 1, policy.windowMs, 0), (result) => result !== null && result.remaining === 1)
  }

  /** Remembers locally that the address has no attempt left, so that its next ones cost no store call. */
  #noteAddress(address: string, result: RateResult | null): number {
    if (result === null || (result.allowed && result.remaining > 0)) return 0
    const waitMs = Math.max(1, result.retryAfterMs)
    this.#addressBlockedUntil.set(address, Date.now() + waitMs, { ttl: waitMs })
    return waitMs
  }

  #addressLockedOut(retryAfterMs: number, client: ClientInfo): ThrottledError {
    const retryAfter = retryAfterSeconds(retryAfterMs)
    this.#emit('throttled', { policy: 'login-address', appToken: undefined, ip: client.ip, requestId: client.requestId, retryAfterMs })
    return new ThrottledError(`Too many failed sign-in attempts from this address; retry in ${retryAfter} seconds`, retryAfterMs)
  }

  #lockedOut(retryAfterMs: number, client: ClientInfo): ThrottledError {
    const retryAfter = retryAfterSeconds(retryAfterMs)
    this.#emit('throttled', { policy: 'login', appToken: undefined, ip: client.ip, requestId: client.requestId, retryAfterMs })
    return new ThrottledError(`Too many sign-in attempts for this username; retry in ${retryAfter} seconds`, retryAfterMs)
  }
}
