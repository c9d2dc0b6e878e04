/**
 * RFC 8414 authorization server metadata, for clients that discover endpoints
 * (`oauth4webapi`, `openid-client`).
 */
import { headerValue, jsonResponse, type GateRequest, type GateResponse } from '../http.js'
import type { ResolvedConfig } from '../options.js'

/** The issuer: configured, or derived from the request's Host (set `oauth.issuer` in production). */
export function issuerOf(config: ResolvedConfig, request: GateRequest): string {
  return config.oauth.issuer ?? `https://${headerValue(request.headers, 'host') ?? 'localhost'}`
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
