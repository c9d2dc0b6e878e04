/**
 * Verifies credentials: HTTP Basic (username and password, or API key id and secret) and
 * OAuth access tokens.
 *
 * scrypt takes tens of milliseconds, so a verified username and password is remembered
 * for a short while under an HMAC of both (keyed with a per-process secret, so the cache
 * holds nothing an attacker could test passwords against). A hit is honoured only while
 * the user's stored hash is the one that was verified: a password change ends it at once,
 * on every instance. Concurrent verifications of the same credentials share one scrypt
 * run. Failed attempts spend a per-username budget and a per-address budget (across all
 * usernames); once either is spent, further attempts are refused before any scrypt runs,
 * and the cache answers for a locked-out username only at the quiet address (no failure
 * for a whole window) that verified it. scrypt runs go through a
 * {@link HashQueue}: a few at once, one per address, the least served address first.
 *
 * @see docs/platform-rules.md "HTTP Basic", "OAuth 2.0" 6-7; docs/guides/authentication.md "HTTP Basic" (scrypt cost, single-flight)
 */
import { createHmac, randomBytes } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { andThen } from '../util/awaitable.js'
import { revokeApiKey } from '../management/api-keys.js'
import type { Credentials, SentInClear } from '../http/authorization-header.js'
import { PlatformError, retryAfterSeconds, ThrottledError } from '../errors.js'
import type { Emit } from '../events.js'
import type { RateResult } from '../limits/gcra.js'
import { HashQueue } from '../secrets/hash-queue.js'
import type { ResolvedConfig } from '../config/options.js'
import { decoyHash, verifyPassword } from '../secrets/passwords.js'
import { addressKey, type ClientInfo } from '../http/proxy.js'
import { loginAddressLastRateKey, loginAddressRateKey, loginRateKey } from '../limits/rate-keys.js'
import { NO_SUCH_SECRET, secretMatches, sha256 } from '../secrets/tokens.js'
import { unstorableCharacter } from '../store/storable.js'
import type { AccessTokenRecord, Awaitable, GateStore, UserRecord } from '../store/store.js'
import type { Throttle } from './throttle.js'
import { API_KEY_ID, findUserRecord, MAX_USERNAME_LENGTH, normalizeUsername } from '../management/users.js'
import { usernameLookups } from '../management/usernames.js'

/** An access token already looked up by the gate (for its budget): verification reuses the read. */
export interface TokenLookup {
  readonly record: AccessTokenRecord | undefined
}

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
  readonly failureKey: string
  /** The address (key) that verified it: during a lockout, the only one it may answer for, and only while quiet. */
  readonly address: string
}

/** The refusal of a wrong password at a sign-in form, for the person in front of it. */
const WRONG_PASSWORD = 'Wrong username or password.'
/** The refusal of an API key at a sign-in form: it works for scripts, never for a session. */
const API_KEY_SIGN_IN = 'An API key cannot sign in: it is for scripts. Sign in with your username and password.'

