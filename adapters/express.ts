/**
 * The Express adapter (Express 5 and 4): a middleware that runs the gate and either
 * answers or sets `req.gate` and calls `next()`. It translates and decides nothing; the
 * translation itself is the node:http adapter's, since Express sits on node:http.
 *
 * @example
 * import express from 'express'
 * import { createGate } from 'open-data-gate'
 * import { expressGate } from 'open-data-gate/express'
 *
 * const gate = createGate()
 * const app = express()
 * app.use(expressGate(gate))
 * app.get('/resource/:id.json', (req, res) => res.json({ app: req.gate.application?.name ?? null }))
 *
 * @module open-data-gate/express
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Gate, GateContext, GuardRule } from '../src/index.js'
import { assertGate } from '../src/index.js'
import { nodeGuard, runGate, toGateRequest, writeGateResponse } from './node.js'
// Loads Express's types so the augmentation below has a module to extend.
import type {} from 'express-serve-static-core'

declare module 'express-serve-static-core' {
  interface Request {
    /** What open-data-gate found out about the request (set by `expressGate`). */
    gate: GateContext
  }
}

/** The shape of an Express middleware, without depending on Express's types. */
export type ExpressMiddleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void

/**
 * Mounts the gate in an Express app: `app.use(expressGate(gate))`. Mount it before any body
 * parser (`express.json()`), or give parsers to your routes only: a parser in front answers
 * a malformed body to the token endpoint with Express's HTML 400 before the gate can send
 * its OAuth JSON error.
 * @throws {TypeError} at mount, when `gate` is not the gate `createGate()` returns (its options, say)
 */
export function expressGate(gate: Gate): ExpressMiddleware {
  assertGate(gate, 'expressGate(gate)')
  return (req, res, next) => {
    // The gate's own failures are answered by the gate, as in every adapter, not by Express.
    const fail = (error: unknown) => writeGateResponse(res, gate.errorResponse(error, toGateRequest(req)))
    let passed: boolean | Promise<boolean>
    try {
      passed = runGate(gate, req, res, () => parsedBody(req))
    } catch (error) {
      fail(error)
      return
    }
    if (passed === true) next()
    else if (passed !== false) passed.then((p) => p && next(), fail)
  }
}

/**
 * A route guard: `app.get('/private/:id.json', expressGuard(gate, { auth: 'required' }), handler)`.
 * Mount `expressGate` first.
 */
export function expressGuard(gate: Gate, rule: GuardRule): ExpressMiddleware {
  assertGate(gate, 'expressGuard(gate, rule)')
  const guard = nodeGuard(gate, rule)
  return (req, res, next) => {
    if (guard(req, res)) next()
  }
}

/** A body a body parser (express.json(), express.urlencoded()) already read, to reuse. */
function parsedBody(req: IncomingMessage & { body?: unknown; _body?: boolean }): unknown {
  return req._body === true || req.readableEnded ? req.body : undefined
}
