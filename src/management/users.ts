/**
 * Accounts: `gate.users`. A password is stored only as a scrypt hash; an account may have
 * none (single sign-on users) and still use API keys.
 *
 * @see docs/platform-rules.md "HTTP Basic" 2-3
 */
import { isIP } from 'node:net'
import { NotFoundError, PlatformError } from '../errors.js'
import { optionsObject } from '../util/validate.js'
import { checkPassword, hashPassword, type ScryptParams } from '../secrets/passwords.js'
import { normalizeAddress, type ClientInfo } from '../http/proxy.js'
import { randomId } from '../secrets/tokens.js'
import { assertStorable } from '../rules/storable.js'
import type { GateStore, UserRecord } from '../store/store.js'
import { legacyUsername, MAX_USERNAME_LENGTH, mapUsername, usernameLookups, usernameProblem, usernameSkeleton } from '../rules/usernames.js'
import { hasSlice } from '../store/slices.js'
import { API_KEY_ID } from '../rules/credential-shapes.js'

export { MAX_USERNAME_LENGTH }

/**
 * A user as the gate shows it: everything but the password hash, which it only says
 * exists, and the username's skeleton, which only the gate reads.
 */
export type User = Omit<UserRecord, 'passwordHash' | 'usernameSkeleton'> & { readonly hasPassword: boolean }

/** What {@link Users.create} takes. */
export interface CreateUser {
  username: string
  /** Omit (or `null`) for an account that signs in elsewhere and uses API keys here. */
  password?: string | null
  displayName: string
  email: string
  /** Defaults to `displayName`. */
  screenName?: string
  rights?: readonly string[]
}

/** What {@link Users.update} can change. */
export interface UpdateUser {
  screenName?: string
  displayName?: string
  email?: string
  rights?: readonly string[]
}

/** What {@link Users.signIn} takes. */
export interface SignIn {
  /** As typed into the form; any letter case. */
  username: string
  /** As typed into the form. */
  password: string
  /**
   * The address the sign-in came from: its failed attempts are counted against it, across
   * usernames, and it takes its turn in the hash queue. Behind a reverse proxy, the
   * client's address, not the proxy's: `req.gate.clientIp` on a route behind the gate
   * (resolved through `trustProxy`), or your framework's own, configured for the proxy.
   */
  clientIp: string
}

/**
 * Checks a sign-in with every protection of the gate: the failure budgets, the hash queue,
 * no API key. The gate's `Authenticator` (src/pipeline) is one; declared here, below it, so
 * that `gate.users` depends on the name rather than on the pipeline.
 */
export interface PasswordSignIn {
  /**
   * @returns the user whose password was right
   * @throws {PlatformError} 401 `invalid_credentials`
   * @throws {ThrottledError} 429 when a failure budget is spent
   */
  signIn(username: unknown, password: unknown, client: ClientInfo): Promise<UserRecord>
}

/** The public view of a stored user. */
export function toUser(record: UserRecord): User {
  return {
    id: record.id,
    username: record.username,
    screenName: record.screenName,
    displayName: record.displayName,
    email: record.email,
    rights: record.rights,
    hasPassword: record.passwordHash !== null,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  }
}

/**
 * A username as it was stored before RFC 8265 (NFC, lower case): what a legacy account
 * is found under. New usernames are prepared by PRECIS (see src/rules/usernames.ts).
 */
export function normalizeUsername(username: string): string {
  return legacyUsername(username)
}

/**
 * The stored user a username sent at sign-in or in a lookup names: its legacy form first
 * (no account saved before PRECIS is locked out), then its PRECIS form.
 */
export async function findUserRecord(store: GateStore, sent: string): Promise<UserRecord | undefined> {
  for (const username of usernameLookups(sent).lookups) {
    const found = await store.getUserByUsername(username)
    if (found !== undefined) return found
  }
  return undefined
}


/** `gate.users`: create and manage accounts. */
export class Users {
  readonly #store: GateStore
  readonly #scrypt: ScryptParams
  readonly #signIn: PasswordSignIn

  constructor(store: GateStore, scrypt: ScryptParams, signIn: PasswordSignIn) {
    this.#store = store
    this.#scrypt = scrypt
    this.#signIn = signIn
  }

