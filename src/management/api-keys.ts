/**
 * API keys: `gate.apiKeys`. A key id and secret are used as HTTP Basic credentials in
 * place of a username and password. The secret is shown once, at creation or rotation,
 * and stored as its SHA-256. Keys have no scopes: a key acts with its user's rights.
 *
 * @see docs/platform-rules.md "HTTP Basic" 2-3, "API keys"
 */
import { checkImportedSecret } from './application-fields.js'
import { NotFoundError, PlatformError } from '../errors.js'
import { optionsObject } from '../util/validate.js'
import { randomId, randomToken, sha256 } from '../secrets/tokens.js'
import { assertStorable } from '../rules/storable.js'
import { API_KEY_ID } from '../rules/credential-shapes.js'
import { noSuchUser } from './users.js'
import type { ApiKeyInsertResult, ApiKeyLimits, ApiKeyRecord, GateStore } from '../store/store.js'

/** An API key as the gate shows it: everything but the secret's hash. */
export interface ApiKey {
  readonly keyId: string
  readonly userId: string
  readonly name: string
  readonly createdAt: number
  readonly lastUsedAt: number | null
  readonly revokedAt: number | null
}

/** What {@link ApiKeys.create} takes. */
export interface CreateApiKey {
  /** What the key is for, shown in listings. 1 to 200 characters. */
  name: string
  /**
   * Import: keep a key id already in use elsewhere (the platform's, say): 25 lower-case
   * letters and digits, not taken. Default: a new random id.
   */
  keyId?: string
  /** Import: keep the key's existing secret (stored hashed). 16 to 512 characters. Default: a new random secret. */
  keySecret?: string
}

/** A new or rotated key: the only time its secret is visible. */
export interface IssuedApiKey {
  readonly keyId: string
  readonly keySecret: string
  readonly apiKey: ApiKey
}

function toApiKey(record: ApiKeyRecord): ApiKey {
  return {
    keyId: record.keyId,
    userId: record.userId,
    name: record.name,
    createdAt: record.createdAt,
    lastUsedAt: record.lastUsedAt,
    revokedAt: record.revokedAt,
  }
}

/** `gate.apiKeys`: create, list, rotate and revoke a user's API keys. */
export class ApiKeys {
  readonly #store: GateStore
  readonly #retentionMs: number

  /** `deletedKeyRetentionMs`: how long the store keeps a revoked key before it purges it. */
  constructor(store: GateStore, deletedKeyRetentionMs: number) {
    this.#store = store
    this.#retentionMs = deletedKeyRetentionMs
  }

