/**
 * The request id: one string per request, sent back in `X-Request-Id` on every answer and
 * on the host's own, on `req.gate.requestId`, in every event about the request and in
 * every log line, so that support can find a request from what its client saw (the
 * platform sends `X-Socrata-RequestId` for the same reason).
 *
 * A trusted proxy's id is kept (nginx's `$request_id`, a load balancer's), so one id
 * follows the request across both logs; a client's own is not, unless the operator says
 * so, since a client could otherwise make its requests look like someone else's.
 *
 * Generated ids are a random prefix per gate and a counter in base 36 (`a1B2c3D4e5F6-1k3`):
 * about 30 ns, where `crypto.randomUUID()` took 150 to 300 ns on the benchmark machine,
 * on a path measured in hundreds of ns. Unique across processes by the prefix (72 random
 * bits), within one by the counter. They are not secret and not unguessable: nothing may
 * rely on them for anything but finding a request.
 * @see docs/guides/operating.md
 */
import { randomBytes } from 'node:crypto'
import { normalizeAddress } from './proxy.js'
import type { GateRequest } from './request.js'

/** The `requestId` option of `createGate`. */
export interface RequestIdOptions {
  /** The header the id is read from and sent back in. Default `X-Request-Id`. */
  header?: string
  /**
   * Whose id to keep, when the request carries one: `'proxy'` (the default) only a
   * trusted proxy's (the socket peer is in `trustProxy`), `true` anyone's (the app is
   * reachable only through a proxy that sets or clears the header), `false` nobody's.
   * A kept id must be 1 to 128 printable ASCII characters, no spaces; any other is replaced.
   */
  trustIncoming?: 'proxy' | boolean
}

/** The longest id kept from a request: enough for any UUID, ULID or trace id with a prefix. */
const MAX_INCOMING_LENGTH = 128
const PLAUSIBLE_ID = /^[\x21-\x7e]{1,128}$/
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** The request id of each request: kept from a trusted source, or made here. */
export class RequestIds {
  /** The header name, lower case as the core writes every header (and as Node and Fetch give them). */
  readonly header: string
  readonly #trustIncoming: 'proxy' | boolean
  readonly #trust: (address: string, hop: number) => boolean
  readonly #prefix = `${randomBytes(9).toString('base64url')}-`
  #counter = 0

  constructor(header: string, trustIncoming: 'proxy' | boolean, trust: (address: string, hop: number) => boolean) {
    this.header = header.toLowerCase()
    this.#trustIncoming = trustIncoming
    this.#trust = trust
  }

  /** The id of a request. */
  of(request: GateRequest): string {
    if (this.#trustIncoming !== false) {
      const sent = request.headers[this.header]
      // A header sent twice is no one id: a new one.
      if (typeof sent === 'string' && sent.length <= MAX_INCOMING_LENGTH && PLAUSIBLE_ID.test(sent) && (this.#trustIncoming === true || this.#fromTrustedProxy(request))) return sent
    }
    return this.#prefix + (++this.#counter).toString(36)
  }

  #fromTrustedProxy(request: GateRequest): boolean {
    return this.#trust(normalizeAddress(request.peerAddress ?? ''), 0)
  }
}

/**
 * `requestId` resolved: `null` for `false`.
 * @throws {TypeError} naming the option
 */
export function resolveRequestIds(input: unknown, trust: (address: string, hop: number) => boolean, known: (name: string, value: object) => void): RequestIds | null {
  if (input === false) return null
  if (input !== undefined && (typeof input !== 'object' || input === null || Array.isArray(input))) {
    throw new TypeError(`open-data-gate: requestId must be { header, trustIncoming } or false, got ${JSON.stringify(input)}`)
  }
  const options = (input ?? {}) as RequestIdOptions
  known('requestId', options)
  const header = options.header ?? 'X-Request-Id'
  if (typeof header !== 'string' || !HEADER_NAME.test(header)) throw new TypeError(`open-data-gate: requestId.header must be an HTTP header name, got ${JSON.stringify(header)}`)
  const trustIncoming = options.trustIncoming ?? 'proxy'
  if (trustIncoming !== 'proxy' && typeof trustIncoming !== 'boolean') {
    throw new TypeError(`open-data-gate: requestId.trustIncoming must be 'proxy', true or false, got ${JSON.stringify(trustIncoming)}`)
  }
  return new RequestIds(header, trustIncoming, trust)
}
