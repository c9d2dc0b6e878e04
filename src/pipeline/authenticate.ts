/**
 * Verifies credentials: HTTP Basic (username and password, or API key id and secret) and
 * OAuth access tokens.
 *
 * scrypt takes tens of milliseconds, so a verified username and password is remembered for
 * a short while ({@link PasswordCache}); a hit is honoured only while the user's stored hash
 * is the one that was verified. Concurrent verifications of the same credentials share one
 * scrypt run. Failed attempts spend a per-username and a per-address budget
 * ({@link LoginBudgets}); once either is spent, further attempts are refused before any
 * scrypt runs, and the cache answers for a locked-out username only at the quiet address
 * (no failure for a whole window) that verified it. scrypt runs go through a
 * {@link HashQueue}: a few at once, one per address, the least served address first.
 *
 * What travelled in clear is revoked by `./clear-text.ts`; when keys and grants were last
 * used is written by `./last-used.ts`.
 *
 * @see docs/platform-rules.md "HTTP Basic", "OAuth 2.0" 6-7; docs/guides/authentication.md "HTTP Basic" (scrypt cost, single-flight)
 */
import { andThen } from '../util/awaitable.js'
import type { Credentials } from '../http/authorization-header.js'
import { PlatformError } from '../errors.js'
import type { Emit } from '../events.js'
import { LoginBudgets } from './login-budgets.js'
import { HashQueue } from '../secrets/hash-queue.js'
import type { ResolvedConfig } from '../config/options.js'
import { PasswordCache, type VerifiedPassword } from '../secrets/password-cache.js'
import { decoyHash, verifyPassword } from '../secrets/passwords.js'
import { addressKey, type ClientInfo } from '../http/proxy.js'
import { NO_SUCH_SECRET, secretMatches, sha256 } from '../secrets/tokens.js'
import { unstorableCharacter } from '../rules/storable.js'
import { assertNotSuspended, type AccessTokenRecord, type ApiKeyRecord, type ApplicationRecord, type Awaitable, type GateStore, type UserRecord } from '../store/store.js'
import { isLiveAccessToken } from '../store/contract/oauth.js'
import type { AuthMethod } from '../rules/auth-methods.js'
import type { Throttle } from './throttle.js'
import { LastUsed } from './last-used.js'
import { findUserRecord, MAX_USERNAME_LENGTH, normalizeUsername } from '../management/users.js'
import { API_KEY_ID } from '../rules/credential-shapes.js'

/**
 * Records the gate already read for a request (an access token for its budget, or the
 * credential's records in the request's one store round trip): verification uses them
 * instead of reading them again. A field that is absent was not read.
 */
export interface TokenLookup {
  /** The access token (credentials of kind `token`). */
  readonly record?: AccessTokenRecord | undefined
  /** The API key (Basic with a key id). */
  readonly apiKey?: ApiKeyRecord | undefined
  /** The user of the token or key, or the user of a verified password. */
  readonly user?: UserRecord | undefined
}

export type { AuthMethod } from '../rules/auth-methods.js'

/** The authenticated user, as `req.gate.user` shows it: the account without its password hash or dates. */
export type GateUser = Pick<UserRecord, 'id' | 'username' | 'screenName' | 'displayName' | 'email' | 'rights'>

/** A successful verification. */
export interface Authentication {
  readonly user: UserRecord
  readonly method: Exclude<AuthMethod, 'none'>
  readonly apiKeyId: string | null
  readonly token: AccessTokenRecord | null
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

/** Where an access token's application is read: the gate's application cache. */
export interface ApplicationLookup {
  get(appToken: string): Awaitable<ApplicationRecord | undefined>
}

/** The options verification reads: the `basic` section. */
export type BasicConfig = ResolvedConfig['basic']

/** Verifies credentials and password sign-ins for the gate, its OAuth pages and `gate.users.signIn`. */
export class Authenticator {
  readonly #basic: BasicConfig
  readonly #realm: string
  readonly #store: GateStore
  readonly #applications: ApplicationLookup
  readonly #emit: Emit
  readonly #verified: PasswordCache
  readonly #budgets: LoginBudgets
  readonly #inflight = new Map<string, Promise<{ user: UserRecord | undefined; failureKey: string }>>()
  readonly #hashes: HashQueue
  readonly #lastUsed: LastUsed
  #decoy: Promise<string> | undefined
  #lastKey: { readonly username: string; readonly password: string; readonly key: string } | undefined

  /**
   * @param realm the realm of the `WWW-Authenticate` challenges
   * @param applications the gate's application cache: an access token's application is read there
   */
  constructor(basic: BasicConfig, realm: string, store: GateStore, throttle: Throttle, emit: Emit, applications: ApplicationLookup) {
    this.#basic = basic
    this.#realm = realm
    this.#store = store
    this.#applications = applications
    this.#emit = emit
    this.#verified = new PasswordCache(basic.cacheTtlMs)
    this.#budgets = new LoginBudgets(basic, throttle, emit)
    this.#hashes = new HashQueue(basic.hashing)
    this.#lastUsed = new LastUsed(store)
  }

