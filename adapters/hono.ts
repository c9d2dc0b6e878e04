/**
 * The Hono adapter (Hono 4): a middleware over the Fetch adapter, which runs the gate and
 * either answers or sets `c.get('gate')`, awaits `next()` and adds the gate's headers to
 * the response. It translates and decides nothing; the translation is the Fetch
 * adapter's, since Hono speaks the Fetch standard.
 *
 * The options are the Fetch adapter's ({@link FetchGateOptions}), whose functions also
 * receive Hono's `Context`: Hono's own `getConnInfo` gives the address on every runtime
 * (`@hono/node-server/conninfo` on Node, `hono/bun`, `hono/deno`).
 *
 * @example
 * import { Hono } from 'hono'
 * import { serve } from '@hono/node-server'
 * import { getConnInfo } from '@hono/node-server/conninfo'
 * import { createGate } from 'open-data-gate'
 * import { honoGate } from 'open-data-gate/hono'
 *
 * const gate = createGate()
 * const app = new Hono()
 * app.use(honoGate(gate, { clientAddress: (request, c) => getConnInfo(c).remote.address, https: false }))
 * app.get('/resource/:id', (c) => c.json({ app: c.get('gate').application?.name ?? null }))
 * serve({ fetch: app.fetch, port: 8080 })
 *
 * @see docs/guides/hosts.md
 * @module open-data-gate/hono
 */
import type { Context, MiddlewareHandler } from 'hono'
import type { Gate, GateContext, GuardRule } from '../src/index.js'
import { fetchClient, fetchGuard, runFetchGate, toResponse, withGateHeaders, type FetchGateOptions } from './fetch.js'

declare module 'hono' {
  interface ContextVariableMap {
    /** What open-data-gate found out about the request (set by `honoGate`). */
    gate: GateContext
  }
}

/** The Fetch adapter's options; each function also receives Hono's `Context`. */
export type HonoGateOptions = FetchGateOptions<Context>

/** The environment the gate's middleware sets: `c.get('gate')`. */
export interface HonoGateEnv {
  Variables: { gate: GateContext }
}

/**
 * Mounts the gate in a Hono app: `app.use(honoGate(gate, { clientAddress, https }))`.
 * @throws {TypeError} at setup, without `clientAddress` and `https` (see {@link FetchGateOptions})
 */
export function honoGate(gate: Gate, options?: HonoGateOptions): MiddlewareHandler<HonoGateEnv> {
  const client = fetchClient(gate, options)
  return async (c, next) => {
    const request = c.req.raw
    const node = nodeBindings(c.env)
    let outcome
    try {
      const facts = client(request, c)
      if (node !== undefined) (facts as { [NODE_INCOMING]?: unknown })[NODE_INCOMING] = node.incoming
      // Awaited only when the gate answers asynchronously: a sync answer (the in-memory
      // store) goes on without a turn of the microtask queue.
      const result = runFetchGate(gate, request, facts)
      outcome = isPromiseLike(result) ? await result : result
    } catch (error) {
      // The gate's own failures are answered by the gate, as in every adapter, not by Hono.
      return toResponse(gate.errorResponse(error, { method: request.method, url: c.req.path }))
    }
    if (outcome.type === 'respond') return outcome.response
    c.set('gate', outcome.context)
    await next()
    if (gate.usage.counting) gate.usage.responded(outcome.context, c.res.status)
    const headers = outcome.headers
    if (node !== undefined) {
      // On @hono/node-server, on the Node response it is about to write: its writeHead puts
      // the Response's own headers over them, so a header of the same name the app set
      // wins, as withGateHeaders has it, and the Response's headers are never copied into
      // a `Headers` of their own (which costs more than the rest of the gate). Already
      // sent (the app wrote to the Node response itself): nothing to add, as below.
      if (!node.outgoing.headersSent) for (const name in headers) node.outgoing.setHeader(name, headers[name] as string)
      return undefined
    }
    const response = withGateHeaders(c.res, headers)
    if (response !== c.res) c.res = response
    return undefined
  }
}

/** The registered symbol adapters/fetch.ts reads a client's Node request under. */
const NODE_INCOMING = Symbol.for('open-data-gate.fetch.nodeIncoming')

/** What of @hono/node-server's bindings (`c.env.incoming`, `c.env.outgoing`) the adapter uses; no Node types here. */
interface NodeBindings {
  readonly incoming: { readonly headers: object; readonly rawHeaders: readonly string[] }
  readonly outgoing: { readonly headersSent: boolean; setHeader(name: string, value: string): unknown }
}

/** @hono/node-server's Node request and response, when the app runs on it over HTTP/1; `undefined` on any other runtime. */
function nodeBindings(env: unknown): NodeBindings | undefined {
  if (typeof env !== 'object' || env === null) return undefined
  const { incoming, outgoing } = env as Partial<Record<'incoming' | 'outgoing', Record<string, unknown> | null | undefined>>
  // HTTP/1 only: an HTTP/2 request's headers hold its pseudo-headers (`:path`), which the Fetch translation leaves out.
  if (typeof incoming !== 'object' || incoming === null || incoming.httpVersionMajor !== 1 || typeof incoming.headers !== 'object' || !Array.isArray(incoming.rawHeaders)) return undefined
  if (typeof outgoing !== 'object' || outgoing === null || typeof outgoing.setHeader !== 'function' || typeof outgoing.headersSent !== 'boolean') return undefined
  return env as NodeBindings
}

/**
 * A route guard: `app.get('/private/:id', honoGuard(gate, { auth: 'required' }), handler)`.
 * Mount `honoGate` first.
 */
export function honoGuard(gate: Gate, rule: GuardRule): MiddlewareHandler<HonoGateEnv> {
  const guard = fetchGuard(gate, rule)
  return async (c, next) => {
    const refusal = guard(c.get('gate') as GateContext | undefined)
    if (refusal !== undefined) return refusal
    await next()
    return undefined
  }
}

/**
 * Whether a value is a promise (or any thenable): the gate answers synchronously when its
 * store does. (Kept here: an adapter imports only what the package exports.)
 */
function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
}
