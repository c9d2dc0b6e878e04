/**
 * The platform's API key endpoints, for the signed-in user's own keys:
 * `GET`/`POST /api/api_keys`, `GET`/`DELETE /api/api_keys/{keyId}`, with the platform's
 * JSON shapes, list parameters and `API_KEY.*` error codes. Who the user is, and whether
 * the credentials may manage keys at all (only the password or a session), is decided
 * before (`self-service.ts`).
 *
 * @see docs/guides/api-key-endpoints.md
 */
import { issueApiKey, revokeApiKey } from '../management/api-keys.js'
import type { GateUser } from '../pipeline/authenticate.js'
import { PlatformError } from '../errors.js'
import type { GateRequest, GateResponse } from '../http/request.js'
import { jsonResponse } from '../http/responses.js'
import { bodyParams, CONNECTION_CLOSE, queryParams, type BodyProblem } from '../http/params.js'
import type { ApiKeyQuery, ApiKeyRecord, ApiKeySortField, GateStore } from '../store/store.js'
import { API_KEY_ID } from '../rules/credential-shapes.js'

/** The longest key name the gate keeps, as `gate.apiKeys.create` does. */
export const MAX_KEY_NAME_LENGTH = 200
const BODY_LIMIT = 16 * 1024
const PAGE_SIZE_MAX = 100
const LIST_PARAMS = ['limit', 'sortBy', 'sortOrder', 'seek', 'nameSearch', 'includeDeleted']
/** The list parameters that reach the store as text. */
const SEARCH_PARAMS = ['seek', 'nameSearch']

/** The platform's `sortBy` values and the store's fields. */
const SORT_COLUMNS: Readonly<Record<string, ApiKeySortField>> = {
  last_used_at: 'lastUsedAt',
  created_at: 'createdAt',
  deleted_at: 'revokedAt',
  name: 'name',
}

/** Personal data, different for every credential: never cached by anyone but the client. */
const PRIVATE = { 'cache-control': 'private, no-store', vary: 'Authorization, Cookie' }

/** A key as the platform's JSON shows it. */
export interface ApiKeyJson {
  readonly keyName: string
  readonly keyId: string
  /** Only in the create response. */
  readonly keySecret?: string
  /** ISO 8601. */
  readonly createdAtTimestamp: string
  /** ISO 8601; absent on a key never used. Updated at most daily. */
  readonly lastUsedAtTimestamp?: string
  /** ISO 8601; only on deleted keys. */
  readonly deletedAtTimestamp?: string
  /** The same three in seconds since the epoch, as the platform still sends them. */
  readonly createdAt: number
  readonly lastUsedAt?: number
  readonly deletedAt?: number
  readonly owner: { readonly id: string; readonly displayName: string; readonly email: string }
}

type KeyFields = Pick<ApiKeyRecord, 'keyId' | 'name' | 'createdAt' | 'lastUsedAt' | 'revokedAt'>

/** The platform's JSON of a key; `keySecret` only when given (the create response). */
export function apiKeyJson(key: KeyFields, owner: GateUser, keySecret?: string): ApiKeyJson {
  return {
    keyName: key.name,
    keyId: key.keyId,
    ...(keySecret === undefined ? {} : { keySecret }),
    createdAtTimestamp: new Date(key.createdAt).toISOString(),
    ...(key.lastUsedAt === null ? {} : { lastUsedAtTimestamp: new Date(key.lastUsedAt).toISOString() }),
    ...(key.revokedAt === null ? {} : { deletedAtTimestamp: new Date(key.revokedAt).toISOString() }),
    createdAt: seconds(key.createdAt),
    ...(key.lastUsedAt === null ? {} : { lastUsedAt: seconds(key.lastUsedAt) }),
    ...(key.revokedAt === null ? {} : { deletedAt: seconds(key.revokedAt) }),
    owner: { id: owner.id, displayName: owner.displayName, email: owner.email },
  }
}

