/**
 * What the gate tells the host about a request: the {@link GateContext} an adapter exposes
 * as `req.gate`, and the {@link GateOutcome} of `gate.handle()`. Types only, in a module of
 * their own, so that the pipeline, the guards and the endpoints can name them without
 * importing the gate that wires them.
 */
import type { Application } from '../management/applications.js'
import type { GateResponse } from '../http/request.js'
import type { AuthMethod, GateUser } from './authenticate.js'
import type { ThrottleInfo } from './throttle.js'

/** What the gate found out about a request: `req.gate` in Express and node:http, `ctx.state.gate` in Koa, `request.gate` in Fastify, `c.get('gate')` in Hono, the handler's second argument with the Fetch adapter. */
export interface GateContext {
  /**
   * The application the request counted against: the one its app token names, or, for an
   * OAuth request without one, the application its access token was issued to (unless
   * `throttle.oauthTokenBudget` is `'anonymous'`); `null` for an anonymous request.
   */
  readonly application: Application | null
  /** The throttle's verdict, or `null` when no policy applied. */
  readonly throttle: ThrottleInfo | null
  /** Whether the client's connection is https (from the socket, or a trusted proxy). */
  readonly secure: boolean
  /** The client's address (from the socket, or a trusted proxy). */
  readonly clientIp: string
  /** The authenticated user, or `null`. */
  readonly user: GateUser | null
  /** How the user authenticated: `password`, `api-key`, `oauth`, or `none`. */
  readonly auth: AuthMethod
  /** The API key used, when `auth` is `api-key`. */
  readonly apiKeyId: string | null
  /** The access token's application and expiry (epoch ms), when `auth` is `oauth`. */
  readonly accessToken: { readonly appToken: string; readonly expiresAt: number } | null
  /** The request carried an access token over plain http, and the gate revoked it. */
  readonly revokedInsecureToken: boolean
  /**
   * The request's id, also sent back in `X-Request-Id`: a trusted proxy's, or made by the
   * gate; `null` with `requestId: false`. Log it with your own lines.
   */
  readonly requestId: string | null
}

/** What `gate.handle()` decided. */
export type GateOutcome =
  /** Let the request through: expose `context`, set `headers`, call the next handler. */
  | { readonly type: 'next'; readonly context: GateContext; readonly headers: Readonly<Record<string, string>> }
  /** The gate answers: write `response` and stop. */
  | { readonly type: 'respond'; readonly response: GateResponse }
