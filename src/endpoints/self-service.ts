/**
 * The endpoints where users manage their own account: the platform's API key endpoints
 * (`/api/api_keys`), their own applications (`/api/applications`, `./applications.ts`) and
 * connected apps (`/api/oauth/grants`). Served by the gate once the credentials are
 * verified, without an app token or an application's throttle
 * (`../pipeline/self-service-access.ts`); the user's own budget is spent here
 * (`./self-service-budget.ts`), a usage read by its size.
 *
 * They answer only to the user's own sign-in, never to a credential the user handed to
 * something else (GitHub lets no OAuth app create personal access tokens; Keycloak gives
 * third-party clients no `manage-account` role):
 * - the password over HTTP Basic; or else
 * - a browser session: the host's own (`oauth.authenticateUser`) or the gate's login
 *   session cookie. A cookie comes along with any request the browser makes, a forged
 *   cross-site one included, so a request that changes something (POST, DELETE) on a
 *   session must also carry the CSRF token in an `X-CSRF-Token` header, matched in
 *   constant time against the gate's `__Host-` CSRF cookie, and must not say
 *   `Sec-Fetch-Site: cross-site`. Another site can neither read the token nor set the
 *   header without a CORS preflight the gate never grants. A page gets the token from the
 *   `X-CSRF-Token` response header of any GET to these endpoints made on a session.
 *
 * Whatever the credentials, a change sent by a page of another site or origin is refused
 * (403 `same_origin_required`, `../http/cross-site.ts`): a browser attaches Basic
 * credentials it was given after a `basic.challenge` prompt to a forged form post as it
 * does cookies.
 *
 * An OAuth access token or an API key gets 403 `first_party_credentials_required`, for
 * reading as for changing: a third-party application the user approved once could
 * otherwise mint itself an API key that outlives its revocation on the connected-apps page,
 * or revoke the user's other applications; a leaked key could mint others or hide itself.
 * Credentials in the `Authorization` header always take precedence over a cookie, so such a
 * request is refused even when a session comes along. Every one of these endpoints is https
 * only.
 *
 * @see docs/guides/api-key-endpoints.md "Where the platform is silent, the gate decides", and docs/security.md
 */
import type { ApiKeyEndpoints } from './api-keys.js'
import type { ApplicationEndpoints, SpendBudget } from './applications.js'
import type { SelfServiceBudget } from './self-service-budget.js'
import { isPlausibleAppToken } from '../rules/credential-shapes.js'
import { toGateUser, type AuthMethod, type GateUser } from '../pipeline/authenticate.js'
import { PlatformError } from '../errors.js'
import type { GateContext } from '../pipeline/context.js'
import type { Grants } from '../management/grants.js'
import { headerValue, type GateRequest, type GateResponse } from '../http/request.js'
import { jsonResponse } from '../http/responses.js'
import type { ResolvedConfig } from '../config/options.js'
import { csrfToken, csrfValid, type LoginSessions } from './sign-in-session.js'
import { crossSiteProblem } from '../http/cross-site.js'
import type { GateStore } from '../store/store.js'

/** Which of these endpoints a path is: a collection (`id` null), one item, or a part of one (`/secret`, `/usage`). */
export interface SelfServiceRoute {
  readonly kind: 'api-keys' | 'grants' | 'applications'
  readonly id: string | null
  /** The part of an application: `POST .../secret`, `GET .../usage`. */
  readonly part?: 'secret' | 'usage'
}

/** The user of a request to these endpoints, and how they were recognised. */
interface Caller {
  readonly user: GateUser
  /**
   * `password`: Basic with the user's password. `session`: a browser session, the host's or
   * the gate's (needs the CSRF header to change anything). `oauth` and `api-key` are
   * credentials held by someone else than the user, and are refused.
   */
  readonly via: Exclude<AuthMethod, 'none'> | 'session'
}

const PRIVATE = { 'cache-control': 'private, no-store', vary: 'Authorization, Cookie' }

/** The options these endpoints read: where they are, and the host's own sign-in. */
export type SelfServiceConfig = Pick<ResolvedConfig, 'apiKeyEndpoints' | 'connectedApps' | 'trust' | 'proxyHeaders' | 'trustedOrigins'> & {
  readonly applications: Pick<ResolvedConfig['applications'], 'path'>
} & { readonly oauth: Pick<ResolvedConfig['oauth'], 'authenticateUser' | 'enabled'> }

/** What the self-service endpoints are made of: the endpoints they route to, and what checks their callers. */
export interface SelfServiceParts {
  readonly config: SelfServiceConfig
  /** The guarded store: the users the host's sign-in names. */
  readonly store: GateStore
  /** The gate's own login sessions, a caller's browser session. */
  readonly sessions: LoginSessions
  /** The API key endpoints. */
  readonly apiKeys: ApiKeyEndpoints
  /** The connected apps the connected-apps endpoints list and revoke. */
  readonly grants: Grants
  /** The endpoints of a user's own applications. */
  readonly applications: ApplicationEndpoints
  /** The user's own budget on these endpoints (`selfServiceBudget`). */
  readonly budget: SelfServiceBudget
}

