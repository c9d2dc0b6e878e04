/**
 * How the Redis store writes records: each kind of record is a hash whose fields follow
 * a schema (a `null` is an absent field, numbers are decimal strings, lists are JSON), a
 * grant is one string, and an API key's hash keeps two extra fields for the scripts that
 * search and sort a user's keys.
 */
import type { GrantRecord } from '../store.js'

/** A hash as Redis gives it back: an object (HGETALL) or a flat array (from a script). */
export type RawHash = Record<string, string> | string[]

/** How a record's fields are written in a hash. A `null` is an absent field. */
export type FieldKind = 'string' | 'number' | 'string?' | 'number?' | 'json'
export type Schema = Readonly<Record<string, FieldKind>>

export const APPLICATION: Schema = {
  appToken: 'string',
  name: 'string',
  secretHash: 'string',
  callbackPrefix: 'string?',
  limit: 'number?',
  ownerId: 'string?',
  previousSecretHash: 'string?',
  previousSecretExpiresAt: 'number?',
  suspendedAt: 'number?',
  suspensionReason: 'string?',
  plan: 'string?',
  createdAt: 'number',
  updatedAt: 'number',
}
export const USER: Schema = {
  id: 'string',
  username: 'string',
  usernameSkeleton: 'string?',
  screenName: 'string',
  displayName: 'string',
  email: 'string',
  rights: 'json',
  passwordHash: 'string?',
  createdAt: 'number',
  updatedAt: 'number',
}
export const API_KEY: Schema = {
  keyId: 'string',
  userId: 'string',
  name: 'string',
  secretHash: 'string',
  createdAt: 'number',
  lastUsedAt: 'number?',
  revokedAt: 'number?',
}
export const ACCESS_TOKEN: Schema = {
  tokenHash: 'string',
  userId: 'string',
  appToken: 'string',
  codeHash: 'string?',
  createdAt: 'number',
  expiresAt: 'number',
  revokedAt: 'number?',
}
export const CODE: Schema = {
  codeHash: 'string',
  appToken: 'string',
  userId: 'string',
  redirectUri: 'string',
  codeChallenge: 'string?',
  createdAt: 'number',
  expiresAt: 'number',
  usedAt: 'number?',
}
export const SESSION: Schema = { sessionHash: 'string', userId: 'string', passwordStamp: 'string', createdAt: 'number', expiresAt: 'number' }

/** Field, value pairs to HSET; `null` fields are left out. */
export function encode(schema: Schema, record: object): string[] {
  const out: string[] = []
  for (const [field, kind] of Object.entries(schema)) {
    const value = (record as Record<string, unknown>)[field]
    if (value === null || value === undefined) continue
    out.push(field, kind === 'json' ? JSON.stringify(value) : String(value))
  }
  return out
}

/**
 * The pairs to set and the fields to delete for a patch, as PATCH takes them (how many
 * pairs, the pairs, the fields), with `alsoSet` pairs and `alsoUnset` fields the store adds
 * (a new version, search fields).
 */
export function encodePatch(schema: Schema, patch: object, alsoSet: readonly string[] = [], alsoUnset: readonly string[] = []): string[] {
  const set: string[] = [...alsoSet]
  const unset: string[] = [...alsoUnset]
  for (const [field, value] of Object.entries(patch)) {
    const kind = schema[field]
    if (kind === undefined || value === undefined) continue
    if (value === null) unset.push(field)
    else set.push(field, kind === 'json' ? JSON.stringify(value) : String(value))
  }
  return [String(set.length / 2), ...set, ...unset]
}

/** A schema ready for {@link decode}: each field's kind, and a record of all its fields set to null (the shape every decoded record shares). */
interface Decoder {
  readonly kinds: ReadonlyMap<string, FieldKind>
  readonly empty: Readonly<Record<string, null>>
}
const decoders = new WeakMap<Schema, Decoder>()
function decoderOf(schema: Schema): Decoder {
  let decoder = decoders.get(schema)
  if (decoder === undefined) {
    const empty: Record<string, null> = {}
    for (const field of Object.keys(schema)) empty[field] = null
    decoder = { kinds: new Map(Object.entries(schema)), empty }
    decoders.set(schema, decoder)
  }
  return decoder
}

function decodeValue(kind: FieldKind, value: string): unknown {
  return kind === 'json' ? JSON.parse(value) : kind === 'number' || kind === 'number?' ? Number(value) : value
}

/**
 * A record from its hash: a flat [field, value, …] array (HGETALL inside a script) or an
 * object (ioredis's `hgetall`). Every field of the schema is present, `null` where the hash
 * has none; fields the schema does not name are ignored. `undefined` when no field is there.
 */
export function decode<T>(schema: Schema, raw: RawHash | null | undefined): T | undefined {
  if (raw === null || raw === undefined) return undefined
  const { kinds, empty } = decoderOf(schema)
  // A copy of one template: every record of a schema has the same shape.
  const out: Record<string, unknown> = { ...empty }
  let any = false
  if (Array.isArray(raw)) {
    for (let i = 0; i < raw.length; i += 2) {
      const kind = kinds.get(raw[i] as string)
      if (kind === undefined) continue
      any = true
      out[raw[i] as string] = decodeValue(kind, raw[i + 1] as string)
    }
  } else {
    for (const [field, kind] of kinds) {
      const value = (raw as Record<string, string>)[field]
      if (value === undefined || !Object.hasOwn(raw, field)) continue
      any = true
      out[field] = decodeValue(kind, value)
    }
  }
  return any ? (out as T) : undefined
}

/** A record from a script's reply that is its flat hash as one JSON string, or nil (`READ_HASH`, `USER_BY_NAME`). */
export function decodeJsonHash<T>(schema: Schema, reply: unknown): T | undefined {
  // Nil is null in RESP2 and false in RESP3 (a client with `protocol: 3`).
  return typeof reply === 'string' ? decode<T>(schema, JSON.parse(reply) as RawHash) : undefined
}

/** A grant from its stored form, "firstAuthorizedAt:lastUsedAt". */
export function grant(userId: string, appToken: string, value: string): GrantRecord {
  const [first, last] = value.split(':')
  return { userId, appToken, firstAuthorizedAt: Number(first), lastUsedAt: Number(last) }
}

/**
 * The extra fields a key's hash keeps for the scripts: the name in lower case (a search
 * compares UTF-8 bytes of it, a substring test as JavaScript's), and the name as 4 hex
 * digits per UTF-16 code unit, whose byte order is the code-unit order names sort by.
 */
export function searchFields(name: string): string[] {
  let hex = ''
  for (let i = 0; i < name.length; i++) hex += name.charCodeAt(i).toString(16).padStart(4, '0')
  return ['lname', name.toLowerCase(), 'nkey', hex]
}
