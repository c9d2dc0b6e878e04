/**
 * What must hold for every request, however hostile:
 * - the answer is well formed: a documented status with the body its kind of endpoint
 *   documents, headers Node can send, never a 5xx but the 503 of a store that is down and
 *   the 500 `proxy_not_trusted` of a forgotten proxy; pages where a person is;
 * - a refused request changes no record, but for what the spec asks: credentials sent in
 *   clear are made worthless (tokens and API keys revoked, a code consumed), a replayed
 *   code revokes what it issued;
 * - no secret, the world's or the request's own, appears in a body, a header, an event or
 *   the context handed to the host application.
 */
import { validateHeaderName, validateHeaderValue } from 'node:http'
import { OAUTH_ERROR_STATUS, PLATFORM_ERROR_STATUS, type GateOutcome, type GateRequest, type GateResponse } from '../../src/index.js'
import { credentialsSentIn } from '../../src/http/authorization-header.js'
import { redirectUriProblem } from '../../src/oauth/redirect-uri.js'
import { sha256 } from '../../src/secrets/tokens.js'
import { wellFormed } from './arbitraries.js'
import { KNOWN, LOGIN_URL, WORLD_SECRETS, type World, type Write } from './world.js'
import { describeRequest, type HostileRequest } from './requests.js'

type Route = 'authorize' | 'token' | 'revoke' | 'metadata' | 'current-user' | 'self-service' | 'grants-page'

/** The paths the worlds' gates answer themselves (the defaults). */
const ROUTES: Record<string, Route> = {
  '/oauth/authorize': 'authorize',
  '/oauth/access_token': 'token',
  '/oauth/revoke': 'revoke',
  '/.well-known/oauth-authorization-server': 'metadata',
  '/api/users/current.json': 'current-user',
  '/users/current.json': 'current-user',
  '/users/current.xml': 'current-user',
  '/api/api_keys': 'self-service',
  '/api/oauth/grants': 'self-service',
  '/oauth/grants': 'grants-page',
}

/** The route of a path: an exact one, or an item of the self-service collections (one segment more). */
export function routeOf(path: string): Route | undefined {
  const exact = ROUTES[path]
  if (exact !== undefined) return exact
  return /^\/api\/(api_keys|oauth\/grants)\/[^/]+$/.test(path) ? 'self-service' : undefined
}

/** Pages the gate shows people, with forms and redirects. */
const PAGES = new Set<Route | undefined>(['authorize', 'grants-page'])

const PREFIX_OF: Record<string, string> = {
  [KNOWN.apps.oauth.appToken]: KNOWN.prefixes.oauth,
  [KNOWN.apps.root.appToken]: KNOWN.prefixes.root,
}

/** Parameters a response may legitimately carry back (`state`, a new `code`): never these values from the request. */
const SECRET_PARAMS = ['password', 'client_secret', 'code', 'code_verifier', 'token']
const ECHOED_PARAMS = ['username', 'state', 'redirect_uri', 'client_id', 'csrf_token']

/** What the checks read of a world: its kind, its events, and the writes its store recorded (none for a real store). */
export type CheckedWorld = Pick<World, 'kind' | 'events'> & { readonly store: { readonly writes: readonly Write[] } }

/** A failed check, with the request that caused it. */
export class PropertyViolation extends Error {
  override name = 'PropertyViolation'
}

/** Every check for one request: throws a {@link PropertyViolation} naming what broke. */
export function checkOutcome(world: CheckedWorld, request: HostileRequest, core: GateRequest, outcome: GateOutcome, body: Params): void {
  const problems: string[] = []
  const path = pathOf(request.target)
  const route = routeOf(path)
  const internal = world.events.find(([name]) => name === 'internalError')
  if (internal !== undefined) problems.push(`an internalError event: ${describeError((internal[1] as { error: unknown }).error)}`)

  if (outcome.type === 'next') {
    if (route !== undefined) problems.push(`the gate let a request to its own endpoint ${path} through`)
    checkHeaders(outcome.headers, problems)
    const c = outcome.context
    if (typeof c.secure !== 'boolean' || typeof c.clientIp !== 'string') problems.push('the context lacks secure or clientIp')
    if ((c.user === null) !== (c.auth === 'none')) problems.push(`the context says auth=${c.auth} with user ${c.user === null ? 'null' : c.user.id}`)
    if (c.user !== null && !c.secure) problems.push('a user authenticated over an insecure connection')
  } else {
    checkResponse(world, request, route, outcome.response, problems)
  }
  checkWrites(world, request, core, outcome, body, problems)
  checkSecrets(world, request, core, outcome, body, problems)
  if (problems.length > 0) {
    const response = outcome.type === 'respond' ? `${outcome.response.status} ${JSON.stringify(outcome.response.headers)} ${outcome.response.body.slice(0, 300)}` : `next ${JSON.stringify(outcome.headers)}`
    throw new PropertyViolation(`${problems.join('\n')}\n--- world: ${world.kind}\n--- request:\n${describeRequest(request)}\n--- answer: ${response}`)
  }
}

