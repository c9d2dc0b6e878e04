/**
 * The Fetch-standard adapter: `Request` → {@link GateRequest}, {@link GateResponse} →
 * `Response`, for every host that speaks the Fetch standard: `Bun.serve`, `Deno.serve`,
 * Next.js and Remix route handlers, Cloudflare-style `fetch` exports, and Hono
 * (`open-data-gate/hono` builds on this). It decides nothing; the core does.
 *
 * A `Request` carries neither the client's address nor whether the connection was TLS,
 * so the host must say both: the `clientAddress` and `https` options. Nothing is guessed
 * from the request's URL or headers. Without them, setup fails with a `TypeError`, unless
 * the gate was made with `trustProxy: true` (the app is reachable only through proxies,
 * whose `X-Forwarded-For` / `X-Forwarded-Proto` or `Forwarded` headers then say both).
 *
 * Its types use only the Fetch standard's `Request` and `Response`: nothing from
 * `@types/node`.
 *
 * @example
 * // Bun
 * import { createGate } from 'open-data-gate'
 * import { fetchGate } from 'open-data-gate/fetch'
 *
 * const gate = createGate()
 * Bun.serve({
 *   port: 8080,
 *   fetch: fetchGate(gate, (request, context) => Response.json({ app: context.application?.name ?? null }), {
 *     clientAddress: (request, server) => server.requestIP(request)?.address,
 *     https: false,
 *   }),
 * })
 *
 * @example
 * // Deno
 * Deno.serve(fetchGate(gate, handler, { clientAddress: (request, info) => info.remoteAddr.hostname, https: false }))
 *
 * @see docs/guides/hosts.md for Bun, Deno, Node, Next.js and proxies
 * @module open-data-gate/fetch
 */
import { assertGate, authorizationLines, type Gate, type GateContext, type GateOutcome, type GateRequest, type GateResponse, type GuardRule, type HeaderValue, type RequestBody } from '../src/index.js'

/** Your handler, called for every request the gate lets through, with what the gate found. */
export type FetchGatedHandler<Host = unknown> = (request: Request, gate: GateContext, host: Host) => Response | PromiseLike<Response>

/**
 * How to learn, per request, what a `Request` does not carry. The functions receive the
 * request and what the host hands its `fetch` handler beside it (Bun's `server`, Deno's
 * `info`, Hono's `Context`).
 */
export interface FetchGateOptions<Host = unknown> {
  /**
   * The address of the peer the request came from (the socket's remote address): on Bun
   * `server.requestIP(request)?.address`, on Deno `info.remoteAddr.hostname`, on
   * `@hono/node-server` `getConnInfo(c).remote.address`. Behind a proxy, the proxy's
   * address, and `trustProxy` set: the gate then reads the client's from the proxy's
   * headers. Required unless the gate trusts every proxy (`trustProxy: true`).
   */
  readonly clientAddress?: ((request: Request, host: Host) => string | null | undefined) | undefined
  /**
   * Whether the connection that brought the request is TLS: `true` for a server with a
   * certificate, `false` for plain http (also behind a proxy, which then says what the
   * client used). Required unless the gate trusts every proxy (then `false`).
   */
  readonly https?: boolean | ((request: Request, host: Host) => boolean) | undefined
}

/** The connection facts of one request, for {@link runFetchGate}. */
export interface FetchClient {
  /** The peer's address; see {@link FetchGateOptions.clientAddress}. */
  readonly clientAddress?: string | null | undefined
  /** Whether the connection is TLS; see {@link FetchGateOptions.https}. */
  readonly https?: boolean | undefined
}

/** What {@link runFetchGate} decided. */
export type FetchGateOutcome =
  /** Let the request through: expose `context`, add `headers` to your response ({@link withGateHeaders}). */
  | { readonly type: 'next'; readonly context: GateContext; readonly headers: Readonly<Record<string, string>> }
  /** The gate answers: send `response` as it is. */
  | { readonly type: 'respond'; readonly response: Response }

