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
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { TLSSocket } from 'node:tls'
import type { Gate, GateContext, GateRequest, GateResponse, GuardRule, RequestBody } from '../src/index.js'

/** A request the gate let through: `req.gate` tells what it found. */
export interface GatedRequest extends IncomingMessage {
  gate: GateContext
}

/** Your handler, called for every request the gate lets through. */
export type GatedHandler = (req: GatedRequest, res: ServerResponse) => unknown

/**
 * Wraps a node:http handler: the gate runs first and answers itself when it refuses the
 * request (403, 429, ...); otherwise `handler` runs with `req.gate` set.
 */
export function nodeGate(gate: Gate, handler: GatedHandler): (req: IncomingMessage, res: ServerResponse) => void {
  if (typeof handler !== 'function') throw new TypeError('open-data-gate: nodeGate(gate, handler) needs a handler function')
  return (req, res) => {
    runGate(gate, req, res).then(
      (passed) => (passed ? handler(req as GatedRequest, res) : undefined),
    ).catch((error: unknown) => {
      if (!res.headersSent) writeGateResponse(res, gate.errorResponse(error, toGateRequest(req)))
      else res.destroy()
    })
  }
}

/**
 * Runs the gate on a node request. When it lets the request through, sets its headers
 * on `res`, sets `req.gate` and resolves `true`; when it answers itself, writes the
 * answer and resolves `false`. For composing with routers of your own.
 * @param parsedBody a body a body parser already read, reused by the endpoints that need one
 */
export async function runGate(gate: Gate, req: IncomingMessage, res: ServerResponse, parsedBody?: unknown): Promise<boolean> {
  const outcome = await gate.handle(toGateRequest(req, parsedBody))
  if (outcome.type === 'respond') {
    writeGateResponse(res, outcome.response)
    return false
  }
  const headers = outcome.headers
  for (const name in headers) res.setHeader(name, headers[name] as string)
  ;(req as GatedRequest).gate = outcome.context
  return true
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
  const guard = gate.guard(rule)
  return (req, res) => {
    const error = guard((req as Partial<GatedRequest>).gate)
    if (error === undefined) return true
    writeGateResponse(res, gate.errorResponse(error, toGateRequest(req)))
    return false
  }
}

/** A node request as the core's plain object. */
export function toGateRequest(req: IncomingMessage, parsedBody?: unknown): GateRequest {
  return {
    method: req.method ?? 'GET',
    url: req.url ?? '/',
    headers: req.headers,
    authorization: req.headers.authorization === undefined ? undefined : req.headersDistinct.authorization,
    peerAddress: req.socket.remoteAddress,
    tls: (req.socket as Partial<TLSSocket>).encrypted === true,
    readBody: (limit) => readBody(req, limit, parsedBody),
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
 * the stream read here, at most `limit` bytes.
 */
function readBody(req: IncomingMessage, limit: number, parsedBody: unknown): Promise<RequestBody> {
  if (parsedBody !== undefined) return Promise.resolve({ kind: 'parsed', value: parsedBody })
  if (req.readableEnded) return Promise.resolve({ kind: 'raw', bytes: Buffer.alloc(0) })
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const cleanup = () => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
      req.off('aborted', onAborted)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        cleanup()
        req.resume() // drain and discard the rest so the answer can still be sent
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
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onError)
    req.on('aborted', onAborted)
  })
}