/** Routes and answers the API key and connected-apps endpoints for the gate. */
export class SelfService {
  readonly #config: SelfServiceConfig
  readonly #store: GateStore
  readonly #sessions: LoginSessions
  readonly #apiKeys: ApiKeyEndpoints
  readonly #grants: Grants
  readonly #applications: ApplicationEndpoints
  readonly #budget: SelfServiceBudget
  /** Collection paths with a trailing `/`, to recognise item paths by prefix. */
  readonly #prefixes: ReadonlyArray<readonly [string, SelfServiceRoute['kind']]>

  constructor(parts: SelfServiceParts) {
    const config = parts.config
    this.#config = config
    this.#budget = parts.budget
    this.#store = parts.store
    this.#sessions = parts.sessions
    this.#apiKeys = parts.apiKeys
    this.#grants = parts.grants
    this.#applications = parts.applications
    const prefixes: Array<readonly [string, SelfServiceRoute['kind']]> = []
    if (config.apiKeyEndpoints !== null) prefixes.push([`${config.apiKeyEndpoints.path}/`, 'api-keys'])
    if (config.connectedApps.path !== null) prefixes.push([`${config.connectedApps.path}/`, 'grants'])
    if (config.applications.path !== null) prefixes.push([`${config.applications.path}/`, 'applications'])
    this.#prefixes = prefixes
  }

