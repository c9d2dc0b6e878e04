/**
 * A hostile request, described independently of any transport, and the two ways it
 * reaches the gate: as the plain object the core takes (translated the way the node:http
 * adapter does, header joining included) and as real bytes on a socket.
 */
import type { GateRequest, RequestBody } from '../../src/index.js'

/** A body as the client sends it, or as a framework's parser might hand it over. */
export type HostileBody =
  /** Bytes on the wire (UTF-8 of `text`). */
  | { readonly kind: 'text'; readonly text: string }
  /** What a body parser produced, whatever its shape: the core must cope with anything. */
  | { readonly kind: 'parsed'; readonly value: unknown }

export interface HostileRequest {
  /** Upper-case, as Node delivers it. */
  readonly method: string
  /** Path and query, exactly as sent. */
  readonly target: string
  /** Header lines in order; names in any case, repeats allowed. */
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: HostileBody | undefined
  /** The socket's peer address. */
  readonly peer: string
  /** Whether the socket is TLS. */
  readonly tls: boolean
}

/** Headers Node keeps only the first of (`IncomingMessage#headers`). */
const FIRST_ONLY = new Set([
  'age',
  'authorization',
  'content-length',
  'content-type',
  'etag',
  'expires',
  'from',
  'host',
  'if-modified-since',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'proxy-authorization',
  'referer',
  'retry-after',
  'server',
  'user-agent',
])

/** Header values as Node's parser hands them over: surrounding spaces and tabs removed. */
export function trimOws(value: string): string {
  return value.replace(/^[ \t]+|[ \t]+$/g, '')
}

/**
 * The request as the core sees it from the node:http adapter (and so from Express and
 * Koa): repeated headers joined as Node joins them, every `Authorization` line kept.
 * With `trim: false` the values keep their surrounding whitespace, as a less tidy host
 * might pass them.
 */
export function toCoreRequest(request: HostileRequest, trim = true): GateRequest {
  const headers: Record<string, string | string[]> = {}
  const authorization: string[] = []
  for (const [rawName, rawValue] of request.headers) {
    const name = rawName.toLowerCase()
    const value = trim ? trimOws(rawValue) : rawValue
    if (name === 'authorization') authorization.push(value)
    const existing = headers[name]
    if (existing === undefined) headers[name] = name === 'set-cookie' ? [value] : value
    else if (name === 'set-cookie') (existing as string[]).push(value)
    else if (FIRST_ONLY.has(name)) continue
    else headers[name] = `${existing as string}${name === 'cookie' ? '; ' : ', '}${value}`
  }
  const body = request.body
  return {
    method: request.method,
    url: request.target,
    headers,
    authorization: headers.authorization === undefined ? undefined : authorization,
    peerAddress: request.peer,
    tls: request.tls,
    readBody: (limit: number): Promise<RequestBody> => {
      if (body === undefined) return Promise.resolve({ kind: 'raw', bytes: Buffer.alloc(0) })
      if (body.kind === 'parsed') return Promise.resolve({ kind: 'parsed', value: body.value })
      const bytes = Buffer.from(body.text, 'utf8')
      return Promise.resolve(bytes.length > limit ? { kind: 'too-large' } : { kind: 'raw', bytes })
    },
  }
}

/** A short, readable form of a request for a failure report. */
export function describeRequest(request: HostileRequest): string {
  const body = request.body === undefined ? '' : request.body.kind === 'text' ? `\n\n${clip(request.body.text)}` : `\n\n(parsed) ${clip(safeJson(request.body.value))}`
  const headers = request.headers.map(([n, v]) => `\n${n}: ${clip(JSON.stringify(v))}`).join('')
  return `${request.method} ${clip(request.target)} (${request.tls ? 'tls' : 'plain'} from ${request.peer})${headers}${body}`
}

function clip(s: string): string {
  return s.length > 300 ? `${s.slice(0, 300)}… (${s.length} chars)` : s
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}
