/**
 * The OAuth 2.0 authorization server: which path is which endpoint, and how each kind of
 * endpoint answers a failure. The token and revocation endpoints answer RFC 6749 JSON;
 * the authorize endpoint answers a person, with a page.
 */
import type { AccessTokens } from '../management/access-tokens.js'
import type { Authenticator } from '../pipeline/authenticate.js'
import type { ClearTextRevocation } from '../pipeline/clear-text.js'
import type { Grants } from '../management/grants.js'
import { GateError, PlatformError, retryAfterSeconds, StoreError, ThrottledError } from '../errors.js'
import type { Emit, ReportFailure } from '../events.js'
import type { GateRequest, GateResponse } from '../http/request.js'
import { errorResponse } from '../http/responses.js'
import type { ResolvedConfig } from '../config/options.js'
import type { ClientInfo } from '../http/proxy.js'
import { oauthAddressRateKey, oauthClientRateKey } from '../limits/rate-keys.js'
import type { GateStore } from '../store/store.js'
import type { Throttle } from '../pipeline/throttle.js'
import { AuthorizeEndpoint } from './authorize.js'
import { GrantsPage } from '../endpoints/connected-apps-page.js'
import { metadataResponse } from './metadata.js'
import { errorPage, htmlResponse } from './pages.js'
import type { LoginSessions } from '../endpoints/sign-in-session.js'
import { TokenEndpoints } from './token.js'

/** The endpoints of the authorization server, and the connected-apps page (`grants`). */
export type OAuthEndpoint = 'authorize' | 'token' | 'revoke' | 'metadata' | 'grants'

/** The endpoints that answer people with pages rather than clients with JSON. */
const PAGES: ReadonlySet<OAuthEndpoint> = new Set(['authorize', 'grants'])

/** What the authorization server is made of: the gate's services it answers with. */
export interface OAuthServerParts {
  readonly config: ResolvedConfig
  /** The guarded store. */
  readonly store: GateStore
  /** Counts posts against the OAuth budgets (`oauth.throttle`) and clients' failures (`oauth.clientFailures`). */
  readonly throttle: Throttle
  /** Signs users in at the login form, with every protection of `gate.users.signIn`. */
  readonly auth: Authenticator
  /** Revokes the access tokens sent to the revocation endpoint over plain http. */
  readonly clearText: ClearTextRevocation
  /** Issues the access tokens the token endpoint answers with. */
  readonly tokens: AccessTokens
  /** The connected apps the connected-apps page lists and revokes. */
  readonly grants: Grants
  /** The gate's own login sessions. */
  readonly sessions: LoginSessions
  readonly emit: Emit
  /** Where a failure that is not a refusal on purpose is reported (`internalError`). */
  readonly report: ReportFailure
}

export class OAuthServer {
  readonly #config: ResolvedConfig
  readonly #throttle: Throttle
  readonly #emit: Emit
  readonly #report: ReportFailure
  readonly #authorize: AuthorizeEndpoint
  readonly #tokens: TokenEndpoints
  readonly #grantsPage: GrantsPage