  /**
   * Creates a key for a user. One key per app or job lets each be revoked or rotated alone.
   * @throws {TypeError} for a bad name, an unknown field, or an imported `keyId`/`keySecret` of the wrong form
   * @throws {NotFoundError} `not_found` when there is no such user
   * @throws {PlatformError} `conflict` when an imported `keyId` is taken
   * @example
   * const { keyId, keySecret } = await gate.apiKeys.create(user.id, { name: 'nightly ETL' })
   * // curl -u "$keyId:$keySecret" -H "X-App-Token: $APP_TOKEN" https://data.example/resource/abcd-1234.json
   */
  async create(userId: string, input: CreateApiKey): Promise<IssuedApiKey> {
    if (typeof input === 'object' && input !== null) optionsObject('apiKeys.create() input', input, ['name', 'keyId', 'keySecret'])
    const name = typeof input?.name === 'string' ? input.name.trim() : ''
    if (name === '' || name.length > 200) throw new TypeError('open-data-gate: an API key name must be a non-empty string of at most 200 characters')
    assertStorable('an API key name', name)
    if (input.keyId !== undefined && (typeof input.keyId !== 'string' || !API_KEY_ID.test(input.keyId))) {
      throw new TypeError('open-data-gate: an imported keyId must be 25 lower-case letters and digits, as the platform\'s are (how Basic credentials tell a key from a username)')
    }
    const keySecret = input.keySecret === undefined ? randomToken(32) : checkImportedSecret('keySecret', input.keySecret)
    if ((await this.#store.getUser(userId)) === undefined) throw noSuchUser(userId)
    if (input.keyId !== undefined && (await this.#store.getApiKey(input.keyId)) !== undefined) {
      throw new PlatformError('conflict', `An API key with the id ${input.keyId} exists`)
    }
    const issued = await issueApiKey(this.#store, userId, name, undefined, { keyId: input.keyId, keySecret })
    if (typeof issued === 'string') throw new Error(`open-data-gate: the store refused an unlimited insert (${issued})`)
    return issued
  }

  /** A user's keys, revoked ones included (with `revokedAt`), oldest first. */
  async list(userId: string): Promise<ApiKey[]> {
    const records = await this.#store.listApiKeys(userId)
    return records.map(toApiKey).sort((a, b) => a.createdAt - b.createdAt)
  }

  /** The key with this id, revoked or not, or `undefined`. */
  async find(keyId: string): Promise<ApiKey | undefined> {
    const record = await this.#store.getApiKey(keyId)
    return record === undefined ? undefined : toApiKey(record)
  }

  /**
   * Revokes a key: it stops working at once and stays listable as revoked until the store
   * purges it (`apiKeyEndpoints.deletedKeyRetentionMs`, default 30 days).
   * @returns `false` when there is no such key or it was already revoked
   */
  async revoke(keyId: string): Promise<boolean> {
    return (await revokeApiKey(this.#store, keyId, this.#retentionMs)) !== undefined
  }

  /**
   * Gives a key a new secret; the old secret stops working at once, the key id stays.
   * @returns the new credentials
   * @throws {NotFoundError} `not_found` when there is no such key, or it is revoked (a revoked key stays revoked)
   */
  async rotate(keyId: string): Promise<IssuedApiKey> {
    const record = await this.#store.getApiKey(keyId)
    if (record === undefined || record.revokedAt !== null) throw noSuchKey(keyId)
    const keySecret = randomToken(32)
    const updated = await this.#store.updateApiKey(keyId, { secretHash: sha256(keySecret) })
    if (updated === undefined) throw noSuchKey(keyId)
    return { keyId, keySecret, apiKey: toApiKey(updated) }
  }
}

/**
 * Makes a key's id and secret and saves it, within `limits` when given (a user creating
 * their own key): the store checks the name and the caps in the same atomic step.
 * @returns the new key, or why the store refused it
 */
export async function issueApiKey(
  store: GateStore,
  userId: string,
  name: string,
  limits: ApiKeyLimits | undefined,
  imported: { keyId?: string | undefined; keySecret?: string | undefined } = {},
): Promise<IssuedApiKey | Exclude<ApiKeyInsertResult, 'created'>> {
  const keySecret = imported.keySecret ?? randomToken(32)
  const record: ApiKeyRecord = {
    keyId: imported.keyId ?? randomId(25),
    userId,
    name,
    secretHash: sha256(keySecret),
    createdAt: Date.now(),
    lastUsedAt: null,
    revokedAt: null,
  }
  const result = await store.insertApiKey(record, limits)
  if (result === 'created') return { keyId: record.keyId, keySecret, apiKey: toApiKey(record) }
  if (typeof result !== 'string') throw new TypeError(`open-data-gate: the store's insertApiKey must answer 'created' or why it refused, got ${String(result)}`)
  return result
}

/**
 * Revokes a key now, once (a compare-and-set in the store), to be purged after `retentionMs`.
 * @returns the revoked key, or `undefined` when it was unknown or revoked already
 */
export async function revokeApiKey(store: GateStore, keyId: string, retentionMs: number): Promise<ApiKeyRecord | undefined> {
  const now = Date.now()
  return await store.revokeApiKey(keyId, now, now + retentionMs)
}

function noSuchKey(keyId: string): NotFoundError {
  return new NotFoundError(`No active API key has the id ${JSON.stringify(keyId.slice(0, 40))}`)
}