function seconds(ms: number): number {
  return Math.floor(ms / 1000)
}

/**
 * The store query of a list request's parameters. Defaults: `limit` 10, `sortBy`
 * `created_at`, `sortOrder` `asc`, deleted keys left out.
 * @throws {PlatformError} `API_KEY.INVALID_PAGE_SIZE`, `API_KEY.INVALID_SORT_COLUMN`, or
 * `invalid_request` for a bad `sortOrder` or `includeDeleted`, or a repeated parameter
 */
export function apiKeyListQuery(url: string): ApiKeyQuery {
  const params = queryParams(url)
  const repeated = params.firstDuplicated(LIST_PARAMS)
  if (repeated !== undefined) throw new PlatformError('invalid_request', `${repeated} was sent more than once`)
  // A search or seek longer than any key name can match nothing; one holding a NUL used to make PostgreSQL look down.
  const unstorable = params.unstorable(SEARCH_PARAMS, MAX_KEY_NAME_LENGTH)
  if (unstorable !== undefined) throw new PlatformError('invalid_request', unstorable)
  const limitText = params.get('limit')
  const limit = limitText === undefined ? 10 : /^\d{1,4}$/.test(limitText) ? Number(limitText) : NaN
  if (!(limit >= 1 && limit <= PAGE_SIZE_MAX)) {
    throw new PlatformError('API_KEY.INVALID_PAGE_SIZE', `limit must be a whole number from 1 to ${PAGE_SIZE_MAX}`)
  }
  const sortByText = params.get('sortBy') ?? 'created_at'
  const sortBy = Object.hasOwn(SORT_COLUMNS, sortByText) ? SORT_COLUMNS[sortByText] : undefined
  if (sortBy === undefined) {
    throw new PlatformError('API_KEY.INVALID_SORT_COLUMN', `sortBy must be one of ${Object.keys(SORT_COLUMNS).join(', ')}`)
  }
  const order = (params.get('sortOrder') ?? 'asc').toLowerCase()
  if (order !== 'asc' && order !== 'desc') throw new PlatformError('invalid_request', 'sortOrder must be asc or desc')
  const includeDeleted = params.get('includeDeleted') ?? 'false'
  if (includeDeleted !== 'true' && includeDeleted !== 'false') throw new PlatformError('invalid_request', 'includeDeleted must be true or false')
  return { limit, sortBy, order, after: params.get('seek'), nameSearch: params.get('nameSearch'), includeRevoked: includeDeleted === 'true' }
}

/** The bounds on a user's own keys, from the `apiKeyEndpoints` options. */
export interface ApiKeyEndpointLimits {
  readonly maxActiveKeys: number
  readonly maxKeys: number
  readonly deletedKeyRetentionMs: number
}

/** The endpoints' work, once the user is known and allowed. */
export class ApiKeyEndpoints {
  readonly #store: GateStore
  readonly #limits: ApiKeyEndpointLimits
  readonly #bodyTimeoutMs: number

  constructor(store: GateStore, limits: ApiKeyEndpointLimits, bodyTimeoutMs: number) {
    this.#store = store
    this.#limits = limits
    this.#bodyTimeoutMs = bodyTimeoutMs
  }

  /** `GET /api/api_keys`: one page of the user's keys, sorted and sought in the store. */
  async list(user: GateUser, request: GateRequest): Promise<GateResponse> {
    const keys = await this.#store.listApiKeys(user.id, apiKeyListQuery(request.url))
    return jsonResponse(200, keys.map((key) => apiKeyJson(key, user)), PRIVATE)
  }

