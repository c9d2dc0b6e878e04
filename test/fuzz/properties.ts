/**
 * The hostile-input properties, shared by the test suite (fixed seed, fixed counts) and
 * `npm run fuzz` (random seed, as many runs as asked). Each is a fast-check property; the
 * caller decides how many runs and which seed.
 */
import { createRequire } from 'node:module'
import querystring from 'node:querystring'
import fc from 'fast-check'
import { isPromiseLike } from '../../src/util/awaitable.js'
import { extractAppToken } from '../../src/pipeline/app-token.js'
import { readCredentials } from '../../src/http/authorization-header.js'
import { PlatformError, type GateOutcome } from '../../src/index.js'
import { redirectUriProblem, withParams } from '../../src/oauth/redirect-uri.js'
import { anyText, someProxyHeaders, wellFormed, appTokenHeaders, appTokenQuery, authorizationHeaders, callbackPrefix, hostileRequest, loopbackPrefix, redirectUriFor, unstorableRequest } from './arbitraries.js'
import { checkOutcome, escapesPrefix, normalise, proxyNotTrustedCase, PropertyViolation, requestParams } from './checks.js'
import { describeRequest, toCoreRequest, type HostileRequest } from './requests.js'
import { freshWorld, type createStoreWorld, type WorldKind } from './world.js'

/** How long a request may take before it counts as a hang (the store is in memory: nothing should take a millisecond). */
const HANG_MS = 2000

const WORLD = fc.oneof({ weight: 6, arbitrary: fc.constant<WorldKind>('open') }, { weight: 3, arbitrary: fc.constant<WorldKind>('strict') }, { weight: 1, arbitrary: fc.constant<WorldKind>('down') })

/** One case: a fresh world, one request through `gate.handle`, every check. */
export async function runCoreCase(kind: WorldKind, request: HostileRequest, trim: boolean): Promise<GateOutcome | undefined> {
  const world = await freshWorld(kind)
  const core = toCoreRequest(request, trim)
  let outcome: GateOutcome
  const started = performance.now()
  try {
    const handled = world.gate.handle(core)
    outcome = isPromiseLike(handled) ? await deadline(Promise.resolve(handled), HANG_MS) : handled
  } catch (error) {
    throw new PropertyViolation(`gate.handle threw or hung: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
  }
  // A synchronous answer can hang the process too, and a slow one blocks every other request.
  const took = performance.now() - started
  if (took > HANG_MS) throw new PropertyViolation(`gate.handle took ${Math.round(took)} ms`)
  // Bookkeeping writes (an API key's lastUsedAt) land a turn later: wait for them.
  await new Promise(setImmediate)
  checkOutcome(world, request, core, outcome, requestParams(request))
  return outcome
}

function deadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** Every request through the core: well-formed answers, no writes on refusal, no secret echoed. */
export const coreProperty = () =>
  fc.asyncProperty(WORLD, hostileRequest, fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }), async (kind, request, trim) => {
    await runCoreCase(kind, request, trim)
  })

/** A gate on a real store, for {@link unstorableProperty}. */
export type StoreWorld = Awaited<ReturnType<typeof createStoreWorld>>

/** A store on another process may take a while on a loaded machine: a hang is far longer. */
const STORE_HANG_MS = 10_000

/**
 * Text no store can hold (a NUL, an unpaired surrogate, a value far over any length), in
 * any one field of an otherwise right request, on a real store (PostgreSQL refuses a NUL
 * in text): refused at the edge, so no `storeError` event, no 503 (the world fails closed)
 * and no `internalError` (which a value reaching the store's guard would be); and every
 * check of the core property besides.
 */
export const unstorableProperty = (world: StoreWorld) =>
  fc.asyncProperty(unstorableRequest, async (request) => {
    const core = toCoreRequest(request)
    let outcome: GateOutcome
    try {
      const handled = world.gate.handle(core)
      outcome = isPromiseLike(handled) ? await deadline(Promise.resolve(handled), STORE_HANG_MS) : handled
    } catch (error) {
      throw new PropertyViolation(`gate.handle threw or hung: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
    }
    // Background writes (a key's lastUsedAt) land a little later; an outage they caused shows in the next case at the latest.
    await new Promise((resolve) => setTimeout(resolve, 1))
    const outage = world.events.find(([name]) => name === 'storeError')
    if (outage !== undefined) {
      const cause = (outage[1] as { error?: unknown }).error
      throw new PropertyViolation(`a storeError event (${cause instanceof Error ? cause.message : String(cause)}) for:\n${describeRequest(request)}`)
    }
    try {
      checkOutcome(world, request, core, outcome, requestParams(request))
    } finally {
      world.events.length = 0
    }
  })

