/**
 * The OAuth 2.0 authorization server: which path is which endpoint, and how each kind of
 * endpoint answers a failure. The token and revocation endpoints answer RFC 6749 JSON;
 * the authorize endpoint answers a person, with a page.
 */
import type { AccessTokens } from '../management/access-tokens.js'
import type { Authenticator } from '../pipeline/authenticate.js'
import type { ClearTextRevocation } from '../pipeline/clear-text.js'
import { PlatformError, StoreError } from '../errors.js'
import type { Emit, ReportFailure } from '../events.js'
import type { GateRequest, GateResponse } from '../http/request.js'
import { errorResponse } from '../http/responses.js'
import type { ResolvedConfig } from '../config/options.js'
import type { ClientInfo } from '../http/proxy.js'
import type { GateStore } from '../store/store.js'
import type { Throttle } from '../pipeline/throttle.js'
import { AuthorizeEndpoint } from './authorize.js'
import type { OAuthBudget } from './budget.js'
import { failurePage } from './error-pages.js'
import { metadataResponse } from './metadata.js'
import type { LoginSessions } from '../endpoints/sign-in-session.js'
import { TokenEndpoints } from './token.js'

/** The endpoints of the authorization server, each at its path (`oauth.paths`, src/oauth/routes.ts). */
export type OAuthEndpoint = 'authorize' | 'token' | 'revoke' | 'metadata'

/** What the authorization server is made of: the gate's services it answers with. */
export interface OAuthServerParts {
  readonly config: ResolvedConfig
  /** The guarded store. */
  readonly store: GateStore
  /** Counts clients' failures at the token and revocation endpoints (`oauth.clientFailures`). */
  readonly throttle: Throttle
  /** The OAuth budget (`oauth.throttle`), shared with the connected-apps page. */
  readonly budget: OAuthBudget
  /** Signs users in at the login form, with every protection of `gate.users.signIn`. */
  readonly auth: Authenticator
  /** Revokes the access tokens sent to the revocation endpoint over plain http. */
  readonly clearText: ClearTextRevocation
  /** Issues the access tokens the token endpoint answers with. */
  readonly tokens: AccessTokens
  /** The gate's own login sessions. */
  readonly sessions: LoginSessions
  readonly emit: Emit
  /** Where a failure that is not a refusal on purpose is reported (`internalError`). */
  readonly report: ReportFailure
}

export class OAuthServer {
  readonly #config: ResolvedConfig
  readonly #budget: OAuthBudget
  readonly #report: ReportFailure
  readonly #authorize: AuthorizeEndpoint
  readonly #tokens: TokenEndpoints

  constructor(parts: OAuthServerParts) {
    const { config, store, throttle, budget, auth, clearText, tokens, sessions, emit, report } = parts
    this.#config = config
    this.#budget = budget
    this.#report = report
    this.#authorize = new AuthorizeEndpoint({ config, store, auth, sessions, report })
    this.#tokens = new TokenEndpoints({
      store,
      throttle,
      emit,
      realm: config.realm,
      failures: config.oauth.clientFailures,
      tokens,
      bodyTimeoutMs: config.bodyTimeoutMs,
      revokeInsecure: (sent, client) => clearText.revokeTokens(sent, client),
      spend: (application, client) => budget.spend(application, client),
    })
  }

  /** Answers a request to one of the endpoints. Never rejects. */
  async handle(endpoint: OAuthEndpoint, request: GateRequest, client: ClientInfo): Promise<GateResponse> {
    try {
      // Posts to the sign-in and consent forms are counted per address; the token and revocation endpoints per
      // authenticated client (a busy backend must not be throttled by its neighbours on a
      // shared address), and per address only while no client has authenticated.
      if (request.method === 'POST' && endpoint === 'authorize') await this.#budget.spend(undefined, client)
      else if (request.method === 'POST' && this.#budget.isAddressBlocked(client)) await this.#budget.spend(undefined, client)
      switch (endpoint) {
        case 'authorize':
          return await this.#authorize.handle(request, client)
        case 'token':
          return await this.#tokens.token(request, client)
        case 'revoke':
          return await this.#tokens.revoke(request, client)
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
   * The answer to a failure at an endpoint, in that endpoint's shape: a page at authorize,
   * RFC 6749 JSON at token and revocation. Reports what
   * is not a refusal on purpose.
   */
  failure(endpoint: OAuthEndpoint, error: unknown, request: GateRequest, requestId: string | undefined): GateResponse {
    this.#report(error, { method: request.method, url: request.url, requestId })
    if (endpoint === 'authorize') return failurePage(this.#config.oauth.pages, error)
    // RFC 8414 metadata is not an RFC 6749 endpoint: a store failure there keeps the platform's body.
    if (endpoint === 'metadata' && error instanceof StoreError) return errorResponse(error, 'platform')
    return errorResponse(error, 'oauth')
  }
}