  /** The collection routes, to be served at their exact paths. */
  collections(): Array<[string, SelfServiceRoute]> {
    const routes: Array<[string, SelfServiceRoute]> = []
    if (this.#config.apiKeyEndpoints !== null) routes.push([this.#config.apiKeyEndpoints.path, { kind: 'api-keys', id: null }])
    if (this.#config.connectedApps.path !== null) routes.push([this.#config.connectedApps.path, { kind: 'grants', id: null }])
    if (this.#config.applications.path !== null) routes.push([this.#config.applications.path, { kind: 'applications', id: null }])
    return routes
  }

  /** The prefixes of the item paths: {@link match} finds nothing under any other. */
  itemPrefixes(): string[] {
    return this.#prefixes.map(([prefix]) => prefix)
  }

  /** An item path (`/api/api_keys/<keyId>`, `/api/oauth/grants/<appToken>`, `/api/applications/<appToken>[/secret|/usage]`), or `undefined`. */
  match(path: string): SelfServiceRoute | undefined {
    for (const [prefix, kind] of this.#prefixes) {
      if (path.length <= prefix.length || !path.startsWith(prefix)) continue
      let segment = path.slice(prefix.length)
      let part: SelfServiceRoute['part']
      if (kind === 'applications') {
        const slash = segment.indexOf('/')
        if (slash !== -1) {
          const rest = segment.slice(slash + 1)
          if (rest !== 'secret' && rest !== 'usage') return undefined
          part = rest
          segment = segment.slice(0, slash)
        }
      }
      if (segment.includes('/') || segment === '') return undefined
      let id: string
      try {
        id = decodeURIComponent(segment)
      } catch {
        id = ''
      }
      return part === undefined ? { kind, id } : { kind, id, part }
    }
    return undefined
  }

  /** Answers a request that passed the gate's checks. Failures are thrown as {@link PlatformError}s. */
  async handle(route: SelfServiceRoute, request: GateRequest, context: GateContext): Promise<GateResponse> {
    const method = request.method === 'HEAD' ? 'GET' : request.method
    const allowed = allowedMethods(route)
    if (!allowed.includes(method)) {
      throw new PlatformError('method_not_allowed', `${request.method} is not allowed here; use ${allowed.join(' or ')}`, {
        headers: { allow: allowed.includes('GET') ? [...allowed, 'HEAD'].join(', ') : allowed.join(', ') },
      })
    }
    if (!context.secure) throw new PlatformError('https_required', 'These endpoints are served over https only')
    // Before the credentials: a browser attaches Basic credentials and cookies to a forged request alike.
    const crossSite = method === 'GET' ? undefined : crossSiteProblem(request, context.secure, this.#config)
    if (crossSite !== undefined) throw new PlatformError('same_origin_required', `A change to the account must come from this site's own pages, and ${crossSite}`)
    const caller = await this.#caller(request, context)
    if (caller === undefined) throw new PlatformError('authentication_required', 'Sign in, or send your password, to manage your own API keys and applications')
    if (caller.via === 'oauth' || caller.via === 'api-key') throw notFirstParty(caller.via)
    if (method !== 'GET') this.#mayChange(request, caller)
    // The user's own budget, not an application's: a usage read spends its weight once its range is known.
    const client = { ip: context.clientIp, requestId: context.requestId ?? undefined }
    const spend: SpendBudget = (cost) => this.#budget.spend(caller.user.id, cost, client)
    const limits = route.part === 'usage' ? {} : await spend(1)
    const response = await this.#dispatch(route, method, request, caller.user, spend)
    if (caller.via !== 'session') return { ...response, headers: { ...limits, ...response.headers } }
    // A page on a session learns the CSRF token here, for its next POST or DELETE.
    const csrf = csrfToken(request)
    const headers = { ...limits, ...response.headers, 'x-csrf-token': csrf.token, ...(csrf.setCookie === undefined ? {} : { 'set-cookie': csrf.setCookie }) }
    return { ...response, headers }
  }

  #dispatch(route: SelfServiceRoute, method: string, request: GateRequest, user: GateUser, spend: SpendBudget): Promise<GateResponse> {
    if (route.kind === 'applications') return this.#dispatchApplications(route, method, request, user, spend)
    if (route.kind === 'api-keys') {
      if (route.id === null) return method === 'GET' ? this.#apiKeys.list(user, request) : this.#apiKeys.create(user, request)
      return method === 'GET' ? this.#apiKeys.get(user, route.id) : this.#apiKeys.delete(user, route.id)
    }
    return route.id === null ? this.#listGrants(user) : this.#revokeGrant(user, route.id)
  }

  #dispatchApplications(route: SelfServiceRoute, method: string, request: GateRequest, user: GateUser, spend: SpendBudget): Promise<GateResponse> {
    const endpoints = this.#applications
    if (route.id === null) return method === 'GET' ? endpoints.list(user) : endpoints.register(user, request)
    if (route.part === 'secret') return endpoints.rotateSecret(user, route.id, request)
    if (route.part === 'usage') return endpoints.usage(user, route.id, request, spend)
    if (method === 'GET') return endpoints.get(user, route.id)
    return method === 'PATCH' ? endpoints.update(user, route.id, request) : endpoints.delete(user, route.id)
  }

  async #listGrants(user: GateUser): Promise<GateResponse> {
    return jsonResponse(200, await this.#grants.list(user.id), PRIVATE)
  }

  async #revokeGrant(user: GateUser, appToken: string): Promise<GateResponse> {
    if (!isPlausibleAppToken(appToken) || !(await this.#grants.revoke(user.id, appToken))) {
      throw new PlatformError('not_found', 'No connected application with this app token')
    }
    return { status: 204, headers: { 'cache-control': 'no-store' }, body: '' }
  }

  /**
   * The user the credentials name, or else the browser session's: the host's first, then
   * the gate's own login session.
   */
  async #caller(request: GateRequest, context: GateContext): Promise<Caller | undefined> {
    if (context.user !== null) return { user: context.user, via: context.auth as Exclude<AuthMethod, 'none'> }
    // Credentials that were sent but did not authenticate (a token revoked for travelling in
    // clear) never fall back to a cookie.
    if (context.revokedInsecureToken) return undefined
    const fromHost = (await this.#config.oauth.authenticateUser?.(request)) ?? undefined
    // The gate's own sign-in session exists only with the OAuth server on (its login page).
    const user = fromHost !== undefined ? await this.#store.getUser(fromHost) : this.#config.oauth.enabled ? await this.#sessions.user(request) : undefined
    return user === undefined ? undefined : { user: toGateUser(user), via: 'session' }
  }

  /** Whether a session's request may create or delete: only with the CSRF header, from this site. @throws {PlatformError} when not */
  #mayChange(request: GateRequest, caller: Caller): void {
    if (caller.via === 'session' && !csrfValid(request, headerValue(request.headers, 'x-csrf-token'))) {
      throw new PlatformError('permission_denied', 'A request on a signed-in session must carry the X-CSRF-Token header (from any GET of these endpoints) and come from this site')
    }
  }
}

/** The refusal of a credential the user gave to an application or a script. */
function notFirstParty(via: 'oauth' | 'api-key'): PlatformError {
  const held = via === 'oauth' ? 'An OAuth access token belongs to an application' : 'An API key belongs to a script'
  return new PlatformError(
    'first_party_credentials_required',
    `${held}, and cannot read or manage the account's API keys, applications and connected apps; sign in with your password or on the portal`,
  )
}

function allowedMethods(route: SelfServiceRoute): readonly string[] {
  if (route.kind === 'applications') {
    if (route.id === null) return ['GET', 'POST']
    return route.part === 'secret' ? ['POST'] : route.part === 'usage' ? ['GET'] : ['GET', 'PATCH', 'DELETE']
  }
  if (route.kind === 'api-keys') return route.id === null ? ['GET', 'POST'] : ['GET', 'DELETE']
  return route.id === null ? ['GET'] : ['DELETE']
}
