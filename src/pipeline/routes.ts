/**
 * The paths the gate answers itself, and which endpoint each one is: the OAuth endpoints
 * and the connected-apps page (answered before the access checks: they authenticate clients
 * and users themselves), and the current user, the API key and connected-apps endpoints
 * (answered after them). Every other path belongs to the host.
 */
import type { ResolvedConfig } from '../config/options.js'
import type { SelfService, SelfServiceRoute } from '../endpoints/self-service.js'
import type { OAuthEndpoint } from '../oauth/server.js'

/** The OAuth endpoints and pages. */
export type OAuthRoute = { readonly kind: 'oauth'; readonly endpoint: OAuthEndpoint }
/** The current-user record, as JSON or XML. */
export type CurrentUserRoute = { readonly kind: 'current-user'; readonly format: 'json' | 'xml' }
/** The API key and connected-apps endpoints: answered after the access checks, like the current user. */
export type OwnAccessRoute = { readonly kind: 'self-service'; readonly target: SelfServiceRoute }
/** A path answered after the gate's access checks. */
export type CheckedRoute = CurrentUserRoute | OwnAccessRoute
/** A path the gate answers itself. */
export type Route = OAuthRoute | CheckedRoute

/** The options that place the endpoints. */
export type RouteConfig = Pick<ResolvedConfig, 'currentUser' | 'connectedApps'> & { readonly oauth: Pick<ResolvedConfig['oauth'], 'paths'> }

/** The gate's own paths, built once. */
export class RouteTable {
  readonly #routes = new Map<string, Route>()
  readonly #selfService: SelfService

  /** @throws {TypeError} when two endpoints are configured at one path */
  constructor(config: RouteConfig, selfService: SelfService) {
    this.#selfService = selfService
    const routes: Array<[string, Route]> = [
      ...config.currentUser.json.map((path): [string, Route] => [path, { kind: 'current-user', format: 'json' }]),
      ...config.currentUser.xml.map((path): [string, Route] => [path, { kind: 'current-user', format: 'xml' }]),
      ...Object.entries(config.oauth.paths)
        .filter((entry): entry is [OAuthEndpoint, string] => entry[1] !== null)
        .map(([endpoint, path]): [string, Route] => [path, { kind: 'oauth', endpoint }]),
      ...selfService.collections().map(([path, target]): [string, Route] => [path, { kind: 'self-service', target }]),
      ...(config.connectedApps.page === null ? [] : [[config.connectedApps.page, { kind: 'oauth', endpoint: 'grants' }] as [string, Route]]),
    ]
    for (const [path, route] of routes) {
      if (this.#routes.has(path)) throw new TypeError(`open-data-gate: the path ${path} is configured for two endpoints`)
      this.#routes.set(path, route)
    }
  }

  /** The endpoint at a path (`/api/api_keys/<keyId>` and `/api/oauth/grants/<appToken>` included), or `undefined`: the host's. */
  find(path: string): Route | undefined {
    const route = this.#routes.get(path)
    if (route !== undefined) return route
    const target = this.#selfService.match(path)
    return target === undefined ? undefined : { kind: 'self-service', target }
  }
}

/** The OAuth endpoints and pages and the self-service endpoints: served over https only. */
export function isSecureOnly(route: Route | undefined): boolean {
  return route?.kind === 'oauth' || route?.kind === 'self-service'
}