  /**
   * Verifies credentials sent over a secure connection. Synchronous when the store is
   * and no scrypt run is needed (tokens, API keys, a password verified before).
   * @throws {PlatformError} 401 `invalid_credentials` / `invalid_token`
   * @throws {ThrottledError} 429 when a username's failure budget is spent
   */
  verify(credentials: Credentials, client: ClientInfo, read?: TokenLookup): Awaitable<Authentication> {
    if (credentials.kind === 'token') {
      if (read !== undefined && 'record' in read) return this.#verifyToken(read.record, credentials.scheme, client, read)
      return andThen(this.#store.getAccessToken(sha256(credentials.token)), (found) => this.#verifyToken(found, credentials.scheme, client, read))
    }
    if (API_KEY_ID.test(credentials.user)) return this.#verifyApiKey(credentials.user, credentials.password, client, read)
    return this.#verifyPassword(credentials.user, credentials.password, client, read)
  }

  /**
   * The user a Basic password would be verified as from the cache of verified passwords,
   * without any check or store call: what the gate reads ahead, in the request's one store
   * round trip, for {@link verify} to use. `undefined` when the cache does not know it.
   */
  cachedPasswordUser(username: string, password: string): string | undefined {
    return this.#verified.get(this.#passwordKey(username, password))?.userId
  }

  /** The cache key of a username and password; the last one is kept, as a request asks twice. */
  #passwordKey(username: string, password: string): string {
    const last = this.#lastKey
    if (last !== undefined && last.username === username && last.password === password) return last.key
    const key = this.#verified.keyOf(username, password)
    this.#lastKey = { username, password, key }
    return key
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
      this.#emit('authenticationFailed', { method: 'api-key', ip: client.ip, requestId: client.requestId, username: undefined })
      throw new PlatformError('invalid_credentials', API_KEY_SIGN_IN)
    }
    try {
      return (await this.#verifyPassword(username, password, client)).user
    } catch (error) {
      if (error instanceof PlatformError && error.code === 'invalid_credentials') throw new PlatformError('invalid_credentials', WRONG_PASSWORD)
      throw error
    }
  }

