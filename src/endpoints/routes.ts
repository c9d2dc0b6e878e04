/**
 * Where the current-user and self-service endpoints and the pages are served: each registers its paths
 * in the gate's route table (src/pipeline/routes.ts) with the stage that answers it.
 */
import { currentUserResponse } from './current-user.js'
import type { SelfService, SelfServiceRoute } from './self-service.js'
import type { ResolvedConfig } from '../config/options.js'
import type { PageEndpoint } from '../http/page-endpoint.js'
import type { Route, RouteTable } from '../pipeline/routes.js'

/** The current user, as JSON and as XML: answered after every check, as the host's handler would be. */
export function registerCurrentUser(table: RouteTable, paths: ResolvedConfig['currentUser']): void {
  for (const format of ['json', 'xml'] as const) {
    const route: Route = { stage: 'checked', endpoint: { answer: (request, context) => currentUserResponse(format, request, context) } }
    for (const path of paths[format]) table.add(path, route)
  }
}

/** The API key, connected-apps and application endpoints: their collections, and their items' paths. */
export function registerSelfService(table: RouteTable, selfService: SelfService): void {
  const routeOf = (target: SelfServiceRoute): Route => ({ stage: 'user', endpoint: { answer: (request, context) => selfService.handle(target, request, context) } })
  for (const [path, target] of selfService.collections()) table.add(path, routeOf(target))
  table.addMatcher(selfService.itemPrefixes(), (path) => {
    const target = selfService.match(path)
    return target === undefined ? undefined : routeOf(target)
  })
}

/** A page that answers people (the connected-apps page): before the access checks, as the OAuth pages, its failures as pages. */
export function registerPage(table: RouteTable, path: string, page: PageEndpoint): void {
  table.add(path, { stage: 'own', endpoint: { answer: (request, client) => page.handle(request, client), failure: (error, request, client) => page.failure(error, request, client.requestId) } })
}
