/**
 * Who the client is and whether it used https (`../http/proxy.ts` reads the socket and the
 * proxy headers), and what the gate does about a reverse proxy the operator forgot to
 * trust: it warns once, and refuses a request whose credentials' safety it cannot judge.
 *
 * @see docs/guides/proxies.md
 */
import { PlatformError } from '../errors.js'
import type { ResolvedConfig } from '../config/options.js'
import { claimsHttps, hasProxyHeaders, isPrivateAddress, resolveClient, type ClientInfo } from '../http/proxy.js'
import type { GateRequest } from '../http/request.js'
import { isSecureOnly, type Route } from './routes.js'

/** The options that say which proxies speak for the client. */
export type ClientConfig = Pick<ResolvedConfig, 'trust' | 'trustsAnyProxy' | 'proxyHeaders' | 'log'>

/** Resolves the client of each request, and watches for proxies nobody trusted. */
export class Clients {
  readonly #config: ClientConfig
  #warnedAboutProxyHeaders = false

  constructor(config: ClientConfig) {
    this.#config = config
  }

  /** The client's address and whether its connection is https. */
  resolve(request: GateRequest, requestId: string | undefined): ClientInfo {
    const client = resolveClient(request, this.#config.trust, this.#config.proxyHeaders, requestId)
    if (!this.#config.trustsAnyProxy && !this.#warnedAboutProxyHeaders && hasProxyHeaders(request) && isPrivateAddress(client.ip)) {
      this.#warnOnUntrustedProxy(client, false)
    }
    return client
  }

  /**
   * A private peer vouching for https while no proxy is trusted is a proxy the operator
   * forgot to configure: the gate cannot know how the credentials travelled, so it neither
   * revokes them nor tells a client who used https that it used http. Such a request is
   * refused when it carries credentials or is for an https-only endpoint.
   * @returns the refusal (500 `proxy_not_trusted`), or `undefined`
   */
  untrustedProxyRefusal(request: GateRequest, client: ClientInfo, route: Route | undefined): PlatformError | undefined {
    // Cheapest tests first: most requests carry no proxy header and stop at the second.
    if (client.secure || !hasProxyHeaders(request) || this.#config.trustsAnyProxy || !isPrivateAddress(client.ip) || !claimsHttps(request)) return undefined
    if (request.headers.authorization === undefined && !isSecureOnly(route)) return undefined
    this.#warnOnUntrustedProxy(client, true)
    return new PlatformError(
      'proxy_not_trusted',
      'The request came through a proxy that is not trusted: set the gate option trustProxy to the proxy\'s address so the gate can see that the client used https',
    )
  }

  /**
   * Once per gate: proxy headers arriving from a private or loopback peer while no proxy
   * is trusted usually mean a reverse proxy the operator forgot to configure, and then
   * every client shares the proxy's address and looks insecure.
   */
  #warnOnUntrustedProxy(client: ClientInfo, refused: boolean): void {
    if (this.#warnedAboutProxyHeaders) return
    this.#warnedAboutProxyHeaders = true
    this.#config.log.warn(
      `open-data-gate: a request from ${client.ip} carries proxy headers, but trustProxy is false, so they are ignored` +
        (refused ? ' (and a request that says the client used https is refused with 500 proxy_not_trusted rather than treated as plain http)' : '') +
        '. If the app runs behind a reverse proxy, set trustProxy to its address.',
      { code: 'ODG_UNTRUSTED_PROXY_HEADERS' },
    )
  }
}
