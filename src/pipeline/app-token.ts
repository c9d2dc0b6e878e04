/**
 * Finds the application token of a request: the `X-App-Token` header (preferred, any
 * case), the `$$app_token` query parameter, or the SODA 1.0 name `app_token`, under every
 * spelling a common query parser reads as one of those names (see {@link readsAs}).
 *
 * @see docs/platform-rules.md "Application token", "Versioning" 1, and the platform's "App tokens"
 */
import { PlatformError } from '../errors.js'
import type { GateRequest } from '../http/request.js'
import { readsAs } from '../http/params.js'

const CONFLICT = 'Conflicting app tokens: the request names two different application tokens'

/**
 * The token the request names, or `undefined` when it names none. An empty value counts
 * as absent.
 * @throws {PlatformError} `permission_denied` (403) when two places name different tokens.
 */
export function extractAppToken(request: GateRequest, acceptLegacyParam: boolean): string | undefined {
  let token = request.headers['x-app-token']
  if (Array.isArray(token)) token = token.join(',')
  // Node joins repeated headers with ", "; a token never holds a comma.
  if (token?.includes(',')) token = sameOrConflict(token.split(',').map((v) => v.trim()).filter((v) => v !== ''))
  token = token?.trim() || undefined

  const url = request.url
  const q = url.indexOf('?')
  // Parse the query only when it can hold a token: most requests pay an indexOf or two.
  // A token the host can see is a token the gate checked. A name can arrive percent-encoded
  // (`app%5Ftoken`, `%24%24app_token`), and the host's parser decodes it: so does the gate.
  // And Express 4's parser (qs) reads `$$app_token[]`, `$$app_token[x]` and `[$$app_token]`
  // as `$$app_token` too: so the gate counts every value under such a name as the token.
  if (q !== -1 && (url.indexOf('app', q) !== -1 || url.indexOf('%', q) !== -1)) {
    const fromQuery: string[] = []
    for (const [name, value] of new URLSearchParams(url.slice(q + 1))) {
      if (!readsAs(name, '$$app_token') && !(acceptLegacyParam && readsAs(name, 'app_token'))) continue
      const trimmed = value.trim()
      if (trimmed !== '') fromQuery.push(trimmed)
    }
    if (fromQuery.length > 0) {
      const queryToken = sameOrConflict(fromQuery)
      if (token !== undefined && token !== queryToken) throw new PlatformError('permission_denied', CONFLICT)
      token = queryToken
    }
  }
  return token
}

function sameOrConflict(values: readonly string[]): string | undefined {
  const first = values[0]
  for (const v of values) if (v !== first) throw new PlatformError('permission_denied', CONFLICT)
  return first
}
