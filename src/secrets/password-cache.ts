/**
 * Passwords verified recently, so that a script sending Basic credentials on every request
 * pays for scrypt (tens of milliseconds) once rather than each time.
 *
 * An entry is filed under an HMAC of the username and password, keyed with a secret made
 * per process: the cache holds nothing an attacker could test passwords against. It keeps
 * the stored hash that was verified, so a password change ends the entry at once, on every
 * instance (the caller compares it with the user's hash before honouring a hit).
 *
 * @see docs/guides/authentication.md "HTTP Basic"
 */
import { createHmac, randomBytes } from 'node:crypto'
import { LRUCache } from 'lru-cache'

/** A password verified recently. */
export interface VerifiedPassword {
  readonly userId: string
  /** The stored hash it was verified against: a password change ends the entry. */
  readonly passwordHash: string
  /** The username's failure budget (see `src/pipeline/login-budgets.ts`). */
  readonly failureKey: string
  /** The address (key) that verified it: during a lockout, the only one it may answer for, and only while quiet. */
  readonly address: string
}

/** The cache of verified passwords; with a TTL of 0 it remembers nothing. */
export class PasswordCache {
  readonly #secret = randomBytes(32)
  readonly #entries: LRUCache<string, VerifiedPassword> | undefined

  constructor(ttlMs: number) {
    if (ttlMs > 0) this.#entries = new LRUCache({ max: 10_000, ttl: ttlMs })
  }

  /**
   * The key of a username and password. Also the key under which concurrent attempts with
   * the same credentials share one verification.
   * @param sentUsername the username as sent, unnormalised: a warm request never pays for Unicode normalisation
   */
  keyOf(sentUsername: string, password: string): string {
    return createHmac('sha256', this.#secret).update(sentUsername).update('\0').update(password).digest('base64')
  }

  get(key: string): VerifiedPassword | undefined {
    return this.#entries?.get(key)
  }

  remember(key: string, entry: VerifiedPassword): void {
    this.#entries?.set(key, entry)
  }

  forget(key: string): void {
    this.#entries?.delete(key)
  }
}
