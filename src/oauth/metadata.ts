/**
 * RFC 8414 authorization server metadata, for clients that discover endpoints
 * (`oauth4webapi`, `openid-client`).
 */
import { OAuthError } from '../errors.js'
import { headerValue, type GateRequest, type GateResponse } from '../http/request.js'
import { jsonResponse } from '../http/responses.js'
import type { ResolvedConfig } from '../config/options.js'

const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/
/** The gates (by their configuration) that have warned about a derived issuer: each warns once. */
const warnedAboutDerivedIssuer = new WeakSet<ResolvedConfig>()

/**
 * The issuer: configured, or derived from the request's Host, which only a well-formed
 * host name may give. Deriving it lets whoever controls the Host header choose the
 * endpoints announced to them, so each gate warns once: set `oauth.issuer` in production.
 */
export function issuerOf(config: ResolvedConfig, request: GateRequest): string {
  if (config.oauth.issuer !== null) return config.oauth.issuer
  const host = headerValue(request.headers, 'host')
  if (host === undefined || !HOST.test(host)) throw new OAuthError('invalid_request', 'The request has no valid Host header to name the issuer by')
  if (!warnedAboutDerivedIssuer.has(config)) {
    warnedAboutDerivedIssuer.add(config)
    config.log.warn('open-data-gate: the OAuth metadata names its issuer after the request Host; set oauth.issuer', { code: 'ODG_DERIVED_ISSUER' })
  }
  return `https://${host}`
}

export function metadataResponse(config: ResolvedConfig, request: GateRequest): GateResponse {
  const issuer = issuerOf(config, request)
  const { authorize, token, revoke } = config.oauth.paths
  const endpoint = (path: string | null) => (path === null ? undefined : `${issuer}${path}`)
  const authMethods = ['client_secret_basic', 'client_secret_post']
  return jsonResponse(
    200,
    {
      issuer,
      authorization_endpoint: endpoint(authorize),
      token_endpoint: endpoint(token),
      revocation_endpoint: endpoint(revoke),
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code'],
      token_endpoint_auth_methods_supported: authMethods,
      revocation_endpoint_auth_methods_supported: authMethods,
      code_challenge_methods_supported: ['S256'],
    },
    { 'cache-control': 'no-cache' },
  )
}
