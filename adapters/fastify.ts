/**
 * The Fastify adapter (Fastify 5): a plugin that runs the gate in an `onRequest` hook,
 * before Fastify routes, parses or validates anything. When the gate answers itself (a
 * refusal, or one of its own endpoints) it answers through `reply.send()`, so that the
 * app's `onSend` and `onResponse` hooks see the answer as they see any other; otherwise it
 * sets `request.gate` and the gate's headers on `reply`, and the request goes on. It
 * translates and decides nothing; the request translation is the node:http adapter's,
 * since Fastify sits on node:http.
 *
 * Wrapped with `fastify-plugin`, so the hook applies to the whole app, not only inside
 * the plugin's own encapsulation context.
 *
 * The gate's endpoints that read a body (the OAuth token and revocation endpoints, the
 * sign-in and consent forms, the API key endpoints) read it themselves from the request
 * stream, with the gate's size and time limits, before Fastify's body parser would (which
 * has no `application/x-www-form-urlencoded` parser of its own, and RFC 6749 clients send
 * that).
 *
 * @example
 * import Fastify from 'fastify'
 * import { createGate } from 'open-data-gate'
 * import { fastifyGate, fastifyGuard } from 'open-data-gate/fastify'
 *
 * const gate = createGate()
 * const app = Fastify()
 * await app.register(fastifyGate, { gate })
 * app.get('/resource/:id', async (request) => ({ app: request.gate.application?.name ?? null }))
 * app.get('/private/:id', { preHandler: fastifyGuard(gate, { auth: 'required' }) }, async (request) => ({ user: request.gate.user?.username }))
 *
 * @module open-data-gate/fastify
 */
import type { FastifyPluginCallback, FastifyReply, FastifyRequest, onRequestHookHandler, preHandlerHookHandler } from 'fastify'
import fastifyPlugin from 'fastify-plugin'
import { assertGate, type Gate, type GateContext, type GateOutcome, type GateResponse, type GuardRule } from '../src/index.js'
import { countStatus, toGateRequest } from './node.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** What open-data-gate found out about the request (set by the `fastifyGate` plugin). */
    gate: GateContext
  }
}

/** The plugin's options: `app.register(fastifyGate, { gate })`. */
export interface FastifyGateOptions {
  /** The gate made by `createGate()`. */
  gate: Gate
}

const plugin: FastifyPluginCallback<FastifyGateOptions> = (app, options, done) => {
  const gate = (options as Partial<FastifyGateOptions> | undefined)?.gate
  try {
    assertGate(gate, 'app.register(fastifyGate, { gate })')
  } catch (error) {
    done(error as TypeError)
    return
  }
  // `null` until the hook sets it: Fastify wants the shape of a request decoration known up front.
  app.decorateRequest('gate', null as unknown as GateContext)
  app.addHook('onRequest', gateHook(gate))
  done()
}

/**
 * The plugin: `await app.register(fastifyGate, { gate })`. Registers the `onRequest` hook
 * for the whole app and decorates `request.gate`.
 * @throws {TypeError} (from `register`) without a gate
 */
export const fastifyGate = fastifyPlugin(plugin, { fastify: '5.x', name: 'open-data-gate' })

/** The `onRequest` hook. */
function gateHook(gate: Gate): onRequestHookHandler {
  // Not an async hook: when the gate answers synchronously (the in-memory store), so does the hook.
  return function gateOnRequest(request, reply, done) {
    let outcome
    try {
      outcome = gate.handle(toGateRequest(request.raw))
    } catch (error) {
      fail(gate, request, reply, error)
      return
    }
    if (isPromiseLike(outcome)) {
      Promise.resolve(outcome).then(
        (settled) => proceed(gate, settled, request, reply, done),
        (error: unknown) => fail(gate, request, reply, error),
      )
    } else {
      proceed(gate, outcome, request, reply, done)
    }
  }
}

function proceed(gate: Gate, outcome: GateOutcome, request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  if (outcome.type === 'respond') {
    send(reply, outcome.response) // answering from a hook: Fastify stops here, and `done` is not called
    return
  }
  const headers = outcome.headers
  for (const name in headers) reply.header(name, headers[name])
  request.gate = outcome.context
  countStatus(gate, outcome.context, reply.raw)
  done()
}

/** The gate's own failures are answered by the gate, as in every adapter, not by Fastify's error handler. */
function fail(gate: Gate, request: FastifyRequest, reply: FastifyReply, error: unknown): void {
  send(reply, gate.errorResponse(error, toGateRequest(request.raw)))
}

/**
 * A route guard as a `preHandler`:
 * `app.get('/private/:id', { preHandler: fastifyGuard(gate, { auth: 'required' }) }, handler)`.
 * Register `fastifyGate` first.
 */
export function fastifyGuard(gate: Gate, rule: GuardRule): preHandlerHookHandler {
  const guard = gate.guard(rule)
  return function gateGuard(request, reply, done) {
    const error = guard((request as { gate?: GateContext | null }).gate ?? undefined)
    if (error === undefined) done()
    else send(reply, gate.errorResponse(error, toGateRequest(request.raw)))
  }
}

/** Hands a gate response to Fastify, which writes it (and runs the app's `onSend` hooks). */
function send(reply: FastifyReply, response: GateResponse): void {
  if (reply.sent) return
  reply.code(response.status)
  for (const name in response.headers) reply.header(name, response.headers[name])
  // No payload for an empty answer (a 303): a string would be typed text/plain.
  if (response.body === '') reply.send()
  else reply.send(response.body)
}

/**
 * Whether a value is a promise (or any thenable): the gate answers synchronously when its
 * store does. (Kept here: an adapter imports only what the package exports.)
 */
function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
}