  /**
   * Checks a sign-in from your own sign-in form, with every protection the gate gives its
   * own: the per-username and per-address budgets of failed attempts (shared with HTTP
   * Basic, in the store, across instances), the fair hash queue, and an unknown username
   * costing the same scrypt run as a wrong password. An API key id and secret never sign
   * anyone in, whatever the secret: a key is for scripts, and a leaked one must not become a
   * browser session that can mint keys, delete the leaked one and approve applications.
   *
   * It answers only the user whose password was right; every refusal throws, so a host that
   * forgets to handle one starts no session. Serve the form over https, with your own CSRF
   * protection, and start your session only with the user this returns.
   * @returns the user, as {@link Users.find} shows it
   * @throws {PlatformError} 401 `invalid_credentials`, for a wrong or missing username or
   * password, an unknown user, or an API key (its message says so: show it to the person)
   * @throws {ThrottledError} 429 `too_many_requests`, with `retryAfterMs`, when the
   * username's or the address's budget of failed attempts is spent (the right password too)
   * @throws {PlatformError} 503 `busy` (too many password checks wait in this process) or
   * `StoreError` 503 `service_unavailable` (the store failed); each has its `status`, and
   * `Retry-After` in `headers` where one applies
   * @throws {TypeError} for a missing or malformed `clientIp`, or an unknown field: a mistake
   * in your code, not the user's
   * @example
   * // After app.use(expressGate(gate)), so that req.gate.clientIp is the client's address.
   * app.post('/login', express.urlencoded({ extended: false }), async (req, res) => {
   *   try {
   *     const user = await gate.users.signIn({ username: req.body.username, password: req.body.password, clientIp: req.gate.clientIp })
   *     startSession(res, user.id)
   *     res.redirect(303, '/')
   *   } catch (error) {
   *     if (!(error instanceof GateError)) throw error
   *     res.status(error.status).set(error.headers ?? {}).render('login', { problem: error.message })
   *   }
   * })
   */
  async signIn(input: SignIn): Promise<User> {
    optionsObject('users.signIn()', input, ['username', 'password', 'clientIp'])
    const { clientIp } = input
    const ip = typeof clientIp === 'string' ? normalizeAddress(clientIp) : ''
    if (isIP(ip) === 0) {
      throw new TypeError('open-data-gate: users.signIn() needs clientIp, the IP address the sign-in came from (req.gate.clientIp behind the gate)')
    }
    // (`secure` plays no part in a password check: the form's transport is the host's to ensure.)
    return toUser(await this.#signIn.signIn(input.username, input.password, { ip, secure: true }))
  }

  /**
   * Creates an account with a platform-style id (`abcd-1234`). Required: `username`,
   * `displayName` and `email`; optional: `password` (omit it for an account that uses only
   * API keys), `screenName` (defaults to `displayName`) and `rights`.
   * @throws {TypeError} for an invalid username, password, name or email, or an unknown field
   * @throws {PlatformError} `conflict` when the username is taken
   * @example
   * const user = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'ada@example.org' })
   */
  async create(input: CreateUser): Promise<User> {
    if (typeof input !== 'object' || input === null) throw new TypeError('open-data-gate: users.create() takes { username, password?, displayName, email }')
    optionsObject('users.create()', input, ['username', 'password', 'displayName', 'email', 'screenName', 'rights'])
    const username = checkUsername(input.username)
    const skeleton = await usernameSkeleton(username)
    const password = input.password === undefined || input.password === null ? null : checkPassword(input.password)
    const displayName = checkText('displayName', input.displayName)
    const fields = {
      username,
      usernameSkeleton: skeleton,
      displayName,
      screenName: input.screenName === undefined ? displayName : checkText('screenName', input.screenName),
      email: checkEmail(input.email),
      rights: checkRights(input.rights ?? []),
      passwordHash: password === null ? null : await hashPassword(password, this.#scrypt),
    }
    // The id space is 32^8; a collision is rare but possible, so retry with a fresh id.
    for (let attempt = 0; ; attempt++) {
      if ((await this.#store.getUserByUsername(username)) !== undefined) {
        throw new PlatformError('conflict', `The username ${JSON.stringify(username)} is taken`)
      }
      // Looks like another user's (`аda` in Cyrillic beside `ada`): refused as taken, so a
      // consent page or a list can never show two accounts that read the same.
      if ((await this.#store.getUserBySkeleton?.(skeleton)) !== undefined) {
        throw new PlatformError('conflict', `The username ${JSON.stringify(username)} looks like one that is taken`)
      }
      const now = Date.now()
      const record: UserRecord = { id: `${randomId(4)}-${randomId(4)}`, ...fields, createdAt: now, updatedAt: now }
      try {
        await this.#store.insertUser(record)
        return toUser(record)
      } catch (error) {
        if (attempt >= 3) throw error
      }
    }
  }

  /** The user with this id, or `undefined`. */
  async find(id: string): Promise<User | undefined> {
    const record = await this.#store.getUser(id)
    return record === undefined ? undefined : toUser(record)
  }

  /**
   * The user with this username, or `undefined`. Compared as sign-in compares it: in
   * any case and width (`ＡＤＡ` finds `ada`, RFC 8265), and a username saved before those
   * rules exactly as it was stored.
   */
  async findByUsername(username: string): Promise<User | undefined> {
    const record = await findUserRecord(this.#store, username)
    return record === undefined ? undefined : toUser(record)
  }

  /**
   * Every account, oldest first, for operators.
   * @throws {TypeError} when the store cannot list users (it has no `listUsers`)
   */
  async list(): Promise<User[]> {
    if (this.#store.listUsers === undefined) throw new TypeError('open-data-gate: this store cannot list users (it has no listUsers)')
    const records = await this.#store.listUsers()
    return records.map(toUser).sort((a, b) => a.createdAt - b.createdAt)
  }

  /**
   * Changes names, email or rights.
   * @returns the updated user
   * @throws {NotFoundError} `not_found` when there is no user with this id
   * @throws {TypeError} for invalid values or an unknown field
   */
  async update(id: string, changes: UpdateUser): Promise<User> {
    optionsObject('users.update() changes', changes, ['screenName', 'displayName', 'email', 'rights'])
    const patch: { screenName?: string; displayName?: string; email?: string; rights?: readonly string[]; updatedAt: number } = { updatedAt: Date.now() }
    if (changes.screenName !== undefined) patch.screenName = checkText('screenName', changes.screenName)
    if (changes.displayName !== undefined) patch.displayName = checkText('displayName', changes.displayName)
    if (changes.email !== undefined) patch.email = checkEmail(changes.email)
    if (changes.rights !== undefined) patch.rights = checkRights(changes.rights)
    const record = await this.#store.updateUser(id, patch)
    if (record === undefined) throw noSuchUser(id)
    return toUser(record)
  }

  /**
   * Sets or removes (`null`) the password. The old password stops working at once, on
   * every instance (cached verifications are checked against the stored hash); API keys
   * and OAuth tokens are not disturbed.
   * @throws {NotFoundError} `not_found` when there is no user with this id
   */
  async setPassword(id: string, password: string | null): Promise<void> {
    const passwordHash = password === null ? null : await hashPassword(checkPassword(password), this.#scrypt)
    const record = await this.#store.updateUser(id, { passwordHash, updatedAt: Date.now() })
    if (record === undefined) throw noSuchUser(id)
  }

  /**
   * Deletes the account; its password, API keys and tokens stop working at once.
   * @returns `false` when there was no such user
   */
  async delete(id: string): Promise<boolean> {
    const deleted = await this.#store.deleteUser(id)
    if (deleted && hasSlice(this.#store, 'oauth')) await this.#store.revokeAccessTokens({ userId: id }, Date.now())
    return deleted
  }
}

/** The error of every management call that names a user nobody has. */
export function noSuchUser(id: string): NotFoundError {
  return new NotFoundError(`No user has the id ${JSON.stringify(id.slice(0, 40))}`)
}

/**
 * A new username, prepared by RFC 8265 UsernameCaseMapped (see src/rules/usernames.ts).
 * @throws {TypeError} naming what is not allowed
 */
function checkUsername(username: unknown): string {
  if (typeof username !== 'string') throw new TypeError('open-data-gate: a username must be a string')
  assertStorable('a username', username)
  const mapped = mapUsername(username)
  const problem = usernameProblem(mapped)
  if (problem !== undefined) throw new TypeError(`open-data-gate: ${problem}`)
  if (API_KEY_ID.test(mapped)) throw new TypeError('open-data-gate: a username must not look like an API key id (25 letters and digits)')
  return mapped
}

function checkText(name: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > 200) {
    throw new TypeError(`open-data-gate: ${name} must be a non-empty string of at most 200 characters`)
  }
  assertStorable(name, value)
  return value.trim()
}

function checkEmail(email: unknown): string {
  if (typeof email !== 'string' || email.length > 254 || !/^[^\s@]+@[^\s@]+$/.test(email)) {
    throw new TypeError('open-data-gate: email must be an address like name@example.org')
  }
  assertStorable('email', email)
  return email
}

function checkRights(rights: unknown): readonly string[] {
  if (!Array.isArray(rights) || !rights.every((r) => typeof r === 'string' && r !== '')) {
    throw new TypeError('open-data-gate: rights must be a list of non-empty strings')
  }
  for (const right of rights as string[]) assertStorable('a right', right)
  // Frozen: requests share it through req.gate.user.rights, and must not change the stored user.
  return Object.freeze([...new Set(rights as string[])])
}
