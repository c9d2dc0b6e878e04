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
import { PlatformError, ThrottledError } from './errors.js'
import type { Emit } from './events.js'
import type { ResolvedConfig } from './options.js'
import { decoyHash, hashPassword, needsRehash, verifyPassword } from './passwords.js'
import type { ClientInfo } from './proxy.js'
import { secretMatches, sha256 } from './secrets.js'
import type { AccessTokenRecord, Awaitable, GateStore, UserRecord } from './store/store.js'
import type { Throttle } from './throttle.js'
import { API_KEY_ID, normalizeUsername } from './users.js'

/** How a request proved who it acts for. */
export type AuthMethod = 'password' | 'api-key' | 'oauth' | 'none'

/** The authenticated user, as `req.gate.user` shows it. */
export interface GateUser {
  readonly id: string
  readonly username: string
  readonly screenName: string
  readonly displayName: string
  readonly email: string
  readonly rights: readonly string[]
}

/** A successful verification. */
export interface Authentication {
  readonly user: UserRecord
  readonly method: Exclude<AuthMethod, 'none'>
  readonly apiKeyId: string | null
  readonly token: AccessTokenRecord | null
}

/** Never store a `lastUsedAt` more often than this per key: it is a write on the hot path. */
const LAST_USED_RESOLUTION_MS = 60_000
/** A secret hash nothing matches, so an unknown key id costs the same comparison as a known one. */
const NO_SUCH_SECRET = sha256('')

export class Authenticator {
  readonly #config: ResolvedConfig
  readonly #store: GateStore
  readonly #throttle: Throttle
  readonly #emit: Emit
  readonly #cacheKey = randomBytes(32)
  readonly #verified: LRUCache<string, { userId: string; passwordHash: string }> | undefined
  readonly #inflight = new Map<string, Promise<UserRecord | undefined>>()
  readonly #lastUsedWritten = new LRUCache<string, number>({ max: 10_000 })
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
   * An access token arrived over an insecure connection: revoke it at once, in the store,
   * so that every instance refuses it from now on.
   */
  async revokeInsecure(token: string, client: ClientInfo): Promise<void> {
    const tokenHash = sha256(token)
    const record = await this.#store.getAccessToken(tokenHash)
    if (record === undefined) return
    if (await this.#store.revokeAccessToken(tokenHash, Date.now())) {
      this.#emit('tokenRevoked', { reason: 'insecure-transport', userId: record.userId, appToken: record.appToken, ip: client.ip })
    }
  }

  #verifyToken(token: string, scheme: 'oauth' | 'bearer', client: ClientInfo): Awaitable<Authentication> {
    return andThen(this.#store.getAccessToken(sha256(token)), (record) => {
      if (record === undefined || record.revokedAt !== null || record.expiresAt <= Date.now()) throw this.#invalidToken(scheme, client)
      return andThen(this.#store.getUser(record.userId), (user): Authentication => {
        if (user === undefined) throw this.#invalidToken(scheme, client)
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
    if (cached === undefined) return this.#verifyPasswordCold(key, sentUsername, password, client)
    return andThen(this.#store.getUser(cached.userId), (user) => {
      if (user !== undefined && user.passwordHash === cached.passwordHash) return { user, method: 'password', apiKeyId: null, token: null }
      this.#verified?.delete(key)
      return this.#verifyPasswordCold(key, sentUsername, password, client)
    })
  }

  /** No verified entry: check the failure budget, then scrypt (shared by concurrent identical attempts). */
  async #verifyPasswordCold(key: string, sentUsername: string, password: string, client: ClientInfo): Promise<Authentication> {
    const username = normalizeUsername(sentUsername)

    const failures = this.#config.basic.failures
    const failureKey = `login:${username}`
    if (failures !== null) {
      const budget = await this.#throttle.consume(failureKey, failures.limit, failures.windowMs, 0)
      if (budget !== null && budget.remaining < 1) throw this.#lockedOut(budget.retryAfterMs, client)
    }

    let pending = this.#inflight.get(key)
    if (pending === undefined) {
      pending = this.#checkPassword(username, password).finally(() => this.#inflight.delete(key))
      this.#inflight.set(key, pending)
    }
    const user = await pending
    if (user === undefined || user.passwordHash === null) {
      this.#emit('authenticationFailed', { method: 'password', ip: client.ip, username })
      if (failures !== null) await this.#throttle.consume(failureKey, failures.limit, failures.windowMs, 1)
      throw this.#invalidCredentials()
    }
    this.#verified?.set(key, { userId: user.id, passwordHash: user.passwordHash })
    return { user, method: 'password', apiKeyId: null, token: null }
  }

  /** One scrypt verification; an unknown user costs the same as a wrong password. */
  async #checkPassword(username: string, password: string): Promise<UserRecord | undefined> {
    const user = await this.#store.getUserByUsername(username)
    if (user === undefined || user.passwordHash === null) {
      this.#decoy ??= decoyHash(this.#config.basic.scrypt)
      await verifyPassword(password, await this.#decoy)
      return undefined
    }
    if (!(await verifyPassword(password, user.passwordHash))) return undefined
    if (needsRehash(user.passwordHash, this.#config.basic.scrypt)) return this.#rehash(user, password)
    return user
  }

  /** The password verified under older parameters: store it again under the current ones. */
  async #rehash(user: UserRecord, password: string): Promise<UserRecord> {
    try {
      const passwordHash = await hashPassword(password, this.#config.basic.scrypt)
      return (await this.#store.updateUser(user.id, { passwordHash })) ?? user
    } catch (error) {
      this.#emit('storeError', { operation: 'updateUser', error, outcome: 'ignored' })
      return user
    }
  }

  /** Records when a key was last used, at most once a minute per key, without holding up the request. */
  #touch(keyId: string, lastUsedAt: number | null): void {
    const now = Date.now()
    const written = Math.max(lastUsedAt ?? 0, this.#lastUsedWritten.get(keyId) ?? 0)
    if (now - written < LAST_USED_RESOLUTION_MS) return
    this.#lastUsedWritten.set(keyId, now)
    Promise.resolve()
      .then(() => this.#store.updateApiKey(keyId, { lastUsedAt: now }))
      .catch((error: unknown) => this.#emit('storeError', { operation: 'updateApiKey', error, outcome: 'ignored' }))
  }

  #invalidCredentials(): PlatformError {
    const headers: Record<string, string> = this.#config.basic.challenge ? { 'www-authenticate': `Basic realm="${this.#config.realm}", charset="UTF-8"` } : {}
    return new PlatformError('invalid_credentials', 'Invalid username and password, or API key id and secret', { headers })
  }

  #lockedOut(retryAfterMs: number, client: ClientInfo): ThrottledError {
    const retryAfter = Math.max(1, Math.ceil(retryAfterMs / 1000))
    this.#emit('throttled', { policy: 'login', appToken: undefined, ip: client.ip, retryAfterMs })
    return new ThrottledError(`Too many failed sign-in attempts for this username; retry in ${retryAfter} seconds`, retryAfterMs, {
      'retry-after': String(retryAfter),
    })
  }
}

/** The public view of an authenticated user. */
export function toGateUser(user: UserRecord): GateUser {
  return {
    id: user.id,
    username: user.username,
    screenName: user.screenName,
    displayName: user.displayName,
    email: user.email,
    rights: user.rights,
  }
}