/**
 * Wraps a Fetch handler: the gate runs first and answers itself when it refuses the
 * request (403, 429, ...) or serves one of its own endpoints; otherwise `handler` runs,
 * and the gate's headers (`RateLimit`, ...) are added to its `Response`, under any of the
 * same name it set (a copy of the response when its headers are immutable, as those of a
 * `fetch()` or `Response.redirect()` are). A handler that throws gets the gate's 500.
 * @throws {TypeError} at setup, without `clientAddress` and `https` (see {@link FetchGateOptions})
 */
export function fetchGate<Host = unknown>(gate: Gate, handler: FetchGatedHandler<Host>, options?: FetchGateOptions<Host>): (request: Request, host?: Host) => Promise<Response> {
  if (typeof handler !== 'function') throw new TypeError('open-data-gate: fetchGate(gate, handler, options) needs a handler function')
  const client = fetchClient(gate, options)
  return async (request, host) => {
    let context: GateContext | undefined
    try {
      // `host` is what the host hands its fetch handler beside the request; a direct call may leave it out.
      const outcome = await runFetchGate(gate, request, client(request, host as Host))
      if (outcome.type === 'respond') return outcome.response
      context = outcome.context
      const response = await handler(request, context, host as Host)
      // The host's final answer, for the usage counts.
      if (gate.usage.counting) gate.usage.responded(context, response.status)
      return withGateHeaders(response, outcome.headers)
    } catch (error) {
      const response = toResponse(gate.errorResponse(error, { method: request.method, url: originForm(request.url), requestId: context?.requestId }))
      // A handler that threw is the host's 500, counted as the other mounts count it.
      if (context !== undefined && gate.usage.counting) gate.usage.responded(context, response.status)
      return response
    }
  }
}

/**
 * Checks the `clientAddress` and `https` options once, as {@link fetchGate} does, and
 * gives the function that finds a request's {@link FetchClient}: for a router of your own
 * that calls {@link runFetchGate}.
 * @throws {TypeError} naming the option that is missing or of the wrong type
 * @example
 * const client = fetchClient(gate, { clientAddress: (request, server) => server.requestIP(request)?.address, https: false })
 * Bun.serve({ async fetch(request, server) {
 *   const outcome = await runFetchGate(gate, request, client(request, server))
 *   if (outcome.type === 'respond') return outcome.response
 *   return withGateHeaders(await route(request, outcome.context), outcome.headers)
 * } })
 */
export function fetchClient<Host = unknown>(gate: Gate, options?: FetchGateOptions<Host>): (request: Request, host: Host) => FetchClient {
  assertGate(gate, 'the fetch adapter (fetchGate, fetchClient, honoGate)')
  if (options !== undefined && (typeof options !== 'object' || options === null)) throw new TypeError('open-data-gate: the fetch adapter\'s options must be an object: { clientAddress, https }')
  const { clientAddress, https } = options ?? {}
  if (clientAddress !== undefined && typeof clientAddress !== 'function') {
    throw new TypeError('open-data-gate: clientAddress must be a function of the request that gives the peer\'s address')
  }
  if (https !== undefined && typeof https !== 'boolean' && typeof https !== 'function') {
    throw new TypeError('open-data-gate: https must be true, false, or a function of the request that says whether its connection is TLS')
  }
  if (!gate.trustsEveryProxy) {
    if (clientAddress === undefined) throw new TypeError(NO_ADDRESS)
    if (https === undefined) throw new TypeError(NO_HTTPS)
  }
  return (request, host) => ({
    clientAddress: clientAddress?.(request, host),
    https: typeof https === 'function' ? https(request, host) : https === true,
  })
}

const NO_ADDRESS =
  'open-data-gate: the fetch adapter needs the clientAddress option: a Request does not carry the client\'s address, and the gate will not guess it. ' +
  'On Bun: (request, server) => server.requestIP(request)?.address; on Deno: (request, info) => info.remoteAddr.hostname; ' +
  'on @hono/node-server: (request, c) => getConnInfo(c).remote.address. Only a gate made with trustProxy: true (reachable solely through proxies) may leave it out.'
