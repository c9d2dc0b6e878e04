/**
 * The Koa adapter (Koa 3 and 2): a middleware that runs the gate and either answers
 * through `ctx` or sets `ctx.state.gate` and awaits `next()`. It translates and decides
 * nothing; the request translation is the node:http adapter's, since Koa sits on it.
 *
 * @example
 * import Koa from 'koa'
 * import { createGate } from 'open-data-gate'
 * import { koaGate } from 'open-data-gate/koa'
 *
 * const gate = createGate()
 * const app = new Koa()
 * app.use(koaGate(gate))
 * app.use((ctx) => { ctx.body = { app: ctx.state.gate.application?.name ?? null } })
 *
 * @module open-data-gate/koa
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { assertGate } from '../src/index.js'
import type { Gate, GateContext, GateOutcome, GateResponse, GuardRule } from '../src/index.js'
import { countStatus, toGateRequest } from './node.js'
// Loads Koa's types so the augmentation below has a module to extend.
import type {} from 'koa'

declare module 'koa' {
  interface DefaultState {
    /** What open-data-gate found out about the request (set by `koaGate`). */
    gate: GateContext
  }
}

/** The parts of a Koa context the adapter uses, without depending on Koa's types. */
export interface KoaContextLike {
  req: IncomingMessage
  res: ServerResponse
  /** Koa's request; `body` is read when a body parser set it. */
  request: object
  state: object
  status: number
  body: unknown
  set(fields: { [name: string]: string | string[] }): void
  remove(field: string): void
}

/** The shape of a Koa middleware. */
export type KoaMiddleware = (ctx: KoaContextLike, next: () => Promise<unknown>) => Promise<unknown> | undefined

/**
 * Mounts the gate in a Koa app: `app.use(koaGate(gate))`. Mount it before any body parser
 * (`@koa/bodyparser`): a parser in front answers a malformed body to the token endpoint
 * with Koa's plain-text 400 before the gate can send its OAuth JSON error.
 * @throws {TypeError} at mount, when `gate` is not the gate `createGate()` returns (its options, say)
 */
export function koaGate(gate: Gate): KoaMiddleware {
  assertGate(gate, 'koaGate(gate)')
  // Not an async function: when the gate answers synchronously, so does this middleware.
  return (ctx, next) => {
    const outcome = gate.handle(toGateRequest(ctx.req, () => (ctx.req.readableEnded ? (ctx.request as { body?: unknown }).body : undefined)))
    return isPromiseLike(outcome) ? Promise.resolve(outcome).then((settled) => proceed(gate, ctx, next, settled)) : proceed(gate, ctx, next, outcome)
  }
}

function proceed(gate: Gate, ctx: KoaContextLike, next: () => Promise<unknown>, outcome: GateOutcome): Promise<unknown> | undefined {
  if (outcome.type === 'respond') {
    respond(ctx, outcome.response)
    return undefined
  }
  // Straight to the node response: the gate's headers are valid, Koa's set() re-checks each.
  const headers = outcome.headers
  for (const name in headers) ctx.res.setHeader(name, headers[name] as string)
  ;(ctx.state as { gate: GateContext }).gate = outcome.context
  countStatus(gate, outcome.context, ctx.res)
  return next()
}

/**
 * A route guard: `router.get('/private/:id.json', koaGuard(gate, { auth: 'required' }), handler)`,
 * or `app.use(koaGuard(...))` in front of private routes. Mount `koaGate` first.
 */
export function koaGuard(gate: Gate, rule: GuardRule): KoaMiddleware {
  assertGate(gate, 'koaGuard(gate, rule)')
  const guard = gate.guard(rule)
  return (ctx, next) => {
    const error = guard((ctx.state as { gate?: GateContext }).gate)
    if (error === undefined) return next()
    respond(ctx, gate.errorResponse(error, toGateRequest(ctx.req)))
    return undefined
  }
}

/** Hands a gate response to Koa (which then writes it), headers before the body so Koa keeps our Content-Type. */
function respond(ctx: KoaContextLike, response: GateResponse): void {
  ctx.status = response.status
  ctx.set(response.headers as { [name: string]: string | string[] })
  ctx.body = response.body
  // Koa types a string body as text/plain; a bodiless 303 or 200 has no type at all.
  // (Not `ctx.body = null`: Koa turns that into a 204.)
  if (response.body === '') ctx.remove('Content-Type')
}

/**
 * Whether a value is a promise (or any thenable): the gate answers synchronously when its
 * store does, and an adapter then stays synchronous too. (Kept here: an adapter imports
 * only what the package exports.)
 */
function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
}