  #verifyToken(record: AccessTokenRecord | undefined, scheme: 'oauth' | 'bearer', client: ClientInfo, read: TokenLookup | undefined): Awaitable<Authentication> {
    if (!isLiveAccessToken(record, Date.now())) throw this.#invalidToken(scheme, client)
    // Whatever budget the request counted against (with `oauthTokenBudget: 'anonymous'` the
    // pipeline never reads the token's application), a suspended application's token is refused.
    return andThen(this.#applications.get(record.appToken), (application) => {
      if (application !== undefined) assertNotSuspended(application)
      return andThen(this.#userOf(record.userId, read), (user): Authentication => {
        if (user === undefined) throw this.#invalidToken(scheme, client)
        this.#lastUsed.grant(record)
        return { user, method: 'oauth', apiKeyId: null, token: record }
      })
    })
  }

  #verifyApiKey(keyId: string, secret: string, client: ClientInfo, read: TokenLookup | undefined): Awaitable<Authentication> {
    const key = read !== undefined && 'apiKey' in read ? read.apiKey : this.#store.getApiKey(keyId)
    return andThen(key, (record) => {
      // Compared even for an unknown key, so its absence costs the same time.
      const matches = secretMatches(secret, record?.secretHash ?? NO_SUCH_SECRET)
      if (record === undefined || !matches || record.revokedAt !== null) throw this.#invalidKey(client)
      return andThen(this.#userOf(record.userId, read), (user): Authentication => {
        if (user === undefined) throw this.#invalidKey(client)
        this.#lastUsed.apiKey(keyId, record.lastUsedAt)
        return { user, method: 'api-key', apiKeyId: keyId, token: null }
      })
    })
  }

  /** The user by id: the one read already with the request's records, or from the store. */
  #userOf(userId: string, read: TokenLookup | undefined): Awaitable<UserRecord | undefined> {
    if (read !== undefined && 'user' in read && (read.user === undefined || read.user.id === userId)) return read.user
    return this.#store.getUser(userId)
  }

  #invalidToken(scheme: 'oauth' | 'bearer', client: ClientInfo): PlatformError {
    this.#emit('authenticationFailed', { method: 'oauth', ip: client.ip, requestId: client.requestId, username: undefined })
    const challenge = `${scheme === 'oauth' ? 'OAuth' : 'Bearer'} realm="${this.#realm}", error="invalid_token"`
    return new PlatformError('invalid_token', 'The access token is invalid, expired or revoked', { headers: { 'www-authenticate': challenge } })
  }

  #invalidKey(client: ClientInfo): PlatformError {
    this.#emit('authenticationFailed', { method: 'api-key', ip: client.ip, requestId: client.requestId, username: undefined })
    return this.#invalidCredentials()
  }

  /**
   * @param sentUsername the username as sent: the cache is keyed on it, and a hit loads the
   * user by id, so a warm request never pays for Unicode normalisation
   */
  #verifyPassword(sentUsername: string, password: string, client: ClientInfo, read?: TokenLookup): Awaitable<Authentication> {
    // Every sign-in comes through here (Basic, the forms, the host's own calls): text no store
    // can hold never reaches a lookup or a failure budget's key (a NUL once made PostgreSQL look down).
    const unstorable = unstorableCharacter(sentUsername) ?? unstorableCharacter(password)
    if (unstorable !== undefined) throw new PlatformError('invalid_request', `The username or password ${unstorable}, which no account can have`)
    // An address past its budget gets no answer that depends on the password, cached or not.
    const address = addressKey(client.ip, 56)
    this.#budgets.refuseBlockedAddress(address, client)
    const key = this.#passwordKey(sentUsername, password)
    const cached = this.#verified.get(key)
    if (cached === undefined) return this.#verifyPasswordCold(key, sentUsername, password, client, address)
    // While a username is locked out, its cached password answers only for the address that
    // verified it, and only while that address is quiet (no failed attempt for a whole
    // window): the legitimate user keeps working, while a neighbour behind the same NAT who
    // guesses once makes the address noisy and gets no answer from the cache after that.
    if (this.#budgets.usernameBlocked(cached.failureKey)) {
      if (cached.address !== address) return this.#verifyPasswordCold(key, sentUsername, password, client, address)
      return andThen(this.#budgets.addressQuiet(address), (quiet) =>
        quiet ? this.#cachedUser(key, cached, sentUsername, password, client, address, read) : this.#verifyPasswordCold(key, sentUsername, password, client, address),
      )
    }
    return this.#cachedUser(key, cached, sentUsername, password, client, address, read)
  }

  /** The user of a cache hit, while the stored hash is still the one verified. */
  #cachedUser(key: string, cached: VerifiedPassword, sentUsername: string, password: string, client: ClientInfo, address: string, read: TokenLookup | undefined): Awaitable<Authentication> {
    return andThen(this.#userOf(cached.userId, read), (user) => {
      if (user !== undefined && user.passwordHash === cached.passwordHash) return { user, method: 'password', apiKeyId: null, token: null }
      this.#verified.forget(key)
      return this.#verifyPasswordCold(key, sentUsername, password, client, address)
    })
  }

  /**
   * No verified entry: spend one attempt of the username's budget, then run scrypt (shared
   * by concurrent identical attempts) when the address has its turn in the hash queue. The
   * username's attempt is counted before the hash runs; a success starts the count again.
   * The address's failures are counted after the fact, and its budget is read again once
   * its turn comes.
   */
  async #verifyPasswordCold(key: string, sentUsername: string, password: string, client: ClientInfo, address: string): Promise<Authentication> {
    // No account has such a name: refuse without a hash, and without a budget key of that size.
    if (sentUsername.length > MAX_USERNAME_LENGTH) {
      await this.#budgets.countAddressFailure(address)
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
    this.#verified.remember(key, { userId: user.id, passwordHash: user.passwordHash, failureKey, address })
    return { user, method: 'password', apiKeyId: null, token: null }
  }

  /** One attempt: spend a unit of the username's budget, wait for the address's turn, run scrypt, settle both budgets. */
  async #attempt(sentUsername: string, password: string, client: ClientInfo, address: string): Promise<{ user: UserRecord | undefined; failureKey: string }> {
    const failureKey = this.#budgets.usernameKey(sentUsername)
    const limited = this.#budgets.limitsUsernames
    if (limited) await this.#budgets.spendUsernameAttempt(failureKey, address, client)
    const user = await this.#hashes.run(address, async () => {
      await this.#budgets.refuseSpentAddress(address, client)
      const verified = await this.#checkPassword(sentUsername, password)
      if (verified === undefined) await this.#budgets.countAddressFailure(address)
      return verified
    })
    if (user !== undefined && limited) await this.#budgets.resetUsername(failureKey)
    return { user, failureKey }
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
    this.#decoy ??= decoyHash(this.#basic.scrypt).catch((error: unknown) => {
      this.#decoy = undefined
      throw error
    })
    return this.#decoy
  }

  #failedPassword(client: ClientInfo, username: string): PlatformError {
    // Only a printable, bounded username reaches the event: it is client input, bound for logs.
    const printable = username.slice(0, MAX_USERNAME_LENGTH).replace(/\p{Cc}/gu, '')
    this.#emit('authenticationFailed', { method: 'password', ip: client.ip, requestId: client.requestId, username: printable })
    return this.#invalidCredentials()
  }

  #invalidCredentials(): PlatformError {
    const headers: Record<string, string> = this.#basic.challenge ? { 'www-authenticate': `Basic realm="${this.#realm}", charset="UTF-8"` } : {}
    return new PlatformError('invalid_credentials', 'Invalid username and password, or API key id and secret', { headers })
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