const NO_HTTPS =
  'open-data-gate: the fetch adapter needs the https option: whether the connection that brought the request is TLS (true for a server with a certificate; ' +
  'false for plain http, behind a proxy too, which then says what the client used). The gate will not guess it from the URL.'

/**
 * Runs the gate on a `Request`, with the connection facts of this one call. When the gate
 * lets the request through, gives the context and the headers to add to your response;
 * when it answers itself, the `Response` to send. Synchronous when the gate is (the
 * in-memory store), so `await` the result.
 * @throws {TypeError} when `client` lacks the address or https (unless the gate trusts every proxy)
 */
export function runFetchGate(gate: Gate, request: Request, client: FetchClient): FetchGateOutcome | Promise<FetchGateOutcome> {
  const address = client.clientAddress
  const peer = typeof address === 'string' && address !== '' ? address : undefined
  if (!gate.trustsEveryProxy) {
    if (peer === undefined) throw new TypeError(`open-data-gate: the client address of ${request.method} ${originForm(request.url)} is unknown, and the gate will not guess it (clientAddress gave ${String(address)})`)
    if (typeof client.https !== 'boolean') throw new TypeError(NO_HTTPS)
  }
  const outcome = gate.handle(new FetchGateRequest(request, peer, client.https === true, (client as { [NODE_INCOMING]?: NodeIncomingLike })[NODE_INCOMING]))
  return isPromiseLike(outcome) ? Promise.resolve(outcome).then(toFetchOutcome) : toFetchOutcome(outcome)
}

function toFetchOutcome(outcome: GateOutcome): FetchGateOutcome {
  return outcome.type === 'respond' ? { type: 'respond', response: toResponse(outcome.response) } : outcome
}

/**
 * A route guard: compile once, call per request with what the gate found.
 * @returns the `Response` that refuses the request, or `undefined` to go on
 * @example
 * const privateData = fetchGuard(gate, { auth: 'required' })
 * fetchGate(gate, (request, context) => privateData(context) ?? Response.json(secrets), options)
 */
export function fetchGuard(gate: Gate, rule: GuardRule): (context: GateContext | undefined) => Response | undefined {
  const guard = gate.guard(rule)
  return (context) => {
    const error = guard(context)
    return error === undefined ? undefined : toResponse(gate.errorResponse(error))
  }
}

/**
 * Adds the gate's headers to a response, under any of the same name it already has. Gives
 * the same response, or a copy when its headers are immutable.
 */
export function withGateHeaders(response: Response, headers: Readonly<Record<string, string>>): Response {
  let target = response
  for (const name in headers) {
    if (target.headers.has(name)) continue
    const value = headers[name] as string
    try {
      target.headers.set(name, value)
    } catch {
      try {
        target = new Response(target.body, target)
      } catch {
        return target // a response no Response can copy (a 101 upgrade): it goes out without the gate's headers
      }
      target.headers.set(name, value)
    }
  }
  return target
}

/** A gate response as a Fetch `Response`. */
export function toResponse(response: GateResponse): Response {
  const headers = new Headers()
  for (const name in response.headers) {
    const value = response.headers[name] as string | readonly string[]
    if (typeof value === 'string') headers.set(name, value)
    else for (const one of value) headers.append(name, one)
  }
  // A string body would make the Response add `text/plain`; the gate's empty answers (303) have no type.
  return new Response(response.body === '' ? null : response.body, { status: response.status, headers })
}

/**
 * Where the Hono adapter puts, on a {@link FetchClient}, the Node request a `Request` of
 * `@hono/node-server` was made from (`c.env.incoming`): its headers are parsed already, and
 * reading them there spares copying every header out of the `Request` (which makes that
 * server build a `Headers` it otherwise never needs). A registered symbol, the same in
 * adapters/hono.ts, so that it is no export of the package.
 */
