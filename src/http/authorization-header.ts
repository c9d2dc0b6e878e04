/**
 * Reads the credentials of a request from its `Authorization` header, exactly:
 * - `Basic <base64(user-id ":" password)>` (RFC 7617): a guarded base64 decode, strict
 *   UTF-8, the first `:` splits, the password may contain `:`, no control characters.
 * - `OAuth <token>` (the platform's scheme) and `Bearer <token>` (RFC 6750 §2.1) with the
 *   b64token syntax. An access token is read from this header only, never from a query
 *   parameter or a body.
 *
 * Other schemes are left alone: they may belong to the host application. (Over plain http,
 * {@link credentialsSentIn} looks further, for anything to revoke.)
 *
 * @see https://www.rfc-editor.org/rfc/rfc7617#section-2
 * @see https://www.rfc-editor.org/rfc/rfc6750#section-2.1
 */
import { isUtf8 } from 'node:buffer'
import { PlatformError } from '../errors.js'
import type { GateRequest } from './request.js'
import { readsAs } from './params.js'
import { API_KEY_ID } from '../rules/credential-shapes.js'

/** The credentials a request presents. */
export type Credentials =
  | { readonly kind: 'basic'; readonly user: string; readonly password: string }
  | { readonly kind: 'token'; readonly scheme: 'oauth' | 'bearer'; readonly token: string }

const MAX_CREDENTIALS_LENGTH = 8192
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/

const TWO_HEADERS = () => new PlatformError('invalid_request', 'The request carries more than one Authorization header; send exactly one set of credentials')

/**
 * The credentials in the request's `Authorization` header, or `undefined` when it has
 * none the gate handles.
 * @throws {PlatformError} `invalid_request` (400) for a malformed header, or for more than one
 */
export function readCredentials(request: GateRequest, acceptBearer: boolean): Credentials | undefined {
  const all = request.authorization
  if (all !== undefined && all.length > 1) throw TWO_HEADERS()
  const header = request.headers.authorization
  const value = typeof header === 'string' ? header : header?.[0]
  if (value === undefined || value === '') return undefined
  if (value.length > MAX_CREDENTIALS_LENGTH) throw new PlatformError('invalid_request', 'The Authorization header is too long')

  const scheme = schemeOf(value)
  if (scheme !== 'basic' && scheme !== 'oauth' && (scheme !== 'bearer' || !acceptBearer)) return undefined
  // Exactly one space, then the credentials: a tab, two spaces or a comma after a scheme of
  // ours is refused, never skipped over, since a parser behind the gate might read it otherwise.
  const rest = value.slice(scheme.length + 1)
  if (value[scheme.length] !== ' ' || rest === '' || /^\s|\s$/.test(rest)) {
    throw new PlatformError('invalid_request', `Malformed Authorization header: send the scheme, one space, and the credentials`)
  }
  // A Fetch-standard host (Bun, Deno, undici) hands over repeated headers joined with ", ";
  // no credentials of these schemes hold a comma, so this is two headers, told as such.
  if (rest.includes(', ')) throw TWO_HEADERS()
  switch (scheme) {
    case 'basic':
      return parseBasic(rest)
    case 'oauth':
      return { kind: 'token', scheme: 'oauth', token: parseToken(rest, 'OAuth') }
    default:
      return { kind: 'token', scheme: 'bearer', token: parseToken(rest, 'Bearer') }
  }
}

