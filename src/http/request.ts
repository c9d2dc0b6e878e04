/**
 * The plain objects the core speaks. Adapters translate a framework's request into a
 * {@link GateRequest} and write a {@link GateResponse} back; nothing here imports a
 * framework or node:http's server API. The responses the core builds are in
 * `./responses.ts`.
 */

/** A header value as Node's `IncomingMessage#headers` holds it. */
export type HeaderValue = string | string[] | undefined

/** A request body as the adapter found it. */
export type RequestBody =
  /** Bytes read from the stream (nothing parsed it before the gate); a `Buffer` on Node. */
  | { readonly kind: 'raw'; readonly bytes: Uint8Array }
  /** What a framework's body parser already produced (`req.body`, `ctx.request.body`). */
  | { readonly kind: 'parsed'; readonly value: unknown }
  /** The body was longer than the limit the core asked for; the rest was discarded. */
  | { readonly kind: 'too-large' }

/** The request as the core sees it. */
export interface GateRequest {
  /** Upper-case method. */
  readonly method: string
  /** Origin-form target: path and query, as sent (relative to the adapter's mount point). */
  readonly url: string
  /** Header names in lower case, as Node delivers them. */
  readonly headers: Readonly<Record<string, HeaderValue>>
  /** Every `Authorization` header the request carried (Node keeps only the first in `headers`). */
  readonly authorization?: readonly string[] | undefined
  /** Address of the immediate peer (the socket), before any proxy header is considered. */
  readonly peerAddress: string | undefined
  /** Whether the socket itself is TLS. */
  readonly tls: boolean
  /**
   * Reads the body, at most `limit` bytes. Only the endpoints that need one call it
   * (the OAuth token, revocation and form endpoints). When `signal` aborts (the core's
   * time limit), stop reading and reject.
   */
  readonly readBody?: ((limit: number, signal?: AbortSignal) => Promise<RequestBody>) | undefined
  /**
   * What a body parser that ran before the gate produced (`req.body`), or `undefined`;
   * never reads the stream. The gate looks at it only on plain http, for access tokens
   * sent in clear.
   */
  readonly parsedBody?: (() => unknown) | undefined
}

/** What the gate answers when it answers itself. */
export interface GateResponse {
  readonly status: number
  /**
   * Header names in lower case; a list for a header sent several times (`set-cookie`).
   * `connection: close` means: close the connection once the answer is written, without
   * reading the rest of the request (Node does so for that header).
   */
  readonly headers: Readonly<Record<string, string | readonly string[]>>
  readonly body: string
}

/** The first value of a header, or `undefined`. */
export function headerValue(headers: Readonly<Record<string, HeaderValue>>, name: string): string | undefined {
  const value = headers[name]
  return typeof value === 'string' ? value : value?.[0]
}

/** The path part of an origin-form request target. */
export function pathOf(url: string): string {
  const q = url.indexOf('?')
  return q === -1 ? url : url.slice(0, q)
}

/**
 * Percent-encodes everything outside printable ASCII, as a `Location` must be: by code
 * point (never half a surrogate pair), and a lone surrogate as U+FFFD, as a browser would.
 */
export function encodeUnprintable(text: string): string {
  return text.replace(/[^\x21-\x7e]/gu, (c) => (c.length === 1 && c >= '\ud800' && c <= '\udfff' ? '%EF%BF%BD' : encodeURIComponent(c)))
}

/**
 * Every `Authorization` header line of a raw header list (Node's `rawHeaders`: name,
 * value, name, value, …), in order: what {@link GateRequest.authorization} holds. Cheaper
 * than Node's `headersDistinct`, which copies every header.
 */
export function authorizationLines(rawHeaders: readonly string[]): string[] {
  const found: string[] = []
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (name.length === 13 && name.toLowerCase() === 'authorization') found.push(rawHeaders[i + 1] as string)
  }
  return found
}
