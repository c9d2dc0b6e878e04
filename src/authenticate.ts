/**
 * Verifies credentials: HTTP Basic (username and password, or API key id and secret) and
 * OAuth access tokens.
 *
 * scrypt takes tens of milliseconds, so a verified username and password is remembered
 * for a short while under an HMAC of both (keyed with a per-process secret, so the cache
 * holds nothing an attacker could test passwords against). A hit is honoured only while
 * the user's stored hash is the one that was verified: a password change ends it at once,
 * on every instance. Concurrent verifications of the same credentials share one scrypt
 * run. Failed attempts spend a per-username budget; once it is spent, further attempts
 * are refused before any scrypt runs.
 *
 * @see spec "HTTP Basic", "OAuth 2.0" 6-7; performance.md (scrypt cost, single-flight)
 */
import { createHmac, randomBytes } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { andThen } from './awaitable.js'
import type { Credentials } from './authorization-header.js'
import { PlatformError, retryAfterSeconds, ThrottledError } from './errors.js'
import type { Emit } from './events.js'
import type { ResolvedConfig } from './options.js'
import { decoyHash, verifyPassword } from './passwords.js'
import type { ClientInfo } from './proxy.js'
import { NO_SUCH_SECRET, secretMatches, sha256 } from './secrets.js'
import type { AccessTokenRecord, Awaitable, GateStore, UserRecord } from './store/store.js'
import type { Throttle } from './throttle.js'
import { API_KEY_ID, MAX_USERNAME_LENGTH, normalizeUsername } from './users.js'

/** How a request proved who it acts for. */
export type AuthMethod = 'password' | 'api-key' | 'oauth' | 'none'

/** The authenticated user, as `req.gate.user` shows it: the account without its password hash or dates. */
export type GateUser = Pick<UserRecord, 'id' | 'username' | 'screenName' | 'displayName' | 'email' | 'rights'>

/** A successful verification. */
export interface Authentication {
  readonly user: UserRecord
  readonly method: Exclude<AuthMethod, 'none'>
  readonly apiKeyId: string | null
  readonly token: AccessTokenRecord | null
}

/** A password verified recently, remembered under an HMAC of the credentials. */
interface VerifiedPassword {
  readonly userId: string
  /** The stored hash it was verified against: a password change ends the entry. */
  readonly passwordHash: string
  /** The client that verified it, the only one it counts for during a lockout. */
  readonly ip: string
  readonly failureKey: string
}

/**
 * Never store a `lastUsedAt` (an API key's, a grant's) more often than this: it is a write
 * on the hot path. A day, as the platform does: a key used at 9:00 on Monday gets a new
 * value at its first use after 9:00 on Tuesday.
 */
const LAST_USED_RESOLUTION_MS = 86_400_000

export class Authenticator {
  readonly #config: ResolvedConfig
  readonly #store: GateStore
  readonly #throttle: Throttle
  readonly #emit: Emit
  readonly #cacheKey = randomBytes(32)
  readonly #verified: LRUCache<string, VerifiedPassword> | undefined
  readonly #inflight = new Map<string, Promise<{ user: UserRecord | undefined; failureKey: string }>>()
  readonly #lastUsedWritten = new LRUCache<string, number>({ max: 10_000 })
  /** When each user's grant to an application was last known used, by `userId \0 appToken`. */
  readonly #grantUsed = new LRUCache<string, number>({ max: 10_000 })
  #decoy: Promise<string> | undefined

  constructor(config: ResolvedConfig, store: GateStore, throttle: Throttle, emit: Emit) {
    this.#config = config
    this.#store = store
    this.#throttle = throttle
    this.#emit = emit
    if (config.basic.cacheTtlMs > 0) this.#verified = new LRUCache({ max: 10_000, ttl: config.basic.cacheTtlMs })
  }

  /**
   * Verifies credentials sent over a secure connection. Synchronous when the store is
   * and no scrypt run is needed (tokens, API keys, a password verified before).
   * @throws {PlatformError} 401 `invalid_credentials` / `invalid_token`
   * @throws {ThrottledError} 429 when a username's failure budget is spent
   */
  verify(credentials: Credentials, client: ClientInfo): Awaitable<Authentication> {
    if (credentials.kind === 'token') return this.#verifyToken(credentials.token, credentials.scheme, client)
    if (API_KEY_ID.test(credentials.user)) return this.#verifyApiKey(credentials.user, credentials.password, client)
    return this.#verifyPassword(credentials.user, credentials.password, client)
  }

  /** Verifies a username and password from the login page, exactly as Basic credentials are. */
  async verifyLogin(username: string, password: string, client: ClientInfo): Promise<Authentication> {
    return this.#verifyPassword(username, password, client)
  }

