/**
 * The paths the gate answers itself. Each endpoint registers its own paths here (the OAuth
 * server its endpoints, the self-service endpoints theirs, the current user its two), with
 * the stage of the pipeline that answers it; every other path belongs to the host.
 *
 * - `own`: answered before the access checks, after what travelled in clear is revoked:
 *   the OAuth endpoints and the pages, which authenticate clients and users themselves.
 * - `user`: the self-service endpoints, answered with the user's own credentials verified
 *   and no application's budget spent (src/pipeline/self-service-access.ts).
 * - `checked`: answered after every check, as the host's handler would be (the current user).
 */
import type { GateContext } from './context.js'
import type { ClientInfo } from '../http/proxy.js'
import type { GateRequest, GateResponse } from '../http/request.js'
import type { Awaitable } from '../store/store.js'

/** An endpoint that authenticates its own clients and users: the OAuth endpoints and the pages. */
export interface OwnEndpoint {
  /** The answer. Never throws: a failure is answered in the endpoint's own shape. */
  answer(request: GateRequest, client: ClientInfo): Awaitable<GateResponse>
  /** The answer to a failure before the endpoint ran (a page, or RFC 6749 JSON), reported as the endpoint reports its own. */
  failure(error: unknown, request: GateRequest, client: ClientInfo): GateResponse
}

/** An endpoint answered with the request's context once the user's credentials are verified. */
export interface ContextEndpoint<R = GateResponse> {
  answer(request: GateRequest, context: GateContext): R
}

/** A path the gate answers itself, with the stage that answers it. */
export type Route =
  | { readonly stage: 'own'; readonly endpoint: OwnEndpoint }
  | { readonly stage: 'user'; readonly endpoint: ContextEndpoint<Promise<GateResponse>> }
  | { readonly stage: 'checked'; readonly endpoint: ContextEndpoint }

/** The gate's own paths: filled once by the endpoints, then read by every request. */
export class RouteTable {
  readonly #routes = new Map<string, Route>()
  readonly #matchers: Array<(path: string) => Route | undefined> = []
  /**
   * The second characters (ASCII) of every path and prefix added: a path whose second
   * character is none of them is the host's without a lookup. Most requests are for the
   * host's paths, and hashing each request's path for the map cost more than the rest of
   * the lookup. `#unfiltered`: a path or prefix of fewer than two characters, or with a
   * non-ASCII second one, was added, and every path is looked up.
   */
  readonly #seconds = new Uint8Array(128)
  #unfiltered = false

  /** @throws {TypeError} when two endpoints are configured at one path */
  add(path: string, route: Route): void {
    if (this.#routes.has(path)) throw new TypeError(`open-data-gate: the path ${path} is configured for two endpoints`)
    this.#routes.set(path, route)
    this.#see(path)
  }

  /**
   * Paths under a prefix (`/api/api_keys/<keyId>`): asked when no exact path matched, in the
   * order added. `match` must find nothing for a path that starts with none of `prefixes`.
   */
  addMatcher(prefixes: readonly string[], match: (path: string) => Route | undefined): void {
    for (const prefix of prefixes) this.#see(prefix)
    this.#matchers.push(match)
  }

  #see(path: string): void {
    const c = path.charCodeAt(1)
    if (c < 128) this.#seconds[c] = 1
    else this.#unfiltered = true // NaN (under two characters) too
  }

  /** The endpoint at a path, or `undefined`: the host's. */
  find(path: string): Route | undefined {
    if (!this.#unfiltered) {
      const c = path.charCodeAt(1)
      // NaN (a path under two characters) and non-ASCII fall through to the lookup.
      if (c < 128 && this.#seconds[c] === 0) return undefined
    }
    const route = this.#routes.get(path)
    if (route !== undefined || this.#matchers.length === 0) return route
    for (const match of this.#matchers) {
      const found = match(path)
      if (found !== undefined) return found
    }
    return undefined
  }
}

/** The OAuth endpoints and pages and the self-service endpoints: served over https only. */
export function isSecureOnly(route: Route | undefined): boolean {
  return route !== undefined && route.stage !== 'checked'
}