  constructor(parts: OAuthServerParts) {
    const { config, store, throttle, auth, clearText, tokens, grants, sessions, emit, report } = parts
    this.#config = config
    this.#throttle = throttle
    this.#emit = emit
    this.#report = report
    this.#authorize = new AuthorizeEndpoint({ config, store, auth, sessions, report })
    this.#grantsPage = new GrantsPage({ config, store, auth, sessions, grants })
    this.#tokens = new TokenEndpoints({
      store,
      throttle,
      emit,
      realm: config.realm,
      failures: config.oauth.clientFailures,
      tokens,
      bodyTimeoutMs: config.bodyTimeoutMs,
      revokeInsecure: (sent, client) => clearText.revokeTokens(sent, client),
      spend: (application, client) =>
        application === undefined ? this.#spend(oauthAddressRateKey(client.ip), client, undefined) : this.#spend(oauthClientRateKey(application), client, application),
    })
  }

  /** Answers a request to one of the endpoints. Never rejects. */
  async handle(endpoint: OAuthEndpoint, request: GateRequest, client: ClientInfo): Promise<GateResponse> {
    try {
      // Posts to the pages (sign-in, consent, connected apps) are counted per address; the token and revocation endpoints per
      // authenticated client (a busy backend must not be throttled by its neighbours on a
      // shared address), and per address only while no client has authenticated.
      if (request.method === 'POST' && PAGES.has(endpoint)) await this.#spend(oauthAddressRateKey(client.ip), client, undefined)
      else if (request.method === 'POST' && this.#throttle.isBlocked(oauthAddressRateKey(client.ip))) await this.#spend(oauthAddressRateKey(client.ip), client, undefined)
      switch (endpoint) {
        case 'authorize':
          return await this.#authorize.handle(request, client)
        case 'token':
          return await this.#tokens.token(request, client)
        case 'revoke':
          return await this.#tokens.revoke(request, client)
        case 'grants':
          return await this.#grantsPage.handle(request, client)
        case 'metadata':
          if (request.method !== 'GET' && request.method !== 'HEAD') {
            throw new PlatformError('method_not_allowed', 'Use GET', { headers: { allow: 'GET, HEAD' } })
          }
          return metadataResponse(this.#config, request)
      }
    } catch (error) {
      return this.failure(endpoint, error, request, client.requestId)
    }
  }

  /**
   * One post against the OAuth budget: `oauth:<address>` or `oauth-client:<app token>`.
   * @throws {ThrottledError} when it is spent
   */
  async #spend(key: string, client: ClientInfo, appToken: string | undefined): Promise<void> {
    const policy = this.#config.oauth.throttle
    if (policy === null) return
    const result = await this.#throttle.consume(key, policy.limit, policy.windowMs, 1)
    if (result === null || result.allowed) return
    const retryAfter = retryAfterSeconds(result.retryAfterMs)
    this.#emit('throttled', { policy: 'oauth', appToken, ip: client.ip, requestId: client.requestId, retryAfterMs: result.retryAfterMs })
    throw new ThrottledError(`Too many requests to the sign-in and token endpoints; retry in ${retryAfter} seconds`, result.retryAfterMs)
  }

  /**
   * The answer to a failure at an endpoint, in that endpoint's shape: a page at authorize,
   * RFC 6749 JSON at token and revocation. Reports what is not a refusal on purpose.
   */
  failure(endpoint: OAuthEndpoint, error: unknown, request: GateRequest, requestId: string | undefined): GateResponse {
    this.#report(error, { method: request.method, url: request.url, requestId })
    if (!PAGES.has(endpoint)) {
      // RFC 8414 metadata is not an RFC 6749 endpoint: a store failure there keeps the platform's body.
      if (endpoint === 'metadata' && error instanceof StoreError) return errorResponse(error, 'platform')
      return errorResponse(error, 'oauth')
    }
    if (error instanceof StoreError) return this.#page(503, 'The service is temporarily unavailable', 'Please try again in a moment.', { detail: `The store failed (${error.operation}).`, headers: error.headers ?? {} })
    if (error instanceof ThrottledError) return this.#page(429, 'Too many attempts', error.message, { headers: error.headers ?? {} })
    if (error instanceof GateError) return this.#page(error.status, 'This request was refused', error.message, { detail: `Error code: ${error.code}`, headers: error.headers ?? {} })
    return this.#page(500, 'Something went wrong', 'Please try again later.')
  }

  #page(status: number, title: string, message: string, extra: { headers?: Record<string, string>; detail?: string } = {}): GateResponse {
    const custom = this.#config.oauth.pages.error
    const headers = extra.headers ?? {}
    const view = { siteName: this.#config.oauth.pages.siteName, title, message, detail: extra.detail }
    return htmlResponse(status, custom === undefined ? errorPage(view) : custom(view), { ownPage: custom === undefined, headers })
  }
}
