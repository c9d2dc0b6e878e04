/**
 * Registered applications: `gate.applications`. Registration issues the app token
 * (public, sent as `X-App-Token` and as OAuth `client_id`) and the secret token (sent
 * only as OAuth `client_secret`, stored only as a hash, shown once).
 *
 * @see docs/platform-rules.md "Resources and their fields", "OAuth 2.0" step 1
 */
import { isPlausibleAppToken, MAX_APP_TOKEN_LENGTH } from '../pipeline/app-token.js'
import { NotFoundError, PlatformError } from '../errors.js'
import { optionsObject, positiveInteger } from '../config/validate.js'
import { randomToken, secretMatches, sha256 } from '../secrets/tokens.js'
import { assertStorable, unstorableCharacter } from '../store/storable.js'
import type { ApplicationRecord, GateStore } from '../store/store.js'
import { hasSlice } from '../store/slices.js'

/** An application as the gate shows it: everything but the secret's hash. */
export interface Application {
  readonly appToken: string
  readonly name: string
  readonly callbackPrefix: string | null
  /** This application's own throttle limit, or `null` for the configured one. */
  readonly limit: number | null
  readonly createdAt: number
  readonly updatedAt: number
}

/** What {@link Applications.register} takes. */
export interface RegisterApplication {
  name: string
  /** Absolute https URL every OAuth `redirect_uri` must start with. Omit for an app that never uses OAuth. */
  callbackPrefix?: string | null
  /** A per-application throttle limit (requests per the application window). */
  limit?: number | null
  /**
   * Import: keep an app token the application already uses (moving from another portal).
   * 1 to 128 letters, digits, `-` or `_`, not taken. Default: a new random token.
   */
  appToken?: string
  /**
   * Import: keep the application's existing secret token (it is stored hashed, like a new
   * one). At least 16 characters, no spaces or control characters. Default: a new random secret.
   */
  secretToken?: string
}

/** What {@link Applications.update} can change. `null` clears an optional field. */
export interface UpdateApplication {
  name?: string
  callbackPrefix?: string | null
  limit?: number | null
}

/** The credentials of a new application: the only time the secret token is visible. */
export interface RegisteredApplication {
  readonly appToken: string
  readonly secretToken: string
  readonly application: Application
}

/** The public view of a stored application. */
export function toApplication(record: ApplicationRecord): Application {
  return {
    appToken: record.appToken,
    name: record.name,
    callbackPrefix: record.callbackPrefix,
    limit: record.limit,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  }
}

/** `gate.applications`: register and manage applications. */
export class Applications {
  readonly #store: GateStore
  /** Tells the gate's per-process cache that a record changed. */
  readonly #changed: (appToken: string) => void
  readonly #allowLoopback: boolean

  /** @param allowLoopback `oauth.allowLoopbackCallbacks`: also accept http loopback Callback Prefixes */
  constructor(store: GateStore, changed: (appToken: string) => void = () => {}, allowLoopback = false) {
    this.#store = store
    this.#changed = changed
    this.#allowLoopback = allowLoopback
  }

