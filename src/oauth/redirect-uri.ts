/**
 * Matching a `redirect_uri` against an application's Callback Prefix, and adding the
 * response parameters to it.
 *
 * The spec asks for "starts with the Callback Prefix"; a plain string prefix would let
 * `https://app.example` admit `https://app.example.evil.net`. So both are parsed as URLs:
 * scheme, host and port must equal the prefix's exactly, and the path must be the
 * prefix's path or continue it at a segment boundary. Anything a parser might read two
 * ways is refused outright: credentials, fragments, dot segments, encoded or back
 * slashes, whitespace.
 *
 * @see spec "OAuth 2.0" 3; oauth-server.md "redirect_uri match"; RFC 9700 §2.1, §4.1
 */

import { isLoopbackHttp } from '../applications.js'

const MAX_LENGTH = 2048

/**
 * Why `redirectUri` may not be used with `prefix`, or `undefined` when it may.
 * @param allowLoopback `oauth.allowLoopbackCallbacks`: plain http is accepted on a loopback host (RFC 8252 §7.3)
 */
export function redirectUriProblem(redirectUri: string, prefix: string, allowLoopback = false): string | undefined {
  if (redirectUri.length > MAX_LENGTH) return 'it is too long'
  if (/[\s\\\p{Cc}]/u.test(redirectUri)) return 'it contains whitespace, control characters or a backslash'
  // RFC 3986 URIs are ASCII; anything else must arrive percent-encoded (a Location header cannot carry it).
  if (/[^\x21-\x7e]/.test(redirectUri)) return 'it contains characters that are not percent-encoded'
  if (!URL.canParse(redirectUri)) return 'it is not an absolute URL'
  const url = new URL(redirectUri)
  const base = new URL(prefix)
  if (url.protocol !== 'https:' && !(allowLoopback && isLoopbackHttp(url))) return 'it does not use https'
  if (url.username !== '' || url.password !== '') return 'it contains credentials'
  if (redirectUri.includes('#')) return 'it contains a fragment'
  if (url.origin !== base.origin) return 'its scheme, host or port differ from the registered Callback Prefix'
  const rawPath = rawPathOf(redirectUri)
  if (rawPath.split('/').some(isDotSegment)) return 'its path contains dot segments'
  if (/%2f|%5c/i.test(rawPath)) return 'its path contains an encoded slash'
  const path = url.pathname
  const prefixPath = base.pathname
  const boundary = prefixPath.endsWith('/') ? prefixPath : `${prefixPath}/`
  if (path !== prefixPath && !path.startsWith(boundary)) return 'its path does not start with the registered Callback Prefix'
  return undefined
}

/** The path exactly as written, before any URL normalisation removed dot segments. */
function rawPathOf(uri: string): string {
  const afterScheme = uri.slice(uri.indexOf('//') + 2)
  const slash = afterScheme.indexOf('/')
  if (slash === -1) return '/'
  const rest = afterScheme.slice(slash)
  const end = rest.search(/[?#]/)
  return end === -1 ? rest : rest.slice(0, end)
}

function isDotSegment(segment: string): boolean {
  return /^(\.|%2e){1,2}$/i.test(segment)
}

/**
 * `redirectUri` with `params` added after any query it already has, which is kept byte
 * for byte. Parameters with an `undefined` value are left out.
 */
export function withParams(redirectUri: string, params: Record<string, string | undefined>): string {
  const pairs = Object.entries(params)
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`)
  if (pairs.length === 0) return redirectUri
  const q = redirectUri.indexOf('?')
  const separator = q === -1 ? '?' : q === redirectUri.length - 1 || redirectUri.endsWith('&') ? '' : '&'
  return `${redirectUri}${separator}${pairs.join('&')}`
}