/** Whether a username as typed is an API key id (pasted with spaces, or in capitals, too). */
function looksLikeApiKeyId(username: string): boolean {
  const trimmed = username.trim()
  return trimmed.length === 25 && API_KEY_ID.test(trimmed.toLowerCase())
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
  /** Addresses seen past their failure budget, and until when (ms). */
  readonly #addressBlockedUntil = new LRUCache<string, number>({ max: 10_000 })
  readonly #hashes: HashQueue
  /** When each user's grant to an application was last known used, by `userId \0 appToken`. */
  readonly #grantUsed = new LRUCache<string, number>({ max: 10_000 })
  #decoy: Promise<string> | undefined

  constructor(config: ResolvedConfig, store: GateStore, throttle: Throttle, emit: Emit) {
    this.#config = config
    this.#store = store
    this.#throttle = throttle
    this.#emit = emit
    this.#hashes = new HashQueue(config.basic.hashing)
    if (config.basic.cacheTtlMs > 0) this.#verified = new LRUCache({ max: 10_000, ttl: config.basic.cacheTtlMs })
  }

  /**
   * Verifies credentials sent over a secure connection. Synchronous when the store is
   * and no scrypt run is needed (tokens, API keys, a password verified before).
   * @throws {PlatformError} 401 `invalid_credentials` / `invalid_token`
   * @throws {ThrottledError} 429 when a username's failure budget is spent
   */
  verify(credentials: Credentials, client: ClientInfo, token?: TokenLookup): Awaitable<Authentication> {
    if (credentials.kind === 'token') {
      const record = token === undefined ? this.#store.getAccessToken(sha256(credentials.token)) : token.record
      return andThen(record, (found) => this.#verifyToken(found, credentials.scheme, client))
    }
    if (API_KEY_ID.test(credentials.user)) return this.#verifyApiKey(credentials.user, credentials.password, client)
    return this.#verifyPassword(credentials.user, credentials.password, client)
  }

  /**
   * A password sign-in from a form: the gate's own sign-in pages and `gate.users.signIn`.
   * Exactly the checks of a Basic password (both failure budgets, the hash queue, a decoy
   * hash for an unknown username, the cache of verified passwords), and never an API key:
   * an id of a key's shape (usernames never have one) is refused before any lookup or hash,
   * right secret or not, so a leaked key never becomes a browser session. Refusals carry no
   * Basic challenge, which would make a browser open its own password dialog.
   * @throws {PlatformError} 401 `invalid_credentials`, with a message for the person at the form
   * @throws {ThrottledError} 429 when the username's or the address's budget is spent
   * @throws {PlatformError} 503 `busy` (too many hashes wait), `service_unavailable` (the store)
   */
  async signIn(username: unknown, password: unknown, client: ClientInfo): Promise<UserRecord> {
    if (typeof username !== 'string' || typeof password !== 'string') throw new PlatformError('invalid_credentials', WRONG_PASSWORD)
    if (looksLikeApiKeyId(username)) {
      this.#emit('authenticationFailed', { method: 'api-key', ip: client.ip, username: undefined })
      throw new PlatformError('invalid_credentials', API_KEY_SIGN_IN)
    }
    try {
      return (await this.#verifyPassword(username, password, client)).user
    } catch (error) {
      if (error instanceof PlatformError && error.code === 'invalid_credentials') throw new PlatformError('invalid_credentials', WRONG_PASSWORD)
      throw error
    }
  }

  /**
   * Access tokens arrived over an insecure connection: revoke them at once, in the store,
   * so that every instance refuses them from now on.
   * @returns how many live tokens this revoked
   */
  async revokeInsecure(tokens: readonly string[], client: ClientInfo): Promise<number> {
    let revoked = 0
    for (const token of tokens) {
      const tokenHash = sha256(token)
      const record = await this.#store.getAccessToken(tokenHash)
      if (record !== undefined && (await this.#store.revokeAccessToken(tokenHash, Date.now()))) {
        revoked++
        this.#emit('tokenRevoked', { reason: 'insecure-transport', userId: record.userId, appToken: record.appToken, ip: client.ip })
      }
    }
    return revoked
  }

  /**
   * Whatever a request over an insecure connection carried (see `credentialsSentIn`): each
   * access token is revoked, and each API key whose right secret is among those seen with
   * its id, since whoever watched the wire has them now. A wrong secret revokes nothing, or
   * anyone could revoke anyone's key by its id. No password is ever tried: an API key
   * secret is a SHA-256 and a constant-time compare (no scrypt, so nothing for the hash
   * queue to schedule), only ids shaped like a key are read, and the candidates are
   * bounded per request.
   * @returns how many live access tokens this revoked
   */
  async revokeSentInClear(sent: SentInClear, client: ClientInfo): Promise<number> {
    const revoked = sent.tokens.length === 0 ? 0 : await this.revokeInsecure(sent.tokens, client)
    for (const { keyId, secrets } of sent.apiKeys) await this.#revokeInsecureApiKey(keyId, secrets, client)
    return revoked
  }

  async #revokeInsecureApiKey(keyId: string, secrets: readonly string[], client: ClientInfo): Promise<void> {
    if (!API_KEY_ID.test(keyId)) return
    const record = await this.#store.getApiKey(keyId)
    if (record === undefined || record.revokedAt !== null) return
    // Every secret is compared, so the time taken does not say which one matched.
    let matches = false
    for (const secret of secrets) if (secretMatches(secret, record.secretHash)) matches = true
    if (!matches) return
    const updated = await revokeApiKey(this.#store, record.keyId, this.#config.deletedKeyRetentionMs)
    if (updated !== undefined) this.#emit('apiKeyRevoked', { reason: 'insecure-transport', keyId: record.keyId, userId: record.userId, ip: client.ip })
  }

  #verifyToken(record: AccessTokenRecord | undefined, scheme: 'oauth' | 'bearer', client: ClientInfo): Awaitable<Authentication> {
    if (record === undefined || record.revokedAt !== null || record.expiresAt <= Date.now()) throw this.#invalidToken(scheme, client)
    return andThen(this.#store.getUser(record.userId), (user): Authentication => {
      if (user === undefined) throw this.#invalidToken(scheme, client)
      this.#touchGrant(record)
      return { user, method: 'oauth', apiKeyId: null, token: record }
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
    // Every sign-in comes through here (Basic, the forms, the host's own calls): text no store
    // can hold never reaches a lookup or a failure budget's key (a NUL once made PostgreSQL look down).
    const unstorable = unstorableCharacter(sentUsername) ?? unstorableCharacter(password)
    if (unstorable !== undefined) throw new PlatformError('invalid_request', `The username or password ${unstorable}, which no account can have`)
    // An address past its budget gets no answer that depends on the password, cached or not.
    const address = addressKey(client.ip, 56)
    const blocked = this.#addressBlockedMs(address)
    if (blocked > 0) throw this.#addressLockedOut(blocked, client)
    const key = createHmac('sha256', this.#cacheKey).update(sentUsername).update('\0').update(password).digest('base64')
    const cached = this.#verified?.get(key)
    if (cached === undefined) return this.#verifyPasswordCold(key, sentUsername, password, client, address)
    // While a username is locked out, its cached password answers only for the address that
    // verified it, and only while that address is quiet (no failed attempt for a whole
    // window): the legitimate user keeps working, while a neighbour behind the same NAT who
    // guesses once makes the address noisy and gets no answer from the cache after that.
    if (this.#throttle.isBlocked(cached.failureKey)) {
      if (cached.address !== address) return this.#verifyPasswordCold(key, sentUsername, password, client, address)
      return andThen(this.#addressQuiet(address), (quiet) =>
        quiet ? this.#cachedUser(key, cached, sentUsername, password, client, address) : this.#verifyPasswordCold(key, sentUsername, password, client, address),
      )
    }
    return this.#cachedUser(key, cached, sentUsername, password, client, address)
  }

  /** The user of a cache hit, while the stored hash is still the one verified. */
  #cachedUser(key: string, cached: VerifiedPassword, sentUsername: string, password: string, client: ClientInfo, address: string): Awaitable<Authentication> {
    return andThen(this.#store.getUser(cached.userId), (user) => {
      if (user !== undefined && user.passwordHash === cached.passwordHash) return { user, method: 'password', apiKeyId: null, token: null }
      this.#verified?.delete(key)
      return this.#verifyPasswordCold(key, sentUsername, password, client, address)
    })
  }

  /**
   * No verified entry: spend one attempt of the username's budget, then run scrypt (shared
   * by concurrent identical attempts) when the address has its turn in the hash queue. The
   * username's attempt is counted before the hash runs, in one atomic step, so a burst of
   * guesses cannot all pass a check made before any failure is recorded; a success starts
   * the count again. The address's failures are counted after the fact, and its budget is
   * read again once its turn comes: one address has one hash running at a time, so a
   * burst from it cannot pass a stale reading either.
   */
  async #verifyPasswordCold(key: string, sentUsername: string, password: string, client: ClientInfo, address: string): Promise<Authentication> {
    // No account has such a name: refuse without a hash, and without a budget key of that size.
    if (sentUsername.length > MAX_USERNAME_LENGTH) {
      await this.#countAddressFailure(address)
      throw this.#failedPassword(client, sentUsername)
    }
    // The same credentials already being checked are the same attempt: join it, and its
    // budget step, registered before anything awaits (a script opening 50 connections at
    // once must neither pay 50 scrypt runs nor spend 50 attempts).
    let pending = this.#inflight.get(key)
    if (pending === undefined) {
      pending = this.#attempt(sentUsername, password, client, address).finally(() => this.#inflight.delete(key))
      this.#inflight.set(key, pending)
    }
    const { user, failureKey } = await pending
    if (user === undefined || user.passwordHash === null) throw this.#failedPassword(client, normalizeUsername(sentUsername))
    this.#verified?.set(key, { userId: user.id, passwordHash: user.passwordHash, failureKey, address })
    return { user, method: 'password', apiKeyId: null, token: null }
  }

  /** One attempt: spend a unit of the username's budget, wait for the address's turn, run scrypt, settle both budgets. */
  async #attempt(sentUsername: string, password: string, client: ClientInfo, address: string): Promise<{ user: UserRecord | undefined; failureKey: string }> {
    const failures = this.#config.basic.failures
    // One budget per account, whatever width or case the name is typed in (RFC 8265).
    const failureKey = loginRateKey(usernameLookups(sentUsername).key)
    if (failures !== null) {
      const budget = await this.#throttle.consume(failureKey, failures.limit, failures.windowMs, 1)
      if (budget !== null && !budget.allowed) {
        // A refused attempt is still a guess from this address.
        await this.#countAddressFailure(address)
        throw this.#lockedOut(budget.retryAfterMs, client)
      }
    }
    const user = await this.#hashes.run(address, async () => {
      const spentMs = await this.#addressBudgetSpent(address)
      if (spentMs > 0) throw this.#addressLockedOut(spentMs, client)
      const verified = await this.#checkPassword(sentUsername, password)
      if (verified === undefined) await this.#countAddressFailure(address)
      return verified
    })
    if (user !== undefined && failures !== null) await this.#throttle.reset(failureKey)
    return { user, failureKey }
  }

  /** How long this process knows the address to be past its budget, in ms (0: not known to be). No store call. */
  #addressBlockedMs(address: string): number {
    if (this.#addressBlockedUntil.size === 0) return 0
    const until = this.#addressBlockedUntil.get(address)
    return until === undefined ? 0 : Math.max(0, until - Date.now())
  }

  /** Reads the address's budget in the store (without spending): ms until it has room again, 0 when it has. */
  async #addressBudgetSpent(address: string): Promise<number> {
    const policy = this.#config.basic.addressFailures
    if (policy === null) return 0
    return this.#noteAddress(address, await this.#throttle.consume(loginAddressRateKey(address), policy.limit, policy.windowMs, 0))
  }

  /**
   * One failed password attempt from the address: a unit of its budget, and the time of its
   * latest failure (a one-unit key started again, so it is spent until a whole window after
   * the latest failure: what {@link #addressQuiet} reads).
   */
  async #countAddressFailure(address: string): Promise<void> {
    const policy = this.#config.basic.addressFailures
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
  #addressQuiet(address: string): Awaitable<boolean> {
    const policy = this.#config.basic.addressFailures
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

  /**
   * One scrypt verification; an unknown user costs the same as a wrong password. (A hash
   * made with older parameters is not replaced here: a write racing a password change
   * could put the old password back.)
   */
  async #checkPassword(sentUsername: string, password: string): Promise<UserRecord | undefined> {
    const user = await findUserRecord(this.#store, sentUsername)
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
   * background: one store read per user and application per day in this process, and a
   * write only when the stored value is a day old. The write is the store's `touchGrant`,
   * which never creates a grant: one revoked between the read and the write (its tokens are
   * revoked with it) stays gone, instead of coming back by itself and skipping the next
   * consent.
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
        else return this.#store.touchGrant(token.userId, token.appToken, now)
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

  #addressLockedOut(retryAfterMs: number, client: ClientInfo): ThrottledError {
    const retryAfter = retryAfterSeconds(retryAfterMs)
    this.#emit('throttled', { policy: 'login-address', appToken: undefined, ip: client.ip, retryAfterMs })
    return new ThrottledError(`Too many failed sign-in attempts from this address; retry in ${retryAfter} seconds`, retryAfterMs)
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