  /**
   * Registers an application.
   * @throws {TypeError} for a missing name, a callback prefix that is not an absolute https URL, a bad limit, an unknown field,
   *   an imported `appToken` or `secretToken` of the wrong form
   * @throws {PlatformError} `conflict` when an imported `appToken` is taken
   * @example
   * const { appToken, secretToken } = await gate.applications.register({
   *   name: 'Transit dashboard', callbackPrefix: 'https://transit.example/oauth/',
   * })
   * // Importing an application that already has its credentials elsewhere:
   * await gate.applications.register({ name: 'Transit dashboard', appToken: 'aB3dE5fG7hJ9kL1mN3pQ5rS7t', secretToken: process.env.TRANSIT_SECRET })
   */
  async register(input: RegisterApplication): Promise<RegisteredApplication> {
    if (typeof input !== 'object' || input === null) throw new TypeError('open-data-gate: register() takes { name, callbackPrefix?, limit? }')
    optionsObject('register()', input, REGISTER_FIELDS)
    const now = Date.now()
    const secretToken = input.secretToken === undefined ? randomToken(32) : checkImportedSecret('secretToken', input.secretToken)
    const appToken = input.appToken === undefined ? randomToken(18) : checkImportedAppToken(input.appToken)
    const fields = { name: checkName(input.name), callbackPrefix: checkCallbackPrefix(input.callbackPrefix ?? null, this.#allowLoopback), limit: checkLimit(input.limit ?? null) }
    if (input.appToken !== undefined && (await this.#store.getApplication(appToken)) !== undefined) {
      throw new PlatformError('conflict', `An application with the app token ${appToken} exists`)
    }
    const record: ApplicationRecord = {
      appToken,
      name: fields.name,
      secretHash: sha256(secretToken),
      callbackPrefix: fields.callbackPrefix,
      limit: fields.limit,
      createdAt: now,
      updatedAt: now,
    }
    await this.#store.insertApplication(record)
    this.#changed(record.appToken)
    return { appToken: record.appToken, secretToken, application: toApplication(record) }
  }

  /** The application with this app token, or `undefined`. */
  async find(appToken: string): Promise<Application | undefined> {
    const record = await this.#store.getApplication(appToken)
    return record === undefined ? undefined : toApplication(record)
  }

  /** Every application. */
  async list(): Promise<Application[]> {
    return (await this.#store.listApplications()).map(toApplication)
  }

  /**
   * Changes an application's name, callback prefix or limit.
   * @returns the updated application
   * @throws {NotFoundError} `not_found` when no application has this token
   * @throws {TypeError} for invalid values, as {@link register}
   */
  async update(appToken: string, changes: UpdateApplication): Promise<Application> {
    optionsObject('applications.update() changes', changes, APPLICATION_FIELDS)
    const patch: { name?: string; callbackPrefix?: string | null; limit?: number | null; updatedAt: number } = { updatedAt: Date.now() }
    if (changes.name !== undefined) patch.name = checkName(changes.name)
    if (changes.callbackPrefix !== undefined) patch.callbackPrefix = checkCallbackPrefix(changes.callbackPrefix, this.#allowLoopback)
    if (changes.limit !== undefined) patch.limit = checkLimit(changes.limit)
    const record = await this.#store.updateApplication(appToken, patch)
    this.#changed(appToken)
    if (record === undefined) throw noSuchApplication(appToken)
    return toApplication(record)
  }

  /**
   * Issues a new secret token; the old one stops working at once.
   * @returns the new secret
   * @throws {NotFoundError} `not_found` when no application has this token
   */
  async rotateSecret(appToken: string): Promise<string> {
    const secretToken = randomToken(32)
    const record = await this.#store.updateApplication(appToken, { secretHash: sha256(secretToken), updatedAt: Date.now() })
    this.#changed(appToken)
    if (record === undefined) throw noSuchApplication(appToken)
    return secretToken
  }

  /** Whether `secretToken` is this application's secret, compared in constant time. */
  async verifySecret(appToken: string, secretToken: string): Promise<boolean> {
    const record = await this.#store.getApplication(appToken)
    return record !== undefined && secretMatches(secretToken, record.secretHash)
  }

  /**
   * Deletes an application; its token is refused and the access tokens issued to it stop working.
   * @returns `false` when there was no such application
   */
  async delete(appToken: string): Promise<boolean> {
    const deleted = await this.#store.deleteApplication(appToken)
    this.#changed(appToken)
    if (deleted && hasSlice(this.#store, 'oauth')) await this.#store.revokeAccessTokens({ appToken }, Date.now())
    return deleted
  }
}

const APPLICATION_FIELDS = ['name', 'callbackPrefix', 'limit']
/** Registration also takes credentials to import. */
const REGISTER_FIELDS = [...APPLICATION_FIELDS, 'appToken', 'secretToken']

function noSuchApplication(appToken: string): NotFoundError {
  return new NotFoundError(`No application has the app token ${JSON.stringify(appToken.slice(0, 40))}`)
}

function checkImportedAppToken(token: unknown): string {
  if (typeof token !== 'string' || !isPlausibleAppToken(token)) {
    throw new TypeError(`open-data-gate: an imported appToken must be 1 to ${MAX_APP_TOKEN_LENGTH} letters, digits, "-" or "_"`)
  }
  return token
}

/**
 * An imported secret (an app's secret token, an API key's secret) is kept as its SHA-256
 * like a generated one, which is only sound for a high-entropy secret: refuse short ones.
 */
export function checkImportedSecret(field: string, secret: unknown): string {
  // eslint-disable-next-line no-control-regex
  if (typeof secret !== 'string' || secret.length < 16 || secret.length > 512 || /[\s\u0000-\u001f\u007f]/.test(secret)) {
    throw new TypeError(`open-data-gate: an imported ${field} must be 16 to 512 characters without spaces or control characters`)
  }
  assertStorable(`an imported ${field}`, secret)
  return secret
}

function checkName(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '' || name.length > 200) {
    throw new TypeError('open-data-gate: an application name must be a non-empty string of at most 200 characters')
  }
  assertStorable('an application name', name)
  return name.trim()
}

function checkLimit(limit: unknown): number | null {
  if (limit === null) return null
  positiveInteger('limit', limit)
  return limit
}

/**
 * A Callback Prefix must be an absolute https URL without credentials, query or
 * fragment: redirect URIs are matched against its origin exactly and its path by prefix.
 * With `allowLoopback` (`oauth.allowLoopbackCallbacks`), `http://localhost`,
 * `http://127.0.0.1` and `http://[::1]` on any port are accepted too (RFC 8252 §7.3).
 */
export function checkCallbackPrefix(prefix: unknown, allowLoopback = false): string | null {
  if (prefix === null) return null
  const reason = typeof prefix !== 'string' ? 'it is not a string' : callbackPrefixProblem(prefix, allowLoopback)
  if (reason !== undefined) {
    const expected = allowLoopback ? 'an absolute https URL, or http on localhost, 127.0.0.1 or [::1]' : 'an absolute https URL'
    throw new TypeError(`open-data-gate: callbackPrefix must be ${expected} (like https://app.example/oauth/); ${JSON.stringify(prefix)} is not: ${reason}`)
  }
  return prefix as string
}

/** Whether `url` is plain http to a loopback host, the one exception `oauth.allowLoopbackCallbacks` makes. */
export function isLoopbackHttp(url: URL): boolean {
  return url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]')
}

function callbackPrefixProblem(prefix: string, allowLoopback: boolean): string | undefined {
  const unstorable = unstorableCharacter(prefix)
  if (unstorable !== undefined) return `it ${unstorable}`
  if (!URL.canParse(prefix)) return 'it is not an absolute URL'
  const url = new URL(prefix)
  if (url.protocol !== 'https:' && !(allowLoopback && isLoopbackHttp(url))) {
    // A developer's first OAuth client usually runs on localhost: say which option allows it.
    return isLoopbackHttp(url)
      ? 'it does not use https (http on localhost, 127.0.0.1 or [::1] is accepted, for local development only, with the gate option oauth.allowLoopbackCallbacks)'
      : 'it does not use https'
  }
  if (url.username !== '' || url.password !== '') return 'it holds credentials'
  if (url.search !== '' || prefix.includes('?')) return 'it has a query'
  if (url.hash !== '' || prefix.includes('#')) return 'it has a fragment'
  return undefined
}
