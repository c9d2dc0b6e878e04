/**
 * The gate: `createGate(options)` and the one function every adapter calls,
 * {@link Gate.handle}, which takes a plain request and says either "continue, with this
 * context and these headers" or "answer with this response".
 */
import { TypedEmitter } from 'tiny-typed-emitter'
import { extractAppToken, isPlausibleAppToken } from './app-token.js'
import { Applications, toApplication, type Application } from './applications.js'
import { GateError, PlatformError, StoreError } from './errors.js'
import type { GateEvents } from './events.js'
import { errorResponse, pathOf, platformErrorResponse, type GateRequest, type GateResponse } from './http.js'
import { resolveOptions, type GateOptions, type ResolvedConfig } from './options.js'
import { resolveClient, type ClientInfo } from './proxy.js'
import { guardStore } from './store/guarded-store.js'
import type { GateStore } from './store/store.js'
import { Throttle, type ThrottleInfo } from './throttle.js'

/** What the gate found out about a request: `req.gate` in Express and node:http, `ctx.state.gate` in Koa. */
export interface GateContext {
  /** The application whose token the request carried, or `null` for an anonymous request. */
  readonly application: Application | null
  /** The throttle's verdict, or `null` when no policy applied. */
  readonly throttle: ThrottleInfo | null
  /** Whether the client's connection is https (from the socket, or a trusted proxy). */
  readonly secure: boolean
  /** The client's address (from the socket, or a trusted proxy). */
  readonly clientIp: string
}

/** What {@link Gate.handle} decided. */
export type GateOutcome =
  /** Let the request through: expose `context`, set `headers`, call the next handler. */
  | { readonly type: 'next'; readonly context: GateContext; readonly headers: Readonly<Record<string, string>> }
  /** The gate answers: write `response` and stop. */
  | { readonly type: 'respond'; readonly response: GateResponse }

const INVALID_APP_TOKEN = 'Invalid app_token specified'

/**
 * The access layer. Create it once, mount it with an adapter, manage applications
 * through {@link Gate.applications}, and listen to its events.
 */
export class Gate extends TypedEmitter<GateEvents> {
  /** Register and manage applications. */
  readonly applications: Applications
  /** The store as the gate calls it: with a timeout, failing with `StoreError`. */
  readonly store: GateStore
  readonly #config: ResolvedConfig
  readonly #throttle: Throttle
  #warnedAboutProxyHeaders = false

  constructor(options: GateOptions = {}) {
    super()
    this.#config = resolveOptions(options)
    this.store = guardStore(this.#config.store, this.#config.storeTimeoutMs)
    this.#config.store.attach?.({ rateKeyEvicted: (key) => this.emit('rateKeyEvicted', { key }) })
    this.applications = new Applications(this.store)
    this.#throttle = new Throttle(this.#config, this.store, (event, ...args) => this.emit(event, ...args))
  }

  /**
   * Decides what happens to a request. Never rejects: every failure becomes a response.
   * @see adapters/node.ts for how an adapter uses it
   */
  async handle(request: GateRequest): Promise<GateOutcome> {
    try {
      const client = this.#client(request)
      const token = extractAppToken(request, this.#config.legacyAppTokenParam)
      let application = null
      if (token !== undefined) {
        const record = isPlausibleAppToken(token) ? await this.store.getApplication(token) : undefined
        if (record === undefined) {
          this.emit('invalidAppToken', { tokenPrefix: token.slice(0, 6), ip: client.ip })
          throw new PlatformError('permission_denied', INVALID_APP_TOKEN)
        }
        application = record
      }
      const pass = await this.#throttle.check(application, client)
      return {
        type: 'next',
        context: {
          application: application === null ? null : toApplication(application),
          throttle: pass?.info ?? null,
          secure: client.secure,
          clientIp: client.ip,
        },
        headers: pass?.headers ?? {},
      }
    } catch (error) {
      return { type: 'respond', response: this.errorResponse(error, request) }
    }
  }

  /**
   * The response for any error: a {@link GateError} in its own shape and status,
   * anything else a generic 500 (the cause goes to the `internalError` event, never to
   * the client).
   */
  errorResponse(error: unknown, request?: Pick<GateRequest, 'method' | 'url'>): GateResponse {
    if (error instanceof StoreError) {
      this.emit('storeError', { operation: error.operation, error: error.cause, outcome: 'failed' })
    }
    if (error instanceof GateError) return errorResponse(error)
    this.emit('internalError', { error, method: request?.method ?? '', path: request === undefined ? '' : pathOf(request.url) })
    return platformErrorResponse(new PlatformError('internal', 'Internal server error'))
  }

  /** Releases the store's connections and timers. */
  async close(): Promise<void> {
    await this.#config.store.close?.()
  }

  #client(request: GateRequest): ClientInfo {
    const client = resolveClient(request, this.#config.trust, this.#config.proxyHeaders)
    if (!this.#config.trustsAnyProxy && !this.#warnedAboutProxyHeaders) this.#warnOnUntrustedProxy(request, client)
    return client
  }

  /**
   * Once per gate: proxy headers arriving from a private or loopback peer while no proxy
   * is trusted usually mean a reverse proxy the operator forgot to configure, and then
   * every client shares the proxy's address and looks insecure.
   */
  #warnOnUntrustedProxy(request: GateRequest, client: ClientInfo): void {
    const headers = request.headers
    if (headers['x-forwarded-for'] === undefined && headers.forwarded === undefined) return
    if (!/^(127\.|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|::1$|f[cd])/.test(client.ip)) return
    this.#warnedAboutProxyHeaders = true
    process.emitWarning(
      `open-data-gate: a request from ${client.ip} carries proxy headers, but trustProxy is false, so they are ignored. ` +
        'If the app runs behind a reverse proxy, set trustProxy to its address.',
      { code: 'ODG_UNTRUSTED_PROXY_HEADERS' },
    )
  }
}

/**
 * Creates a gate.
 * @example
 * const gate = createGate({
 *   throttle: {
 *     application: { limit: 1000, windowMs: 3_600_000 },
 *     anonymous: { limit: 60, windowMs: 3_600_000, scope: 'shared' },
 *   },
 *   trustProxy: ['10.0.0.0/8'],
 * })
 * @throws {TypeError} naming the option, for an invalid option
 */
export function createGate(options?: GateOptions): Gate {
  return new Gate(options)
}
