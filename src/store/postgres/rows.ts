/**
 * The PostgreSQL store's tables as the store reads them: the columns of each table, the
 * patchable fields and their columns, the sort expressions of the API key pages, and the
 * mapping of rows to records.
 */
import type {
  AccessTokenRecord,
  ApiKeyPatch,
  ApiKeyQuery,
  ApiKeyRecord,
  ApplicationPatch,
  ApplicationRecord,
  AuthorizationCodeRecord,
  GrantRecord,
  SessionRecord,
  UserPatch,
  UserRecord,
} from '../store.js'
import type { Row } from './pool.js'

export const APPLICATION_COLUMNS = 'app_token, name, secret_hash, callback_prefix, rate_limit, owner_id, previous_secret_hash, previous_secret_expires_at, suspended_at, suspension_reason, plan, created_at, updated_at'
export const USER_COLUMNS = 'id, username, username_skeleton, screen_name, display_name, email, rights, password_hash, created_at, updated_at'
export const API_KEY_COLUMNS = 'key_id, user_id, name, secret_hash, created_at, last_used_at, revoked_at'
export const TOKEN_COLUMNS = 'token_hash, user_id, app_token, code_hash, created_at, expires_at, revoked_at'
export const CODE_COLUMNS = 'code_hash, app_token, user_id, redirect_uri, code_challenge, created_at, expires_at, used_at'
export const SESSION_COLUMNS = 'session_hash, user_id, password_stamp, created_at, expires_at'
export const GRANT_COLUMNS = 'user_id, app_token, first_authorized_at, last_used_at'

/** Patchable fields and their columns: nothing else ever reaches an UPDATE. */
export const APPLICATION_PATCH: Record<keyof ApplicationPatch, string> = {
  name: 'name',
  secretHash: 'secret_hash',
  previousSecretHash: 'previous_secret_hash',
  previousSecretExpiresAt: 'previous_secret_expires_at',
  suspendedAt: 'suspended_at',
  suspensionReason: 'suspension_reason',
  plan: 'plan',
  callbackPrefix: 'callback_prefix',
  limit: 'rate_limit',
  updatedAt: 'updated_at',
}
export const USER_PATCH: Record<keyof UserPatch, string> = {
  screenName: 'screen_name',
  displayName: 'display_name',
  email: 'email',
  rights: 'rights',
  passwordHash: 'password_hash',
  updatedAt: 'updated_at',
}
export const API_KEY_PATCH: Record<keyof ApiKeyPatch, string> = {
  name: 'name',
  secretHash: 'secret_hash',
  lastUsedAt: 'last_used_at',
  revokedAt: 'revoked_at',
}
/** The sort value of each API key order, as indexed by migration 2 (a missing time is 0). */
export const API_KEY_SORT: Record<ApiKeyQuery['sortBy'], string> = {
  createdAt: 'created_at',
  lastUsedAt: 'COALESCE(last_used_at, 0)',
  revokedAt: 'COALESCE(revoked_at, 0)',
  name: '(name COLLATE "C")',
}

/**

/** `a.x, a.y` (with an alias prefix: `a.x AS p_x`). */
export function prefixed(alias: string, columns: string, as?: string): string {
  return columns
    .split(', ')
    .map((column) => (as === undefined ? `${alias}.${column}` : `${alias}.${column} AS ${as}${column}`))
    .join(', ')
}

export function sortOf(alias: string, sortBy: ApiKeyQuery['sortBy']): string {
  switch (sortBy) {
    case 'createdAt':
      return `${alias}.created_at`
    case 'lastUsedAt':
      return `COALESCE(${alias}.last_used_at, 0)`
    case 'revokedAt':
      return `COALESCE(${alias}.revoked_at, 0)`
    case 'name':
      return `(${alias}.name COLLATE "C")`
  }
}

// Rows to records. bigint columns arrive as strings (pg keeps 64-bit integers exact);
// every time here is far below 2^53, so Number is exact.

export function optionalNumber(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value)
}

export function toApplication(row: Row): ApplicationRecord {
  return {
    appToken: row.app_token as string,
    name: row.name as string,
    secretHash: row.secret_hash as string,
    callbackPrefix: row.callback_prefix as string | null,
    limit: optionalNumber(row.rate_limit),
    ownerId: row.owner_id as string | null,
    previousSecretHash: row.previous_secret_hash as string | null,
    previousSecretExpiresAt: optionalNumber(row.previous_secret_expires_at),
    suspendedAt: optionalNumber(row.suspended_at),
    suspensionReason: (row.suspension_reason as string | null | undefined) ?? null,
    plan: (row.plan as string | null | undefined) ?? null,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  }
}

export function toUser(row: Row): UserRecord {
  return userFrom(row, '')
}

/** The user columns of a token or key joined with its user, prefixed `u_`. */
export function joinedUser(row: Row): UserRecord {
  return userFrom(row, 'u_')
}

/** No default prefix: a mapper handed to `Array.map` would take the index for one. */
function userFrom(row: Row, p: string): UserRecord {
  return {
    id: row[`${p}id`] as string,
    username: row[`${p}username`] as string,
    usernameSkeleton: row[`${p}username_skeleton`] as string | null,
    screenName: row[`${p}screen_name`] as string,
    displayName: row[`${p}display_name`] as string,
    email: row[`${p}email`] as string,
    rights: row[`${p}rights`] as string[],
    passwordHash: row[`${p}password_hash`] as string | null,
    createdAt: Number(row[`${p}created_at`]),
    updatedAt: Number(row[`${p}updated_at`]),
  }
}

export function toApiKey(row: Row): ApiKeyRecord {
  return {
    keyId: row.key_id as string,
    userId: row.user_id as string,
    name: row.name as string,
    secretHash: row.secret_hash as string,
    createdAt: Number(row.created_at),
    lastUsedAt: optionalNumber(row.last_used_at),
    revokedAt: optionalNumber(row.revoked_at),
  }
}

export function toAccessToken(row: Row): AccessTokenRecord {
  return {
    tokenHash: row.token_hash as string,
    userId: row.user_id as string,
    appToken: row.app_token as string,
    codeHash: row.code_hash as string | null,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    revokedAt: optionalNumber(row.revoked_at),
  }
}

export function toCode(row: Row): AuthorizationCodeRecord {
  return {
    codeHash: row.code_hash as string,
    appToken: row.app_token as string,
    userId: row.user_id as string,
    redirectUri: row.redirect_uri as string,
    codeChallenge: row.code_challenge as string | null,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    usedAt: optionalNumber(row.used_at),
  }
}

export function toSession(row: Row): SessionRecord {
  return {
    sessionHash: row.session_hash as string,
    userId: row.user_id as string,
    passwordStamp: row.password_stamp as string,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
  }
}

export function toGrant(row: Row): GrantRecord {
  return {
    userId: row.user_id as string,
    appToken: row.app_token as string,
    firstAuthorizedAt: Number(row.first_authorized_at),
    lastUsedAt: Number(row.last_used_at),
  }
}