  /**
   * `POST /api/api_keys` with `{"keyName": "..."}`: a new key, with its secret, this once.
   * The name's uniqueness among the user's active keys and both caps are checked by the
   * store in the same atomic step as the insert: creates racing each other cannot pass them together.
   */
  async create(user: GateUser, request: GateRequest): Promise<GateResponse> {
    const body = await bodyParams(request, BODY_LIMIT, this.#bodyTimeoutMs)
    if (typeof body === 'string') throw bodyError(body)
    if (body.isDuplicated('keyName')) throw new PlatformError('invalid_request', 'keyName was sent more than once')
    const unstorable = body.unstorable(['keyName'])
    if (unstorable !== undefined) throw new PlatformError('invalid_request', unstorable)
    const name = body.get('keyName')?.trim() ?? ''
    if (name === '') throw new PlatformError('API_KEY.MISSING_FIELD', 'keyName is required')
    if (name.length > MAX_KEY_NAME_LENGTH) throw new PlatformError('API_KEY.NAME_TOO_LONG', `keyName must be at most ${MAX_KEY_NAME_LENGTH} characters`)
    const { maxActiveKeys, maxKeys } = this.#limits
    const issued = await issueApiKey(this.#store, user.id, name, { maxActive: maxActiveKeys, maxTotal: maxKeys })
    switch (issued) {
      case 'name-taken':
        throw new PlatformError('API_KEY.NAME_TAKEN', 'You already have an API key with this name')
      case 'active-limit':
        throw new PlatformError('API_KEY.TOKEN_LIMIT_REACHED', `You have ${maxActiveKeys} active API keys, the most allowed; delete one first`)
      case 'total-limit':
        throw new PlatformError(
          'API_KEY.TOKEN_LIMIT_REACHED',
          `You have made ${maxKeys} API keys in the last ${Math.round(this.#limits.deletedKeyRetentionMs / 86_400_000)} days, deleted ones included, the most allowed`,
        )
      default:
        return jsonResponse(200, apiKeyJson(issued.apiKey, user, issued.keySecret), PRIVATE)
    }
  }

  /** `GET /api/api_keys/{keyId}`: one of the user's keys (a deleted one with `deletedAtTimestamp`). */
  async get(user: GateUser, keyId: string): Promise<GateResponse> {
    return jsonResponse(200, apiKeyJson(await this.#own(user, keyId), user), PRIVATE)
  }

  /** `DELETE /api/api_keys/{keyId}`: the key stops working at once and stays listable with `includeDeleted`. */
  async delete(user: GateUser, keyId: string): Promise<GateResponse> {
    const key = await this.#own(user, keyId)
    const deleted = key.revokedAt === null ? await revokeApiKey(this.#store, keyId, this.#limits.deletedKeyRetentionMs) : undefined
    // Revoked already, or by a request racing this one: only one of them deletes it.
    if (deleted === undefined) throw new PlatformError('API_KEY.TOKEN_DELETED', 'This API key was deleted already')
    return jsonResponse(200, apiKeyJson(deleted, user), PRIVATE)
  }

  /** The user's key, or `API_KEY.NOT_FOUND`, the same for another user's key as for none. */
  async #own(user: GateUser, keyId: string): Promise<ApiKeyRecord> {
    const key = API_KEY_ID.test(keyId) ? await this.#store.getApiKey(keyId) : undefined
    if (key === undefined || key.userId !== user.id) throw notFound()
    return key
  }
}

function notFound(): PlatformError {
  return new PlatformError('API_KEY.NOT_FOUND', 'No API key with this id')
}

/** The error for a request body that could not be read as parameters. */
export function bodyError(problem: BodyProblem): PlatformError {
  switch (problem) {
    case 'too-large':
      return new PlatformError('payload_too_large', 'The request body is too large', { headers: CONNECTION_CLOSE })
    case 'timeout':
      return new PlatformError('request_timeout', 'The request body did not arrive in time', { headers: CONNECTION_CLOSE })
    case 'unsupported-type':
      return new PlatformError('unsupported_media_type', 'Send the body as application/json')
    case 'malformed':
      return new PlatformError('invalid_request', 'The body must be a JSON object whose values are strings')
    case 'unreadable':
      return new PlatformError('invalid_request', 'The request body could not be read', { headers: CONNECTION_CLOSE })
  }
}