/**
 * The redirect_uri matcher never admits a URL that a browser would take to another
 * origin, outside the prefix path or with credentials: compared with the WHATWG URL
 * parser, for the redirect_uri itself and for the Location the gate builds from it.
 * With `allowLoopback` (`oauth.allowLoopbackCallbacks`) the prefixes include plain-http
 * loopback ones, and the same must hold: plain http is admitted only on the prefix's own
 * loopback origin.
 */
export const redirectUriProperty = (allowLoopback = false) =>
  fc.property(
    (allowLoopback ? fc.oneof(loopbackPrefix, callbackPrefix) : callbackPrefix).chain((prefix) => fc.tuple(fc.constant(prefix), redirectUriFor(prefix), anyText.map(wellFormed), fc.boolean())),
    ([prefix, uri, state, isError]) => {
      if (redirectUriProblem(uri, prefix, allowLoopback) !== undefined) return
      const direct = escapesPrefix(uri, prefix)
      if (direct !== undefined) throw new PropertyViolation(`admitted ${JSON.stringify(uri)} for prefix ${prefix}, which ${direct}`)
      if (new URL(uri).hash !== '' || uri.includes('#')) throw new PropertyViolation(`admitted ${JSON.stringify(uri)} with a fragment`)
      const location = withParams(uri, isError ? { error: 'access_denied', error_description: 'The user denied the request', state } : { code: 'c0de', state })
      const viaLocation = escapesPrefix(location, prefix)
      if (viaLocation !== undefined) throw new PropertyViolation(`admitted ${JSON.stringify(uri)} for ${prefix}; its Location ${JSON.stringify(location)} ${viaLocation}`)
      const sent = new URL(location).searchParams
      if (sent.get(isError ? 'error' : 'code') === null || sent.get('state') !== state) {
        throw new PropertyViolation(`the Location ${JSON.stringify(location)} does not carry the answer and the exact state ${JSON.stringify(state)}`)
      }
    },
  )

/**
 * The `Authorization` header: a malformed one is a 400 `invalid_request` and nothing else;
 * accepted credentials hold no control characters; and only the exact form (the scheme,
 * one space, the credentials) is accepted.
 */
export const authorizationProperty = () =>
  fc.property(authorizationHeaders, fc.boolean(), (lines, acceptBearer) => {
    const request = toCoreRequest({ method: 'GET', target: '/', headers: lines, body: undefined, peer: '203.0.113.5', tls: true })
    let credentials
    try {
      credentials = readCredentials(request, acceptBearer)
    } catch (error) {
      if (error instanceof PlatformError && error.code === 'invalid_request' && error.status === 400) return
      throw new PropertyViolation(`readCredentials threw ${String(error)} for ${JSON.stringify(lines)}`)
    }
    if (credentials === undefined) return
    const value = String(request.headers.authorization)
    if (!/^(basic|oauth|bearer) [^ \t]/i.test(value) || /[ \t]$/.test(value)) {
      throw new PropertyViolation(`accepted ${JSON.stringify(value)}: anything but the scheme, one space and the credentials must be a 400`)
    }
    // eslint-disable-next-line no-control-regex
    const control = /[\u0000-\u001f\u007f]/
    if (credentials.kind === 'basic' && (control.test(credentials.user) || control.test(credentials.password))) {
      throw new PropertyViolation(`accepted Basic credentials with control characters: ${JSON.stringify(credentials)}`)
    }
  })

/**
 * App tokens: the gate names the token that the host's own query parser and header
 * reading would find (names percent-decoded as URLSearchParams decodes them), or refuses
 * the request with 403 when they name two; it never ignores one.
 */
export const appTokenProperty = () =>
  fc.property(appTokenHeaders, appTokenQuery, fc.boolean(), (headers, query, legacy) => {
    const target = `/resource/abcd-1234.json${query.length === 0 ? '' : `?${query.join('&')}`}`
    const request = toCoreRequest({ method: 'GET', target, headers, body: undefined, peer: '203.0.113.5', tls: true })
    const expected = hostView(request.headers['x-app-token'], target, legacy)
    let found: string | undefined
    try {
      found = extractAppToken(request, legacy)
    } catch (error) {
      if (error instanceof PlatformError && error.code === 'permission_denied') {
        if (expected.size < 2) throw new PropertyViolation(`refused ${describe(headers, target)} as conflicting, but it names ${JSON.stringify([...expected])}`)
        return
      }
      throw new PropertyViolation(`extractAppToken threw ${String(error)} for ${describe(headers, target)}`)
    }
    if (expected.size > 1) throw new PropertyViolation(`${describe(headers, target)} names ${JSON.stringify([...expected])}, and the gate took ${JSON.stringify(found)}`)
    const [only] = expected
    if (found !== only) throw new PropertyViolation(`${describe(headers, target)}: the host sees ${JSON.stringify(only)}, the gate ${JSON.stringify(found)}`)
  })

