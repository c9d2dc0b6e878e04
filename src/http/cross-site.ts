/**
 * Whether a request that changes something was sent by a page of another site. A browser
 * attaches what it holds for the gate to any request a page makes, a forged cross-site form
 * post included: cookies, and HTTP Basic credentials it was given after a
 * `WWW-Authenticate: Basic` prompt (`basic.challenge`). So the endpoints that change the
 * account refuse such a request whatever its credentials, by what the browser says:
 *
 * - `Sec-Fetch-Site`, which every current browser sends and no page can set: anything but
 *   `same-origin` (the gate's own pages) or `none` (the user's own navigation) is refused,
 *   `same-site` too: a sibling subdomain (user content, another team's app) is another
 *   origin, and no more trusted than another site.
 * - Without it (an older browser), `Origin`: present and not the request's own origin.
 * - An origin listed in `trustedOrigins` (a portal front end on another origin) passes both.
 *
 * A request with neither header is no browser's (curl, soda-js, a script) and passes: what
 * protects it is that it carries its own credentials on purpose.
 *
 * The request's own origin is `https://` (or `http://` on plain http, as the proxy rules
 * decide) and its `Host`, or the host a trusted proxy forwarded (`X-Forwarded-Host`, or
 * `Forwarded: host=`), or `oauth.issuer`'s origin when it is set: a proxy that rewrites
 * `Host` leaves the browser's `Origin` naming the public host.
 *
 * @see https://w3c.github.io/webappsec-fetch-metadata/
 * @see https://www.rfc-editor.org/rfc/rfc6454#section-7 (Origin)
 */
import { headerValue, type GateRequest } from './request.js'
import { normalizeAddress, parseForwarded, type ProxyHeadersOption } from './proxy.js'

/** What the check needs of the configuration. */
export interface OriginRules {
  /** The compiled `trustProxy`. */
  readonly trust: (address: string, hop: number) => boolean
  readonly proxyHeaders: ProxyHeadersOption
  /** `trustedOrigins` and `oauth.issuer`'s origin, as `URL#origin` serializes them. */
  readonly trustedOrigins: ReadonlySet<string>
}

/**
 * Why a request that changes something looks like another site's, in words for the error
 * message, or `undefined` when it does not.
 * @param secure whether the client's connection is https (the proxy rules applied)
 */
export function crossSiteProblem(request: GateRequest, secure: boolean, rules: OriginRules): string | undefined {
  const origin = headerValue(request.headers, 'origin')
  const sent = origin === undefined ? undefined : serialized(origin)
  if (sent !== undefined && rules.trustedOrigins.has(sent)) return undefined
  const fetchSite = headerValue(request.headers, 'sec-fetch-site')
  if (fetchSite !== undefined) {
    if (fetchSite === 'same-origin' || fetchSite === 'none') return undefined
    return fetchSite === 'same-site' ? 'the browser says it comes from another origin of this site' : 'the browser says it comes from another site'
  }
  if (origin === undefined) return undefined
  if (sent !== undefined && ownOrigins(request, secure, rules).includes(sent)) return undefined
  return 'it comes from a page of another origin'
}

/** The request's own origins: its `Host`, and the host a trusted proxy forwarded. */
function ownOrigins(request: GateRequest, secure: boolean, rules: OriginRules): string[] {
  const scheme = secure ? 'https' : 'http'
  const hosts = [headerValue(request.headers, 'host')]
  if (rules.trust(normalizeAddress(request.peerAddress ?? ''), 0)) hosts.push(forwardedHost(request, rules.proxyHeaders))
  const origins: string[] = []
  for (const host of hosts) {
    const origin = host === undefined || host === '' ? undefined : serialized(`${scheme}://${host}`)
    if (origin !== undefined) origins.push(origin)
  }
  return origins
}

/** The host the nearest proxy says the client asked for, in the headers it speaks. */
function forwardedHost(request: GateRequest, headers: ProxyHeadersOption): string | undefined {
  if (headers === 'forwarded') {
    const raw = request.headers.forwarded
    const elements = raw === undefined ? undefined : parseForwarded(Array.isArray(raw) ? raw.join(',') : raw)
    return elements?.[elements.length - 1]?.host
  }
  const raw = request.headers['x-forwarded-host']
  const list = (Array.isArray(raw) ? raw.join(',') : (raw ?? '')).split(',')
  return list[list.length - 1]?.trim()
}

/** An origin as `URL#origin` serializes it, or `undefined` for what is none (`null`, garbage, a path). */
function serialized(value: string): string | undefined {
  if (!URL.canParse(value)) return undefined
  const url = new URL(value)
  return url.origin === 'null' || url.pathname !== '/' || url.search !== '' || url.username !== '' ? undefined : url.origin
}