/** The auth-scheme (RFC 9110 §11.1: a token) at the start of the header, in lower case. */
function schemeOf(value: string): string {
  const end = value.search(/[^!#$%&'*+.^_`|~0-9A-Za-z-]/)
  return (end === -1 ? value : value.slice(0, end)).toLowerCase()
}

function parseBasic(encoded: string): Credentials {
  const malformed = (why: string) =>
    new PlatformError('invalid_request', `Malformed Basic credentials: ${why}. Send "Authorization: Basic " followed by base64 of "user:password"`)
  if (!BASE64.test(encoded) || encoded.length % 4 === 1) throw malformed('not base64')
  const bytes = Buffer.from(encoded, 'base64')
  if (!isUtf8(bytes)) throw malformed('not UTF-8')
  const decoded = bytes.toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon === -1) throw malformed('no ":" between user and password')
  if (CONTROL.test(decoded)) throw malformed('control characters')
  return { kind: 'basic', user: decoded.slice(0, colon), password: decoded.slice(colon + 1) }
}

function parseToken(token: string, scheme: string): string {
  if (!B64TOKEN.test(token)) {
    throw new PlatformError('invalid_request', `Malformed access token: send "Authorization: ${scheme} <token>" with the token exactly as issued`)
  }
  return token
}

/** At most this many candidates per request are looked up: each costs a store read. */
const MAX_CANDIDATES = 8
/** At most this many secrets are tried against one API key (each a SHA-256 and a compare, no read). */
const MAX_SECRETS_PER_KEY = 4
/** Shorter words in a malformed header (`token` in `OAuth token="…"`) cannot be a token of ours. */
const MIN_TOKEN_LENGTH = 16
/**
 * A run of b64token characters (RFC 6750): what is left of a token whatever a client put
 * around it (`Bearer:<t>`, `OAuth '<t>'`, `<t>` in angle brackets), and of a Basic payload.
 */
const TOKEN_RUN = /[A-Za-z0-9\-._~+/]+=*/g
/** An API key id, a colon and a secret, written out instead of base64-encoded (`Basic <id>:<secret>`). */
const WRITTEN_OUT_KEY = /(?<![A-Za-z0-9])([a-z0-9]{25}):(\S+)/g
/** What may close a secret written out in a header: quotes, brackets, a separator. */
const TRAILING_PUNCTUATION = /["'>)\],;]+$/

/** An API key id and a secret seen beside it. */
export interface SentApiKey {
  readonly keyId: string
  /** The secrets seen with that id: each is compared with the key's hash, none is trusted. */
  readonly secrets: readonly string[]
}

/** What a request may carry in clear: candidates, none of them verified yet. */
export interface SentInClear {
  /** Strings that may be access tokens (looked up by their hash). */
  readonly tokens: readonly string[]
  /** API key ids with a secret (each key's secret hash is compared; no password is ever tried). */
  readonly apiKeys: readonly SentApiKey[]
}

/** Nothing that could be a credential. */
export const NOTHING_SENT: SentInClear = Object.freeze({ tokens: Object.freeze([]), apiKeys: Object.freeze([]) })

/**
 * Every credential a request may carry in clear, in any form a client might use, for the
 * gate to revoke what verifies before anything else can refuse the request:
 * - every `Authorization` header line, whatever its scheme and however malformed: each run
 *   of token characters (`Bearer:<t>`, `OAuth '<t>'`, `Bearer <<t>>`, `Bearer%20<t>`) may be
 *   an access token, and each Basic payload (`Basic  <b64>`, `Basic:<b64>`, base64 or
 *   written out as `<id>:<secret>`) whose user is shaped like an API key id gives that key
 *   and its secret. A Basic payload with any other user is a password: nothing to revoke
 *   (the user changes it), and it is never looked up or hashed here.
 * - the query parameters and fields of a body a body parser already read that a common
 *   parser reads as `access_token` or `oauth_token` (`access_token[]`, `[oauth_token]`, see
 *   {@link readsAs}), with `;` taken as a separator too (`?a=1;access_token=<t>`), in any
 *   letter case.
 *
 * At most {@link MAX_CANDIDATES} lookups in all, so a request cannot make the gate read the
 * store without bound before its throttle. Over https none of this is read: a token in a
 * query parameter or a body never authenticates anyone.
 */
export function credentialsSentIn(request: GateRequest, parsedBody?: unknown): SentInClear {
  const header = request.headers.authorization
  const url = request.url
  const q = url.indexOf('?')
  const inQuery = q !== -1 && TOKEN_NAME_HINT.test(url.slice(q + 1))
  const inBody = typeof parsedBody === 'object' && parsedBody !== null && !Buffer.isBuffer(parsedBody)
  // Most plain-http requests carry none of these: no allocation for them.
  if (header === undefined && !inQuery && !inBody) return NOTHING_SENT
  const found = new Candidates()
  const values = request.authorization ?? (header === undefined ? [] : Array.isArray(header) ? header : [header])
  for (const value of values) found.scan(value, true)
  if (inQuery) {
    for (const [name, value] of new URLSearchParams(url.slice(q + 1).replaceAll(';', '&'))) if (isTokenField(name)) found.scan(value, false)
  }
  if (inBody) {
    for (const [name, value] of Object.entries(parsedBody as Record<string, unknown>)) {
      if (!isTokenField(name)) continue
      // A string, a list (`access_token[]`), or an object (`access_token[x]`, qs's extended parsers).
      const nested = typeof value === 'object' && value !== null ? Object.values(value) : [value]
      for (const one of nested) if (typeof one === 'string') found.scan(one, false)
    }
  }
  return found.result()
}

/** A parameter name that may hold an access token: also percent-encoded, so the decoded names are checked. */
const TOKEN_NAME_HINT = /token|%/i

function isTokenField(name: string): boolean {
  const lower = name.toLowerCase()
  return TOKEN_FIELDS.some((field) => readsAs(lower, field))
}

/** The candidates of one request, bounded. */
class Candidates {
  readonly #tokens = new Set<string>()
  readonly #keys = new Map<string, Set<string>>()

  /** @param header whether `text` is an `Authorization` header line (the only place Basic credentials travel) */
  scan(text: string, header: boolean): void {
    if (this.#full()) return
    const value = text.length > MAX_CREDENTIALS_LENGTH ? text.slice(0, MAX_CREDENTIALS_LENGTH) : text
    this.#scanText(value, header)
    // `Bearer%20<t>`, `access_token=%3C<t>%3E`: what a percent-decoding reader would see.
    if (value.includes('%')) this.#scanText(percentDecoded(value), header)
  }

  #scanText(value: string, header: boolean): void {
    if (header && value.includes(':')) {
      for (const [, keyId, secret] of value.matchAll(WRITTEN_OUT_KEY)) {
        this.#key(keyId as string, secret as string)
        this.#key(keyId as string, (secret as string).replace(TRAILING_PUNCTUATION, ''))
      }
    }
    for (const [run] of value.matchAll(TOKEN_RUN)) {
      if (run.length < MIN_TOKEN_LENGTH || run.length > MAX_CREDENTIALS_LENGTH) continue
      const pair = header ? basicPair(run) : undefined
      if (pair === undefined) this.#token(run)
      else if (API_KEY_ID.test(pair.user)) {
        this.#key(pair.user, pair.password)
        // client_secret_basic form-encodes the secret (RFC 6749 §2.3.1).
        if (/[%+]/.test(pair.password)) this.#key(pair.user, formDecoded(pair.password))
      }
    }
  }

  #full(): boolean {
    return this.#tokens.size + this.#keys.size >= MAX_CANDIDATES
  }

  #token(candidate: string): void {
    if (!this.#full()) this.#tokens.add(candidate)
  }

  #key(keyId: string, secret: string): void {
    if (secret === '') return
    let secrets = this.#keys.get(keyId)
    if (secrets === undefined) {
      if (this.#full()) return
      secrets = new Set()
      this.#keys.set(keyId, secrets)
    }
    if (secrets.size < MAX_SECRETS_PER_KEY) secrets.add(secret)
  }

  result(): SentInClear {
    if (this.#tokens.size === 0 && this.#keys.size === 0) return NOTHING_SENT
    return { tokens: [...this.#tokens], apiKeys: [...this.#keys].map(([keyId, secrets]) => ({ keyId, secrets: [...secrets] })) }
  }
}

/** A base64 run that decodes to printable UTF-8 `user:password`, as Basic carries it; otherwise `undefined`. */
function basicPair(run: string): { user: string; password: string } | undefined {
  const bytes = Buffer.from(run, 'base64')
  if (bytes.length < 3 || !isUtf8(bytes)) return undefined
  const decoded = bytes.toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon <= 0 || CONTROL.test(decoded)) return undefined
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) }
}

/** `%XX` sequences decoded byte for byte (tokens are ASCII); anything else left as it is. */
function percentDecoded(value: string): string {
  return value.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
}

function formDecoded(value: string): string {
  return percentDecoded(value.replace(/\+/g, ' '))
}

/** Where clients put access tokens besides the Authorization header (RFC 6750 §2.2-2.3, OAuth 1.0 habits). */
const TOKEN_FIELDS = ['access_token', 'oauth_token'] as const