/** The distinct non-empty tokens a request names, as a host application reading it would see them. */
function hostView(header: string | string[] | undefined, target: string, legacy: boolean): Set<string> {
  const values: string[] = []
  const headerText = Array.isArray(header) ? header.join(',') : header
  if (headerText !== undefined) values.push(...headerText.split(','))
  const q = target.indexOf('?')
  if (q !== -1) {
    for (const [name, value] of new URLSearchParams(target.slice(q + 1))) {
      if (hostReads(name, '$$app_token') || (legacy && hostReads(name, 'app_token'))) values.push(value)
    }
  }
  return new Set(values.map((v) => v.trim()).filter((v) => v !== ''))
}

/** Express 4's default query parser (qs, `extended`), from the express4 package itself. */
const express4Query = (createRequire(import.meta.url)('express4/lib/utils.js') as { compileQueryParser(setting: string): (query: string) => object }).compileQueryParser('extended')

/**
 * Whether a host reads a (decoded) parameter name as `field`: Express 4 (qs: `field[]`,
 * `[field]`, ...), Express 5 and Koa 2 (node:querystring), Koa 3 (URLSearchParams).
 */
function hostReads(name: string, field: string): boolean {
  const pair = `${encodeURIComponent(name)}=x`
  return [express4Query(pair), querystring.parse(pair), Object.fromEntries(new URLSearchParams(pair))].some((parsed) => Object.hasOwn(parsed, field))
}

function describe(headers: ReadonlyArray<readonly [string, string]>, target: string): string {
  return `${target} with headers ${JSON.stringify(headers)}`
}

/** Peers no world trusts as a proxy: public clients, and private hosts that are not the configured proxy. */
const UNTRUSTED_PEERS = fc.constantFrom('203.0.113.5', '198.51.100.20', '2001:db8::5', '192.168.1.20', '172.16.0.9', 'fd00::1', '::ffff:203.0.113.5')
const PROXY_HEADER = /^(x-forwarded-for|x-forwarded-proto|forwarded)$/i

/**
 * Proxy headers from a peer that is not a trusted proxy change nothing: the request gets
 * the decision it gets without them (the client's address and https are the socket's).
 */
export const untrustedProxyProperty = () =>
  fc.asyncProperty(fc.constantFrom<WorldKind>('open', 'strict'), hostileRequest, UNTRUSTED_PEERS, someProxyHeaders, async (kind, request, peer, proxy) => {
    const bare: HostileRequest = { ...request, peer, headers: request.headers.filter(([n]) => !PROXY_HEADER.test(n)) }
    const withProxy: HostileRequest = { ...bare, headers: [...bare.headers, ...proxy] }
    // The documented exception: a private peer claiming https while no proxy is trusted is refused (issue 7).
    if (proxyNotTrustedCase(kind, withProxy)) return
    const without = await runCoreCase(kind, bare, true)
    const withHeaders = await runCoreCase(kind, withProxy, true)
    if (without === undefined || withHeaders === undefined) return
    const a = decision(without, bare.method)
    const b = decision(withHeaders, bare.method)
    if (a !== b) throw new PropertyViolation(`proxy headers ${JSON.stringify(proxy)} from the untrusted peer ${peer} changed the decision (world ${kind}):\n without: ${a}\n with:    ${b}\n${bare.method} ${bare.target}`)
  })

/** An outcome as a comparable string: the answer with its random parts blanked, or the context without the clock. */
function decision(outcome: GateOutcome, method: string): string {
  if (outcome.type === 'respond') return normalise(outcome.response.status, outcome.response.headers, outcome.response.body, method === 'HEAD')
  const context = JSON.parse(JSON.stringify(outcome.context)) as { throttle: { resetMs?: number } | null; requestId?: unknown }
  if (context.throttle !== null) delete context.throttle.resetMs
  // Each request's own: two requests never share one.
  context.requestId = typeof context.requestId
  return `next ${JSON.stringify(context)}`
}