  /**
   * Access tokens arrived over an insecure connection: revoke them at once, in the store,
   * so that every instance refuses them from now on.
   */
  async revokeInsecure(tokens: readonly string[], client: ClientInfo): Promise<void> {
    for (const token of tokens) {
      const tokenHash = sha256(token)
      const record = await this.#store.getAccessToken(tokenHash)
      if (record !== undefined && (await this.#store.revokeAccessToken(tokenHash, Date.now()))) {
        this.#emit('tokenRevoked', { reason: 'insecure-transport', userId: record.userId, appToken: record.appToken, ip: client.ip })
      }
    }
  }

  #verifyToken(token: string, scheme: 'oauth' | 'bearer', client: ClientInfo): Awaitable<Authentication> {
    return andThen(this.#store.getAccessToken(sha256(token)), (record) => {
      if (record === undefined || record.revokedAt !== null || record.expiresAt <= Date.now()) throw this.#invalidToken(scheme, client)
      return andThen(this.#store.getUser(record.userId), (user): Authentication => {
        if (user === undefined) throw this.#invalidToken(scheme, client)
        this.#touchGrant(record)
        return { user, method: 'oauth', apiKeyId: null, token: record }
      })
    })
  }

  #verifyApiKey(keyId: string, secret: string, client: ClientInfo): Awaitable<Authentication> {
    return andThen(this.#store.getApiKey(keyId), (record) => {
      // Compared even for an unknown key, so its absence costs the same time.
      const matches = secretMatches(secret, record?.secretHash ?? NO_SUCH_SECRET)
      if (record === undefined || !matches || record.revokedAt !== null) throw this.#invalidKey(client)
      return andThen(this.#store.getUser(record.userId), (user): Authentication => {
        if (user === undefined) throw this.#invalidKey(client)
        this.#touch(keyId, record.lastUsedAt)
        return { user, method: 'api-key', apiKeyId: keyId, token: null }
      })
    })
  }

  #invalidToken(scheme: 'oauth' | 'bearer', client: ClientInfo): PlatformError {
    this.#emit('authenticationFailed', { method: 'oauth', ip: client.ip, username: undefined })
    const challenge = `${scheme === 'oauth' ? 'OAuth' : 'Bearer'} realm="${this.#config.realm}", error="invalid_token"`
    return new PlatformError('invalid_token', 'The access token is invalid, expired or revoked', { headers: { 'www-authenticate': challenge } })
  }

  #invalidKey(client: ClientInfo): PlatformError {
    this.#emit('authenticationFailed', { method: 'api-key', ip: client.ip, username: undefined })
    return this.#invalidCredentials()
  }

  /**
   * @param sentUsername the username as sent: the cache is keyed on it, and a hit loads the
   * user by id, so a warm request never pays for Unicode normalisation
   */
  #verifyPassword(sentUsername: string, password: string, client: ClientInfo): Awaitable<Authentication> {
    const key = createHmac('sha256', this.#cacheKey).update(sentUsername).update('\0').update(password).digest('base64')
    const cached = this.#verified?.get(key)
    // While a username is locked out, its cached password counts only for the client that
    // verified it: otherwise an attacker's right guess would be answered from the victim's entry.
    if (cached === undefined || (cached.ip !== client.ip && this.#throttle.isBlocked(cached.failureKey))) {
      return this.#verifyPasswordCold(key, sentUsername, password, client)
    }
    return andThen(this.#store.getUser(cached.userId), (user) => {
      if (user !== undefined && user.passwordHash === cached.passwordHash) return { user, method: 'password', apiKeyId: null, token: null }
      this.#verified?.delete(key)
      return this.#verifyPasswordCold(key, sentUsername, password, client)
    })
  }

  /**
   * No verified entry: spend one attempt of the username's budget, then run scrypt (shared
   * by concurrent identical attempts). The attempt is counted before the hash runs, in one
   * atomic step, so a burst of guesses cannot all pass a check made before any failure is
   * recorded; a success starts the count again.
   */
  async #verifyPasswordCold(key: string, sentUsername: string, password: string, client: ClientInfo): Promise<Authentication> {
    // No account has such a name: refuse without a hash, and without a budget key of that size.
    if (sentUsername.length > MAX_USERNAME_LENGTH) throw this.#failedPassword(client, sentUsername)
    // The same credentials already being checked are the same attempt: join it, and its
    // budget step, registered before anything awaits (a script opening 50 connections at
    // once must neither pay 50 scrypt runs nor spend 50 attempts).
    let pending = this.#inflight.get(key)
    if (pending === undefined) {
      pending = this.#attempt(normalizeUsername(sentUsername), password, client).finally(() => this.#inflight.delete(key))
      this.#inflight.set(key, pending)
    }
    const { user, failureKey } = await pending
    if (user === undefined || user.passwordHash === null) throw this.#failedPassword(client, normalizeUsername(sentUsername))
    this.#verified?.set(key, { userId: user.id, passwordHash: user.passwordHash, ip: client.ip, failureKey })
    return { user, method: 'password', apiKeyId: null, token: null }
  }

  /** One attempt: spend a unit of the username's budget, run scrypt, give the budget back on success. */
  async #attempt(username: string, password: string, client: ClientInfo): Promise<{ user: UserRecord | undefined; failureKey: string }> {
    const failures = this.#config.basic.failures
    const failureKey = `login:${username}`
    if (failures !== null) {
      const budget = await this.#throttle.consume(failureKey, failures.limit, failures.windowMs, 1)
      if (budget !== null && !budget.allowed) throw this.#lockedOut(budget.retryAfterMs, client)
    }
    const user = await this.#checkPassword(username, password)
    if (user !== undefined && failures !== null) await this.#throttle.reset(failureKey)
    return { user, failureKey }
  }

  /**
   * One scrypt verification; an unknown user costs the same as a wrong password. (A hash
   * made with older parameters is not replaced here: a write racing a password change
   * could put the old password back.)
   */
  async #checkPassword(username: string, password: string): Promise<UserRecord | undefined> {
    const user = await this.#store.getUserByUsername(username)
    if (user === undefined || user.passwordHash === null) {
      await verifyPassword(password, await this.#decoyHash())
      return undefined
    }
    return (await verifyPassword(password, user.passwordHash)) ? user : undefined
  }

  /** Made once, on first need; a failure is not remembered. */
  #decoyHash(): Promise<string> {
    this.#decoy ??= decoyHash(this.#config.basic.scrypt).catch((error: unknown) => {
      this.#decoy = undefined
      throw error
    })
    return this.#decoy
  }

  #failedPassword(client: ClientInfo, username: string): PlatformError {
    // Only a printable, bounded username reaches the event: it is client input, bound for logs.
    const printable = username.slice(0, MAX_USERNAME_LENGTH).replace(/\p{Cc}/gu, '')
    this.#emit('authenticationFailed', { method: 'password', ip: client.ip, username: printable })
    return this.#invalidCredentials()
  }

  /**
   * Records when a user's grant to an application was last used, at most daily, in the
   * background: one store read per user and application per day in this process, a write
   * only when the stored value is a day old, and never for a grant that is gone (revoked:
   * its tokens are too, and a grant must not come back by itself).
   */
  #touchGrant(token: AccessTokenRecord): void {
    const key = `${token.userId}\0${token.appToken}`
    const now = Date.now()
    const known = this.#grantUsed.get(key)
    if (known !== undefined && now - known < LAST_USED_RESOLUTION_MS) return
    this.#grantUsed.set(key, now)
    Promise.resolve()
      .then(() => this.#store.getGrant(token.userId, token.appToken))
      .then((grant) => {
        if (grant === undefined) return
        if (now - grant.lastUsedAt < LAST_USED_RESOLUTION_MS) this.#grantUsed.set(key, grant.lastUsedAt)
        else return this.#store.recordGrant(token.userId, token.appToken, now)
      })
      // The store's guard has reported the failure; the request was served all the same.
      .catch(() => {})
  }

  /** Records when a key was last used, at most once a day per key, without holding up the request. */
  #touch(keyId: string, lastUsedAt: number | null): void {
    const now = Date.now()
    const written = Math.max(lastUsedAt ?? 0, this.#lastUsedWritten.get(keyId) ?? 0)
    if (now - written < LAST_USED_RESOLUTION_MS) return
    this.#lastUsedWritten.set(keyId, now)
    Promise.resolve()
      .then(() => this.#store.updateApiKey(keyId, { lastUsedAt: now }))
      // The store's guard has reported the failure; the request was served all the same.
      .catch(() => {})
  }

  #invalidCredentials(): PlatformError {
    const headers: Record<string, string> = this.#config.basic.challenge ? { 'www-authenticate': `Basic realm="${this.#config.realm}", charset="UTF-8"` } : {}
    return new PlatformError('invalid_credentials', 'Invalid username and password, or API key id and secret', { headers })
  }

  #lockedOut(retryAfterMs: number, client: ClientInfo): ThrottledError {
    const retryAfter = retryAfterSeconds(retryAfterMs)
    this.#emit('throttled', { policy: 'login', appToken: undefined, ip: client.ip, retryAfterMs })
    return new ThrottledError(`Too many sign-in attempts for this username; retry in ${retryAfter} seconds`, retryAfterMs)
  }
}

/** The public view of an authenticated user. */
export function toGateUser(user: UserRecord): GateUser {
  // `rights` is shared, not copied: the users API stores it frozen.
  return {
    id: user.id,
    username: user.username,
    screenName: user.screenName,
    displayName: user.displayName,
    email: user.email,
    rights: user.rights,
  }
}