const NODE_INCOMING: unique symbol = Symbol.for('open-data-gate.fetch.nodeIncoming') as never

/** What of a Node `IncomingMessage` the translation reads (no Node types here). */
interface NodeIncomingLike {
  readonly headers: Readonly<Record<string, HeaderValue>>
  readonly rawHeaders: readonly string[]
}

/** A `Request` as the core's plain object. A class: `readBody` is a method, not a closure made per request. */
class FetchGateRequest implements GateRequest {
  readonly method: string
  readonly url: string
  readonly headers: Readonly<Record<string, HeaderValue>>
  readonly authorization: readonly string[] | undefined
  readonly peerAddress: string | undefined
  readonly tls: boolean
  readonly #request: Request

  constructor(request: Request, peerAddress: string | undefined, tls: boolean, incoming: NodeIncomingLike | undefined) {
    this.method = request.method
    this.url = originForm(request.url)
    if (incoming !== undefined) {
      // As the node:http adapter reads them: Node keeps only the first Authorization
      // header in `headers`, and the gate must see them all.
      this.headers = incoming.headers
      this.authorization = incoming.headers.authorization === undefined ? undefined : authorizationLines(incoming.rawHeaders)
    } else {
      // Fetch joins repeated headers with ", ", Authorization included: the core then sees
      // two sets of credentials as one malformed header, and refuses them as it would two.
      const headers: Record<string, string> = Object.create(null) as Record<string, string>
      request.headers.forEach((value, name) => {
        headers[name] = value
      })
      this.headers = headers
      this.authorization = undefined
    }
    this.peerAddress = peerAddress
    this.tls = tls
    this.#request = request
  }

  readBody(limit: number, signal?: AbortSignal): Promise<RequestBody> {
    return readBody(this.#request, limit, signal)
  }
}

/** `https://host/path?query` → `/path?query`: the origin-form target the core reads. */
function originForm(url: string): string {
  const scheme = url.indexOf('://')
  if (scheme === -1) return url.startsWith('/') ? url : `/${url}`
  const slash = url.indexOf('/', scheme + 3)
  const query = url.indexOf('?', scheme + 3)
  if (slash === -1 || (query !== -1 && query < slash)) return query === -1 ? '/' : `/${url.slice(query)}`
  return url.slice(slash)
}

const TIMED_OUT = 'the body did not arrive in time'

/**
 * The body, at most `limit` bytes, until `signal` aborts. Past the limit or the deadline
 * it stops reading (and leaves the rest unread: the core's answer says to close the
 * connection); it never waits for the whole body first.
 */
async function readBody(request: Request, limit: number, signal: AbortSignal | undefined): Promise<RequestBody> {
  const body = request.body
  if (body === null) return { kind: 'raw', bytes: new Uint8Array(0) }
  if (signal?.aborted) throw new Error(TIMED_OUT)
  const reader = body.getReader()
  let onAbort: (() => void) | undefined
  const deadline = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Error(TIMED_OUT))
    signal?.addEventListener('abort', onAbort, { once: true })
  })
  deadline.catch(() => {}) // raced below; never left unhandled
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    for (;;) {
      const read = reader.read()
      read.catch(() => {}) // a read still pending at the deadline fails when the lock is released
      const { done, value } = await Promise.race([read, deadline])
      if (done) break
      size += value.byteLength
      if (size > limit) return { kind: 'too-large' }
      chunks.push(value)
    }
  } finally {
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort)
    try {
      reader.releaseLock()
    } catch {
      // an older runtime refuses to release a lock with a read pending; the answer closes the connection anyway
    }
  }
  if (chunks.length === 1) return { kind: 'raw', bytes: chunks[0] as Uint8Array }
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return { kind: 'raw', bytes }
}

/**
 * Whether a value is a promise (or any thenable): the gate answers synchronously when its
 * store does. (Kept here: an adapter imports only what the package exports.)
 */
function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
}
