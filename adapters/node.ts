/**
 * The node:http adapter, and the translation the Express and Koa adapters build on:
 * `IncomingMessage` → {@link GateRequest}, {@link GateResponse} → `ServerResponse`.
 * It decides nothing; the core does.
 *
 * @example
 * import http from 'node:http'
 * import { createGate } from 'open-data-gate'
 * import { nodeGate } from 'open-data-gate/node'
 *
 * const gate = createGate()
 * http.createServer(nodeGate(gate, (req, res) => {
 *   res.end(JSON.stringify({ app: req.gate.application?.name ?? null }))
 * })).listen(8080)
 *
 * @module open-data-gate/node
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { TLSSocket } from 'node:tls'
import { assertGate, authorizationLines } from '../src/index.js'
import type { Gate, GateContext, GateOutcome, GateRequest, GateResponse, GuardRule, RequestBody } from '../src/index.js'

/** A request the gate let through: `req.gate` tells what it found. */
export interface GatedRequest extends IncomingMessage {
  gate: GateContext
}

/** Your handler, called for every request the gate lets through. */
export type GatedHandler = (req: GatedRequest, res: ServerResponse) => unknown

/**
 * Wraps a node:http handler: the gate runs first and answers itself when it refuses the
 * request (403, 429, ...); otherwise `handler` runs with `req.gate` set.
 * @throws {TypeError} at mount, when `gate` is not the gate `createGate()` returns (its options, say), or `handler` is not a function
 */
export function nodeGate(gate: Gate, handler: GatedHandler): (req: IncomingMessage, res: ServerResponse) => void {
  assertGate(gate, 'nodeGate(gate, handler)')
  if (typeof handler !== 'function') throw new TypeError('open-data-gate: nodeGate(gate, handler) needs a handler function')
  // The handler's own failures still get an answer: a 500 while nothing is sent, else the socket closes.
  const fail = (req: IncomingMessage, res: ServerResponse, error: unknown) => {
    // With the request's id, so the internalError event and log line name the request.
    if (!res.headersSent) writeGateResponse(res, gate.errorResponse(error, { method: req.method ?? 'GET', url: req.url ?? '/', requestId: (req as Partial<GatedRequest>).gate?.requestId }))
    else res.destroy()
  }
  const run = (req: IncomingMessage, res: ServerResponse) => {
    try {
      const result = handler(req as GatedRequest, res)
      if (isPromiseLike(result)) Promise.resolve(result).catch((error: unknown) => fail(req, res, error))
    } catch (error) {
      fail(req, res, error)
    }
  }
  return (req, res) => {
    let passed: boolean | Promise<boolean>
    try {
      passed = runGate(gate, req, res)
    } catch (error) {
      fail(req, res, error)
      return
    }
    if (passed === true) run(req, res)
    else if (passed !== false) passed.then((p) => p && run(req, res), (error: unknown) => fail(req, res, error))
  }
}

/**
 * Runs the gate on a node request. When it lets the request through, sets its headers
 * on `res`, sets `req.gate` and gives `true`; when it answers itself, writes the answer
 * and gives `false`. Synchronous when the gate is (the in-memory store), so `await` the
 * result. For composing with routers of your own.
 * @param parsedBody a body a body parser already read, reused by the endpoints that need one
 */
export function runGate(gate: Gate, req: IncomingMessage, res: ServerResponse, parsedBody?: ParsedBody): boolean | Promise<boolean> {
  const outcome = gate.handle(toGateRequest(req, parsedBody))
  return isPromiseLike(outcome) ? Promise.resolve(outcome).then((settled) => apply(gate, settled, req, res)) : apply(gate, outcome, req, res)
}

function apply(gate: Gate, outcome: GateOutcome, req: IncomingMessage, res: ServerResponse): boolean {
  if (outcome.type === 'respond') {
    writeGateResponse(res, outcome.response)
    return false
  }
  const headers = outcome.headers
  for (const name in headers) res.setHeader(name, headers[name] as string)
  ;(req as GatedRequest).gate = outcome.context
  countStatus(gate, outcome.context, res)
  return true
}

/** Tells the gate's usage counts the host's final status, once the response is sent. */
export function countStatus(gate: Gate, context: GateContext, res: ServerResponse): void {
  if (gate.usage.counting) res.on('finish', () => gate.usage.responded(context, res.statusCode))
}

