/**
 * Where the OAuth endpoints are served: each registers its path in the gate's route table
 * (src/pipeline/routes.ts), answered before the access checks (they authenticate clients
 * and users themselves), a failure answered in the endpoint's own shape.
 */
import type { OAuthEndpoint, OAuthServer } from './server.js'
import type { Route, RouteTable } from '../pipeline/routes.js'

/** Registers the endpoints at their configured paths (`null`: not served), and the connected-apps page. */
export function registerOAuth(table: RouteTable, oauth: OAuthServer, paths: Readonly<Partial<Record<OAuthEndpoint, string | null>>>): void {
  for (const [endpoint, path] of Object.entries(paths) as Array<[OAuthEndpoint, string | null]>) {
    if (path === null) continue
    const route: Route = {
      stage: 'own',
      endpoint: {
        answer: (request, client) => oauth.handle(endpoint, request, client),
        failure: (error, request, client) => oauth.failure(endpoint, error, request, client.requestId),
      },
    }
    table.add(path, route)
  }
}
