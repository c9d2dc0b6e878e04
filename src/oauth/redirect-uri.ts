/**
 * Matching a `redirect_uri` against an application's Callback Prefix, and adding the
 * response parameters to it.
 *
 * The spec asks for "starts with the Callback Prefix"; a plain string prefix would let
 * `https://app.example` admit `https://app.example.evil.net`. So both are parsed as URLs:
 * scheme, host and port must equal the prefix's exactly, and the path must be the
 * prefix's path or continue it at a segment boundary. The URL must be written exactly as
 * its WHATWG serialization (so the string checked is the string a browser follows), and
 * anything a parser might read two ways is refused outright: credentials, fragments,
 * dot segments in any spelling (`..;`, `%2e%2e`, `%252e`), encoded slashes or
 * backslashes, empty segments, whitespace, and a query that already has `code` or `state`.
 *
 * @see docs/platform-rules.md "OAuth 2.0" 3; SECURITY.md "Where the spec and the RFCs pull apart", "redirect_uri match"; RFC 9700 §2.1, §4.1
 */

import { isLoopbackHttp } from '../management/callback-prefix.js'

const MAX_LENGTH = 2048
/** Parameters the gate adds itself: a redirect_uri that already carries one would be read two ways. */
const RESPONSE_PARAMS = ['code', 'state']

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
  if (url.protocol !== 'https:' && !(allowLoopback && isLoopbackHttp(url))) return 'it does not use https'
  if (url.username !== '' || url.password !== '') return 'it contains credentials'
  if (redirectUri.includes('#')) return 'it contains a fragment'
  const pathProblem = segmentProblem(rawPathOf(redirectUri))
  if (pathProblem !== undefined) return pathProblem
  // The string checked is the string the browser will follow: `https:a.example/cb` parses as
  // https://a.example/cb here, but a browser resolves it against the gate's own URL.
  if (url.href !== redirectUri) return `it is not written as the absolute URL it stands for (${url.href})`
  const base = new URL(prefix)
  if (url.origin !== base.origin) return 'its scheme, host or port differ from the registered Callback Prefix'
  const path = url.pathname
  const prefixPath = base.pathname
  const boundary = prefixPath.endsWith('/') ? prefixPath : `${prefixPath}/`
  if (path !== prefixPath && !path.startsWith(boundary)) return 'its path does not start with the registered Callback Prefix'
  const taken = RESPONSE_PARAMS.find((name) => url.searchParams.has(name))
  if (taken !== undefined) return `its query already has a ${taken} parameter, which the authorization server adds itself`
  return undefined
}

/** The path exactly as written, before any URL normalisation removed dot segments. */
function rawPathOf(uri: string): string {
  const afterScheme = uri.indexOf('//') === -1 ? uri.slice(uri.indexOf(':') + 1) : uri.slice(uri.indexOf('//') + 2)
  const slash = afterScheme.search(/[/?#]/)
  if (slash === -1 || afterScheme[slash] !== '/') return '/'
  const rest = afterScheme.slice(slash)
  const end = rest.search(/[?#]/)
  return end === -1 ? rest : rest.slice(0, end)
}

/** Dot segments, encoded slashes and empty segments, in any spelling a server behind the app might decode. */
function segmentProblem(path: string): string | undefined {
  const segments = path.split('/').slice(1)
  for (let i = 0; i < segments.length; i++) {
    const segment = decodeRepeatedly(segments[i] as string)
    if (segment === '' && i < segments.length - 1) return 'its path contains an empty segment (//)'
    if (/[/\\]/.test(segment)) return 'its path contains an encoded slash or backslash'
    const name = segment.split(';')[0] as string
    if (name === '.' || name === '..') return 'its path contains dot segments'
  }
  return undefined
}

/** Percent-decoded until nothing changes (`%252e` → `%2e` → `.`), as some servers behind an app do. */
function decodeRepeatedly(segment: string): string {
  let current = segment
  for (let i = 0; i < 4 && current.includes('%'); i++) {
    let next: string
    try {
      next = decodeURIComponent(current)
    } catch {
      return current
    }
    if (next === current) break
    current = next
  }
  return current
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