/**
 * A route guard for node:http: compile once, call per request.
 * @returns a function that answers the request itself (and returns `false`) when the
 * rule refuses it, or returns `true` to let your handler go on
 * @example
 * const privateData = nodeGuard(gate, { auth: 'required' })
 * http.createServer(nodeGate(gate, (req, res) => {
 *   if (req.url?.startsWith('/private/') && !privateData(req, res)) return
 *   // ...
 * }))
 */
export function nodeGuard(gate: Gate, rule: GuardRule): (req: IncomingMessage, res: ServerResponse) => boolean {
  assertGate(gate, 'nodeGuard(gate, rule)')
  const guard = gate.guard(rule)
  return (req, res) => {
    const error = guard((req as Partial<GatedRequest>).gate)
    if (error === undefined) return true
    writeGateResponse(res, gate.errorResponse(error, toGateRequest(req)))
    return false
  }
}

/**
 * A body a framework's parser already read: the value, or a function that finds it, so
 * that requests which never need a body (nearly all) never look for one.
 */
export type ParsedBody = unknown

/** A node request as the core's plain object. */
export function toGateRequest(req: IncomingMessage, parsedBody?: ParsedBody): GateRequest {
  return new NodeGateRequest(req, parsedBody)
}

/** A class rather than an object literal: `readBody` is a method, not a closure made per request. */
class NodeGateRequest implements GateRequest {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage['headers']
  readonly authorization: readonly string[] | undefined
  readonly peerAddress: string | undefined
  readonly tls: boolean
  readonly #req: IncomingMessage
  readonly #parsedBody: unknown

  constructor(req: IncomingMessage, parsedBody: unknown) {
    this.method = req.method ?? 'GET'
    this.url = req.url ?? '/'
    this.headers = req.headers
    // Node keeps only the first Authorization header in `headers`; the gate must see them all.
    this.authorization = req.headers.authorization === undefined ? undefined : authorizationLines(req.rawHeaders)
    this.peerAddress = req.socket.remoteAddress
    this.tls = (req.socket as Partial<TLSSocket>).encrypted === true
    this.#req = req
    this.#parsedBody = parsedBody
  }

  readBody(limit: number, signal?: AbortSignal): Promise<RequestBody> {
    return readBody(this.#req, limit, this.parsedBody(), signal)
  }

  parsedBody(): unknown {
    return typeof this.#parsedBody === 'function' ? (this.#parsedBody as () => unknown)() : this.#parsedBody
  }
}

/** Writes a gate response, unless the response is already under way. */
export function writeGateResponse(res: ServerResponse, response: GateResponse): void {
  if (res.headersSent) {
    res.destroy()
    return
  }
  res.statusCode = response.status
  for (const name in response.headers) res.setHeader(name, response.headers[name] as string | string[])
  res.setHeader('content-length', Buffer.byteLength(response.body))
  res.end(response.body)
}

/**
 * The body, for the endpoints that need one: what a body parser already produced, or
 * the stream read here, at most `limit` bytes, until `signal` aborts. Past the limit or
 * the deadline it stops reading; the core's answer then says to close the connection.
 */
function readBody(req: IncomingMessage, limit: number, parsedBody: unknown, signal: AbortSignal | undefined): Promise<RequestBody> {
  if (parsedBody !== undefined) return Promise.resolve({ kind: 'parsed', value: parsedBody })
  if (req.readableEnded) return Promise.resolve({ kind: 'raw', bytes: Buffer.alloc(0) })
  if (signal?.aborted) return Promise.reject(new Error('the body did not arrive in time'))
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const cleanup = () => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
      req.off('aborted', onAborted)
      signal?.removeEventListener('abort', onDeadline)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        cleanup()
        req.pause() // read no more: the answer closes the connection
        resolve({ kind: 'too-large' })
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resolve({ kind: 'raw', bytes: Buffer.concat(chunks, size) })
    }
    const onError = (error: Error) => {
      cleanup()
      reject(error)
    }
    const onAborted = () => onError(new Error('request aborted'))
    const onDeadline = () => {
      req.pause()
      onError(new Error('the body did not arrive in time'))
    }
    signal?.addEventListener('abort', onDeadline, { once: true })
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onError)
    req.on('aborted', onAborted)
  })
}

/**
 * Whether a value is a promise (or any thenable): the gate answers synchronously when its
 * store does, and an adapter then stays synchronous too. (Kept here: an adapter imports
 * only what the package exports.)
 */
function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
}
