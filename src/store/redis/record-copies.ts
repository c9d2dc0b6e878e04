/**
 * The records a single-server RedisStore's request lookups have read (`LOOKUP_REQUEST`),
 * kept so that the script need not send them again: the client says which copy it holds,
 * the script reads what decides the request and answers "your copy is it" or sends the
 * record whole (see `LOOKUP_REQUEST` in `./scripts.ts` for why that is exact). The copies
 * only save the server and the client the reading, encoding and decoding of records; no
 * decision is ever made on them alone.
 *
 * Bounded: at most {@link RECORD_COPIES} tokens, as many API keys and as many users (LRU);
 * a record the script finds gone is dropped, and a made-up credential is never kept, so a
 * flood of them evicts nothing. Tokens are kept by their hash, never by the token.
 */
import { randomBytes } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import type { AccessTokenRecord, ApiKeyRecord, UserRecord } from '../store.js'
import { ACCESS_TOKEN, API_KEY, decode, USER, type RawHash } from './codec.js'

/** How many tokens, how many API keys and how many users each store keeps copies of. */
export const RECORD_COPIES = 10_000

/** A copy of a hash with a version field `v`, and the fields compared with it. */
interface Versioned<T> {
  readonly v: string
  /** A user's updatedAt, a key's secretHash: what a writer that knows nothing of `v` changes. */
  readonly also: string
  readonly record: T
}

/**
 * A new version for a hash the lookup script compares (`v`): every write of a user's or an
 * API key's hash sets one, in the same script as the write. Random (72 bits), so that a
 * hash deleted and made again never has a version a copy was taken at.
 */
export function newVersion(): string {
  return randomBytes(9).toString('base64url')
}

/** The copies one lookup was sent with: what the script's `=` refers to, whatever happens to the cache meanwhile. */
export interface HeldCopies {
  token?: AccessTokenRecord | undefined
  key?: Versioned<ApiKeyRecord> | undefined
  user?: Versioned<UserRecord> | undefined
}

export class RecordCopies {
  readonly #tokens = new LRUCache<string, AccessTokenRecord>({ max: RECORD_COPIES })
  readonly #keys = new LRUCache<string, Versioned<ApiKeyRecord>>({ max: RECORD_COPIES })
  readonly #users = new LRUCache<string, Versioned<UserRecord>>({ max: RECORD_COPIES })

  /** How many copies are kept, of each kind (for tests). */
  get sizes(): { tokens: number; keys: number; users: number } {
    return { tokens: this.#tokens.size, keys: this.#keys.size, users: this.#users.size }
  }

  /**
   * The copies a lookup of this credential is sent with, and the script's arguments for
   * them: the record's two (for a key its secretHash and v; for a token '' and its
   * expiresAt, when the copy is live at `now` by it), the user's two (v, updatedAt).
   */
  hold(kind: 't' | 'k' | 'u', id: string, now: number, held: HeldCopies): [string, string, string, string] {
    let userId: string | undefined
    const args: [string, string, string, string] = ['', '', '', '']
    if (kind === 't') {
      const token = (held.token = this.#tokens.get(id))
      if (token !== undefined) {
        // Expired by the copy's expiry: the script decides on the record read whole.
        if (token.expiresAt > now) args[1] = String(token.expiresAt)
        userId = token.userId
      }
    } else if (kind === 'k') {
      const key = (held.key = this.#keys.get(id))
      if (key !== undefined) {
        args[0] = key.also
        args[1] = key.v
        userId = key.record.userId
      }
    } else userId = id
    if (userId !== undefined) {
      const user = (held.user = this.#users.get(userId))
      if (user !== undefined) {
        args[2] = user.v
        args[3] = user.also
      }
    }
    return args
  }

  /** The token the script answered with `flag` ('-', '=', '+'), and the copy kept from now on. */
  token(tokenHash: string, flag: string, held: AccessTokenRecord | undefined, revokedAt: string, whole: RawHash | undefined): AccessTokenRecord | undefined {
    if (flag === '=') {
      const revoked = revokedAt === '-' ? null : Number(revokedAt)
      if (held!.revokedAt === revoked) return held
      // Revoked since the copy was taken: a revocation is never undone, so the copy follows.
      const token = { ...held!, revokedAt: revoked }
      this.#tokens.set(tokenHash, token)
      return token
    }
    if (flag === '-') {
      this.#tokens.delete(tokenHash)
      return undefined
    }
    const token = decode<AccessTokenRecord>(ACCESS_TOKEN, whole)
    if (token === undefined) this.#tokens.delete(tokenHash)
    else this.#tokens.set(tokenHash, token)
    return token
  }

  apiKey(keyId: string, flag: string, held: Versioned<ApiKeyRecord> | undefined, whole: RawHash | undefined): ApiKeyRecord | undefined {
    if (flag === '=') return held!.record
    const key = flag === '-' ? undefined : decode<ApiKeyRecord>(API_KEY, whole)
    keep(this.#keys, keyId, key, whole, key?.secretHash)
    return key
  }

  user(userId: string | undefined, flag: string, held: Versioned<UserRecord> | undefined, whole: RawHash | undefined): UserRecord | undefined {
    if (flag === '=') return held!.record
    const user = flag === '-' ? undefined : decode<UserRecord>(USER, whole)
    const id = user?.id ?? userId
    if (id !== undefined) keep(this.#users, id, user, whole, user === undefined ? undefined : String(user.updatedAt))
    return user
  }
}

/** Keeps a record read whole with its version; a record without one (written before versions) or gone is not kept. */
function keep<T>(cache: LRUCache<string, Versioned<T>>, id: string, record: T | undefined, whole: RawHash | undefined, also: string | undefined): void {
  const v = record === undefined ? undefined : versionOf(whole)
  if (v === undefined || also === undefined) cache.delete(id)
  else cache.set(id, { v, also, record: record as T })
}

function versionOf(raw: RawHash | undefined): string | undefined {
  if (raw === undefined) return undefined
  if (!Array.isArray(raw)) return raw.v
  for (let i = 0; i < raw.length; i += 2) if (raw[i] === 'v') return raw[i + 1]
  return undefined
}
