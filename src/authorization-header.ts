/**
 * Reads the credentials of a request from its `Authorization` header, exactly:
 * - `Basic <base64(user-id ":" password)>` (RFC 7617): a guarded base64 decode, strict
 *   UTF-8, the first `:` splits, the password may contain `:`, no control characters.
 * - `OAuth <token>` (the platform's scheme) and `Bearer <token>` (RFC 6750 §2.1) with the
 *   b64token syntax. An access token is read from this header only, never from a query
 *   parameter or a body.
 *
 * Other schemes are left alone: they may belong to the host application.
 *
 * @see https://www.rfc-editor.org/rfc/rfc7617#section-2
 * @see https://www.rfc-editor.org/rfc/rfc6750#section-2.1
 */
import { isUtf8 } from 'node:buffer'
import { PlatformError } from './errors.js'
import type { GateRequest } from './http.js'

/** The credentials a request presents. */
export type Credentials =
  | { readonly kind: 'basic'; readonly user: string; readonly password: string }
  | { readonly kind: 'token'; readonly scheme: 'oauth' | 'bearer'; readonly token: string }

const MAX_CREDENTIALS_LENGTH = 8192
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/

/**
 * The credentials in the request's `Authorization` header, or `undefined` when it has
 * none the gate handles.
 * @throws {PlatformError} `invalid_request` (400) for a malformed header, or for more than one
 */
export function readCredentials(request: GateRequest, acceptBearer: boolean): Credentials | undefined {
  const all = request.authorization
  if (all !== undefined && all.length > 1) {
    throw new PlatformError('invalid_request', 'The request carries more than one Authorization header; send exactly one set of credentials')
  }
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
/** Shorter words in a malformed header (`token` in `OAuth token="…"`) cannot be a token of ours. */
const MIN_TOKEN_LENGTH = 16

/**
 * Every access token the request may carry in clear, in any form a client might use:
 * `Authorization: OAuth`/`Bearer` (well-formed or not: `OAuth <t>,`, `OAuth token="<t>"`,
 * `OAuth<TAB><t>`), the query parameters `access_token` and `oauth_token` (names decoded
 * as the host decodes them), and those fields of a body a body parser already read. Over
 * plain http each one must be revoked; none of them ever authenticates.
 */
export function tokensSentIn(request: GateRequest, parsedBody?: unknown): readonly string[] {
  const header = request.headers.authorization
  const url = request.url
  const q = url.indexOf('?')
  const inQuery = q !== -1 && (url.indexOf('token', q) !== -1 || url.indexOf('%', q) !== -1)
  const inBody = typeof parsedBody === 'object' && parsedBody !== null && !Buffer.isBuffer(parsedBody)
  // Most plain-http requests carry none of these: no allocation for them.
  if (header === undefined && !inQuery && !inBody) return NONE
  const found = new Set<string>()
  const add = (candidate: string) => {
    if (found.size < MAX_CANDIDATES && candidate.length >= MIN_TOKEN_LENGTH && candidate.length <= MAX_CREDENTIALS_LENGTH && B64TOKEN.test(candidate)) found.add(candidate)
  }
  const values = request.authorization ?? (header === undefined ? [] : Array.isArray(header) ? header : [header])
  for (const value of values) {
    const scheme = schemeOf(value)
    if (scheme !== 'oauth' && scheme !== 'bearer') continue
    for (const word of value.slice(scheme.length).split(/[\s,;="]+/)) add(word)
  }
  if (inQuery) {
    const params = new URLSearchParams(url.slice(q + 1))
    for (const name of TOKEN_FIELDS) for (const value of params.getAll(name)) add(value.trim())
  }
  if (inBody) {
    for (const name of TOKEN_FIELDS) {
      const value: unknown = (parsedBody as Record<string, unknown>)[name]
      for (const one of Array.isArray(value) ? value : [value]) if (typeof one === 'string') add(one.trim())
    }
  }
  return [...found]
}

const NONE: readonly string[] = Object.freeze([])

/** Where clients put access tokens besides the Authorization header (RFC 6750 §2.2-2.3, OAuth 1.0 habits). */
const TOKEN_FIELDS = ['access_token', 'oauth_token'] as const