function checkHeaders(headers: Readonly<Record<string, string | readonly string[]>>, problems: string[]): void {
  for (const [name, value] of Object.entries(headers)) {
    if (name !== name.toLowerCase()) problems.push(`header name ${name} is not lower case`)
    try {
      validateHeaderName(name)
      for (const v of typeof value === 'string' ? [value] : value) {
        if (typeof v !== 'string') throw new Error(`${name} is not a string`)
        validateHeaderValue(name, v)
        // Node accepts Latin-1; a character above it would be mangled on the wire.
        if (/[^\t\x20-\x7e\x80-\xff]/.test(v)) throw new Error(`${name}: ${JSON.stringify(v)} has characters outside Latin-1`)
      }
    } catch (error) {
      problems.push(`a header Node cannot send: ${(error as Error).message}`)
    }
  }
}

function checkResponse(world: CheckedWorld, request: HostileRequest, route: Route | undefined, response: GateResponse, problems: string[]): void {
  const { status, headers, body } = response
  checkHeaders(headers, problems)
  if (typeof body !== 'string') problems.push('the body is not a string')
  if (!Number.isInteger(status) || status < 200 || status > 599) problems.push(`status ${status}`)
  if (status >= 500 && !(world.kind === 'down' && status === 503) && !proxyNotTrusted(world, request, response)) problems.push(`a ${status} outside a store outage`)
  const type = String(headers['content-type'] ?? '')

  if (status === 303) {
    if (!PAGES.has(route)) problems.push(`a redirect from ${route ?? 'a data route'}`)
    if (body !== '') problems.push('a redirect with a body')
    if (route === 'authorize') checkLocation(request, String(headers.location ?? ''), problems)
    // The connected-apps page only ever sends the browser back to itself.
    else if (!String(headers.location).startsWith(`${LOGIN_URL}?`) && /^[a-z][a-z0-9+.-]*:|^\/\/|^\/\\/i.test(String(headers.location ?? ''))) problems.push(`the connected-apps page redirects to ${String(headers.location)}`)
    return
  }
  if (status === 204) {
    if (route !== 'self-service' || request.method !== 'DELETE' || body !== '') problems.push(`a 204 from ${route ?? 'a data route'} ${request.method} with body ${JSON.stringify(body.slice(0, 50))}`)
    return
  }
  if (type.startsWith('text/html')) {
    if (!PAGES.has(route)) problems.push(`an HTML page from ${route ?? 'a data route'}`)
    if (![200, 400, 401, 403, 405, 429, 503].includes(status) && !(status === 500 && proxyNotTrusted(world, request, response))) problems.push(`a page with status ${status}`)
    if (!/frame-ancestors 'none'/.test(String(headers['content-security-policy']))) problems.push('a page without frame-ancestors')
    if (headers['x-frame-options'] !== 'DENY' || headers['referrer-policy'] !== 'no-referrer' || headers['cache-control'] !== 'no-store') problems.push('a page without its security headers')
    if (!body.startsWith('<!doctype html>')) problems.push('a page that is not a document')
    return
  }
  if (status === 200 && route === 'revoke') {
    if (body !== '') problems.push('a revocation answered with a body')
    return
  }
  if (status === 200 && route === 'current-user' && type.startsWith('application/xml')) return
  let json: unknown
  try {
    json = JSON.parse(body)
  } catch {
    problems.push(`status ${status} with a body that is not JSON (${type})`)
    return
  }
  if (!type.startsWith('application/json')) problems.push(`JSON sent as ${type}`)
  // People reach these in a browser: every answer is a page or a redirect (OAuth metadata and the JSON endpoints aside).
  if (PAGES.has(route)) problems.push(`JSON from the ${route} page, which a person reads`)
  const object = json as Record<string, unknown>
  if (status === 200) {
    if (route === 'token') {
      if (typeof object.access_token !== 'string' || object.token_type !== 'bearer' || typeof object.expires_in !== 'number') problems.push('a token response without its fields')
      if (headers['cache-control'] !== 'no-store' || headers.pragma !== 'no-cache') problems.push('a token response that may be cached')
    } else if (route === 'current-user') {
      if (typeof object.id !== 'string') problems.push('a current-user answer without an id')
    } else if (route === 'self-service') {
      if (typeof json !== 'object' || json === null) problems.push('a self-service answer that is not an object or a list')
      if (!String(headers['cache-control']).includes('no-store')) problems.push('a self-service answer that may be cached')
    } else if (route === 'metadata') {
      if (typeof object.issuer !== 'string' || typeof object.token_endpoint !== 'string') problems.push('metadata without issuer or token_endpoint')
    } else {
      problems.push(`a 200 from ${route ?? 'a data route'} the gate should have let through`)
    }
    return
  }
  if ('code' in object) {
    const code = object.code as string
    const keys = Object.keys(object).sort().join(',')
    if (keys !== 'code,error,message' || object.error !== true || typeof object.message !== 'string') problems.push(`a platform error body with keys ${keys}`)
    if ((PLATFORM_ERROR_STATUS as Record<string, number>)[code] !== status) problems.push(`code ${code} with status ${status}`)
    if (headers['x-error-code'] !== code) problems.push('X-Error-Code differs from the body')
    if (headers['x-error-message'] !== String(object.message).replace(/[^\x20-\x7e]/g, '?')) problems.push('X-Error-Message differs from the body')
    // The token and revocation endpoints speak RFC 6749, but for what happens before the
    // request is understood as one: a throttle, a proxy left untrusted.
    if ((route === 'token' || route === 'revoke') && !['too_many_requests', 'proxy_not_trusted'].includes(code)) problems.push(`a platform error ${code} from the ${route} endpoint, which speaks RFC 6749`)
    if (status === 429 && !/^\d+$/.test(String(headers['retry-after']))) problems.push('a 429 without Retry-After')
    return
  }
  if ('error' in object) {
    const code = object.error as string
    const keys = Object.keys(object).sort().join(',')
    if (keys !== 'error,error_description' || typeof object.error_description !== 'string') problems.push(`an OAuth error body with keys ${keys}`)
    if ((OAUTH_ERROR_STATUS as Record<string, number>)[code] !== status) problems.push(`OAuth error ${code} with status ${status}`)
    if (route !== 'token' && route !== 'revoke' && route !== 'metadata') problems.push(`an OAuth error from ${route ?? 'a data route'}`)
    if (status === 401 && !/^Basic realm="/.test(String(headers['www-authenticate']))) problems.push('a 401 invalid_client without a Basic challenge')
    if (headers['cache-control'] !== 'no-store') problems.push('an OAuth error that may be cached')
    return
  }
  problems.push(`status ${status} with a JSON body of neither error shape`)
}

/** Private and loopback peers: where a reverse proxy the operator forgot to trust would be. */
const PRIVATE_PEER = /^(::ffff:)?(127\.|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.)|^::1$|^f[cd]/i

/**
 * The one documented 5xx besides a store outage (issue 7): a private peer says the client
 * came over https (`X-Forwarded-Proto` or `Forwarded: proto=https`) while the gate trusts
 * no proxy: a misconfigured deployment, refused as `proxy_not_trusted`.
 */
export function proxyNotTrustedCase(kind: World['kind'], request: HostileRequest): boolean {
  return kind === 'strict' && PRIVATE_PEER.test(request.peer) && request.headers.some(([n, v]) => (/^x-forwarded-proto$/i.test(n) && /https/i.test(v)) || (/^forwarded$/i.test(n) && /proto=\W*https/i.test(v)))
}

function proxyNotTrusted(world: CheckedWorld, request: HostileRequest, response: GateResponse): boolean {
  return proxyNotTrustedCase(world.kind, request) && (response.headers['x-error-code'] === 'proxy_not_trusted' || response.body.includes('proxy_not_trusted') || response.body.includes('proxy'))
}

/** A redirect goes back to this same URL (after sign-in), or to a redirect_uri its client registered. */
function checkLocation(request: HostileRequest, location: string, problems: string[]): void {
  if (location.startsWith('?')) return
  if (location.startsWith(`${LOGIN_URL}?`)) {
    // The host's login page, told where to come back to: this very request.
    if (new URLSearchParams(location.slice(LOGIN_URL.length + 1)).get('return_to') !== request.target) problems.push(`a login redirect ${location} that does not return to ${request.target}`)
    return
  }
  const params = new URLSearchParams(request.target.slice(request.target.indexOf('?') + 1))
  const redirectUri = params.get('redirect_uri') ?? ''
  const prefix = PREFIX_OF[params.get('client_id') ?? '']
  if (prefix === undefined) {
    problems.push(`a redirect to ${location} for a client without a Callback Prefix`)
    return
  }
  if (!location.startsWith(redirectUri)) problems.push(`a redirect to ${location}, which does not start with the redirect_uri ${redirectUri}`)
  const problem = escapesPrefix(location, prefix)
  if (problem !== undefined) problems.push(`a redirect to ${location} ${problem} (prefix ${prefix})`)
  if (redirectUriProblem(redirectUri, prefix) !== undefined) problems.push(`a redirect to a redirect_uri the matcher refuses: ${redirectUriProblem(redirectUri, prefix)}`)
}

/**
 * Where a browser would go, by the WHATWG URL parser, resolved against the authorize URL
 * as a Location is: `undefined` when that is inside the prefix (same origin, path at or
 * below the prefix's at a segment boundary, no credentials).
 */
export function escapesPrefix(location: string, prefix: string): string | undefined {
  let target: URL
  try {
    target = new URL(location, 'https://gate.example/oauth/authorize?client_id=x')
  } catch {
    return 'is not a URL'
  }
  const base = new URL(prefix)
  if (target.origin !== base.origin) return `resolves to another origin (${target.origin})`
  if (target.username !== '' || target.password !== '') return 'carries credentials'
  const basePath = base.pathname.endsWith('/') ? base.pathname : `${base.pathname}/`
  if (target.pathname !== base.pathname && !target.pathname.startsWith(basePath)) return `resolves outside the prefix path (${target.pathname})`
  return undefined
}

/** The body's parameters as the checks need them (the request's secrets, the form's action). */
export type Params = ReadonlyMap<string, readonly string[]>

/** The request's parameters, from the query and a text body of either kind, for the checks. */
export function requestParams(request: HostileRequest): Params {
  const params = new Map<string, string[]>()
  const add = (name: string, value: unknown) => {
    if (typeof value !== 'string') return
    const list = params.get(name)
    if (list === undefined) params.set(name, [value])
    else list.push(value)
  }
  const q = request.target.indexOf('?')
  if (q !== -1) for (const [n, v] of new URLSearchParams(request.target.slice(q + 1))) add(n, v)
  const body = request.body
  if (body?.kind === 'text') {
    for (const [n, v] of new URLSearchParams(body.text)) add(n, v)
    try {
      const parsed: unknown = JSON.parse(body.text)
      if (typeof parsed === 'object' && parsed !== null) for (const [n, v] of Object.entries(parsed)) add(n, v)
    } catch {
      // not JSON: the form reading above is all there is
    }
  } else if (body?.kind === 'parsed' && typeof body.value === 'object' && body.value !== null) {
    for (const [n, v] of Object.entries(body.value)) for (const x of [v].flat()) add(n, x)
  }
  return params
}

/** Refused: an error status, or a redirect that carries an error back to the application. */
function refused(outcome: GateOutcome): boolean {
  if (outcome.type === 'next') return false
  const { status, headers } = outcome.response
  if (status >= 400) return true
  return status === 303 && /[?&]error=/.test(String(headers.location ?? ''))
}

function checkWrites(world: CheckedWorld, request: HostileRequest, core: GateRequest, outcome: GateOutcome, params: Params, problems: string[]): void {
  const writes = world.store.writes
  if (writes.length === 0) return
  // Whatever credential a request over plain http gave away is made worthless: access
  // tokens revoked (from the header, the query or the body), a code consumed, an API key revoked.
  const parsed = request.body?.kind === 'parsed' ? request.body.value : undefined
  const sent = credentialsSentIn(core, parsed)
  const sentTokens = new Set([...sent.tokens, ...['access_token', 'oauth_token', 'token'].flatMap((n) => params.get(n) ?? [])].map(sha256))
  const sentCodes = new Set((params.get('code') ?? []).map(sha256))
  const insecure = !request.tls || hasProxyHeaders(request)
  const basicUsers = [
    ...(core.authorization ?? []).map((line) => Buffer.from(line.slice(line.indexOf(' ') + 1).trim(), 'base64').toString('utf8').split(':')[0]),
    ...sent.apiKeys.map((key) => key.keyId),
  ]
  const response = outcome.type === 'respond' ? outcome.response : undefined
  const status = response?.status
  const location = String(response?.headers.location ?? '')
  const isRefused = refused(outcome)
  const replayed = world.events.some(([name]) => name === 'codeReplayed')
  // A token issued and revoked again within the request (a code whose grant was revoked
  // meanwhile, or a replay that lost the race) leaves no live token: the code is spent.
  const revokedAgain = new Set(writes.flatMap((w) => (w.method === 'revokeAccessToken' ? [w.args[0] as string] : [])))
  const revokedByCode = new Set(writes.flatMap((w) => (w.method === 'revokeAccessTokens' ? [(w.args[0] as { codeHash?: string }).codeHash ?? ''] : [])))
  const issuedAndRevoked = writes.some(
    (w) => w.method === 'insertAccessToken' && (revokedAgain.has((w.args[0] as { tokenHash: string }).tokenHash) || revokedByCode.has((w.args[0] as { codeHash: string | null }).codeHash ?? '')),
  )
  const sentLiveToken = credentialsSentIn(core).tokens.includes(KNOWN.tokens.live)
  for (const write of writes) {
    const [a, b] = write.args as [unknown, unknown]
    const ok =
      (issuedAndRevoked && ['insertAccessToken', 'consumeAuthorizationCode', 'revokeAccessToken', 'revokeAccessTokens'].includes(write.method)) ||
      // Using a token notes the use on its grant (at most daily).
      (write.method === 'touchGrant' && sentLiveToken && a === KNOWN.users.ada.id && b === KNOWN.apps.oauth.appToken) ||
      // An access token sent in clear is revoked, whatever else happens to the request.
      (insecure && write.method === 'revokeAccessToken' && sentTokens.has(a as string)) ||
      (insecure && write.method === 'consumeAuthorizationCode' && sentCodes.has(a as string) && pathOf(request.target) === '/oauth/access_token') ||
      (insecure && write.method === 'revokeApiKey' && basicUsers.includes(a as string)) ||
      // A create is refused by the store's own check (a taken name, a cap): it saved nothing.
      (write.method === 'insertApiKey' && pathOf(request.target) === '/api/api_keys' && request.method === 'POST' && status === 409) ||
      // A replayed code revokes the tokens it issued.
      (write.method === 'revokeAccessTokens' && replayed && sentCodes.has((a as { codeHash?: string }).codeHash ?? '')) ||
      // A key that authenticated notes when it was last used.
      (write.method === 'updateApiKey' && a === KNOWN.apiKeys.live.keyId && Object.keys(b as object).join() === 'lastUsedAt') ||
      (!isRefused && successWrite(write.method, request.method, pathOf(request.target), status, location))
    if (!ok) problems.push(`${isRefused ? 'a refused' : 'an accepted'} request wrote ${write.method}(${JSON.stringify(write.args).slice(0, 200)})`)
  }
}

function hasProxyHeaders(request: HostileRequest): boolean {
  return request.headers.some(([n]) => /^(x-forwarded-proto|forwarded)$/i.test(n))
}

/** What a request that succeeded may write. */
function successWrite(write: string, method: string, path: string, status: number | undefined, location: string): boolean {
  const grantsPage = path === '/oauth/grants' && method === 'POST' && status === 303
  switch (write) {
    case 'insertAccessToken':
    case 'consumeAuthorizationCode':
      return path === '/oauth/access_token' && status === 200
    case 'revokeAccessToken':
      return path === '/oauth/revoke' && status === 200
    case 'insertAuthorizationCode':
      return path === '/oauth/authorize' && status === 303 && /[?&]code=/.test(location)
    case 'recordGrant':
      return (path === '/oauth/authorize' && status === 303 && /[?&]code=/.test(location)) || (path === '/oauth/access_token' && status === 200)
    case 'insertSession':
    case 'trimSessions':
    case 'deleteSession':
      return (path === '/oauth/authorize' && status === 303 && location.startsWith('?')) || grantsPage
    case 'insertApiKey':
      return path === '/api/api_keys' && method === 'POST' && status === 200
    case 'revokeApiKey':
      return /^\/api\/api_keys\/[^/]+$/.test(path) && method === 'DELETE' && status === 200
    case 'deleteGrant':
    case 'revokeAccessTokens':
      return (/^\/api\/oauth\/grants\/[^/]+$/.test(path) && method === 'DELETE' && status === 204) || grantsPage
    default:
      return false
  }
}

function checkSecrets(world: CheckedWorld, request: HostileRequest, core: GateRequest, outcome: GateOutcome, params: Params, problems: string[]): void {
  const echoable = ECHOED_PARAMS.flatMap((n) => params.get(n) ?? [])
  // The CSRF cookie's value goes back into the form, by design: whatever the client put there is its own.
  for (const [name, value] of request.headers) if (name.toLowerCase() === 'cookie') echoable.push(value)
  const candidates = new Set<string>(WORLD_SECRETS)
  for (const name of SECRET_PARAMS) for (const v of params.get(name) ?? []) candidates.add(v)
  for (const line of core.authorization ?? []) {
    const credentials = line.slice(line.indexOf(' ') + 1).trim()
    candidates.add(credentials)
    const decoded = Buffer.from(credentials, 'base64').toString('utf8')
    if (decoded.includes(':')) candidates.add(decoded.slice(decoded.indexOf(':') + 1))
  }
  const secrets = [...candidates].filter((s) => s.length >= 12 && !echoable.some((e) => e.includes(s)))
  const texts: string[] = []
  if (outcome.type === 'respond') {
    texts.push(outcome.response.body)
    for (const v of Object.values(outcome.response.headers)) texts.push(...[v].flat())
  } else {
    for (const v of Object.values(outcome.headers)) texts.push(v)
    // What the host application gets as req.gate / ctx.state.gate, and may well log.
    texts.push(JSON.stringify(outcome.context))
  }
  for (const [name, payload] of world.events) texts.push(`${name} ${eventText(payload)}`)
  const all = texts.join('\n')
  for (const secret of secrets) {
    const encoded = encodeURIComponent(wellFormed(secret))
    if (!all.includes(secret) && (encoded === secret || !all.includes(encoded))) continue
    const where = texts.find((t) => t.includes(secret) || t.includes(encoded)) ?? ''
    problems.push(`the secret ${JSON.stringify(secret.slice(0, 40))} appears in ${JSON.stringify(where.slice(0, 200))}`)
  }
}

function eventText(payload: unknown): string {
  return JSON.stringify(payload, (_key, value: unknown) => (value instanceof Error ? { message: value.message, stack: value.stack, cause: value.cause } : value)) ?? ''
}

function describeError(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error)
}

function pathOf(target: string): string {
  const q = target.indexOf('?')
  return q === -1 ? target : target.slice(0, q)
}

/** What a decision looks like from outside, with the random parts (new codes, tokens, key ids, CSRF values, times) blanked. */
export function normalise(status: number, headers: Readonly<Record<string, unknown>>, body: string, head: boolean): string {
  const random = (s: string) =>
    s
      .replace(/[A-Za-z0-9_-]{43}/g, '<random>')
      .replace(/\b[2-9a-km-np-z]{25}\b/g, '<key id>')
      .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '<time>')
      .replace(/\b1[6-9]\d{8}(\d{3})?\b/g, '<epoch>')
  const title = /<title>([^<]*)<\/title>/.exec(body)?.[1]
  const shown = head ? '' : title !== undefined ? `page: ${title}` : random(body)
  const keep = ['x-error-code', 'content-type', 'location', 'cache-control', 'www-authenticate', 'x-frame-options']
  const picked = keep.map((k) => `${k}=${headers[k] === undefined ? '' : random(String(headers[k]))}`).join(' ')
  return `${status} ${picked} retry-after=${headers['retry-after'] !== undefined} set-cookie=${headers['set-cookie'] !== undefined} ${shown}`
}
