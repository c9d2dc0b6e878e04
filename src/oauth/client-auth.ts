/**
 * Client authentication at the token and revocation endpoints (RFC 6749 §2.3.1):
 * `Authorization: Basic` with the form-encoded client_id and client_secret
 * (client_secret_basic), or client_id and client_secret as parameters (client_secret_post,
 * and the spec's query form). Exactly one method per request. The secret is compared in
 * constant time against its stored hash; failures spend a budget per client_id.
 */
import { isPlausibleAppToken } from '../app-token.js'
import { readCredentials } from '../authorization-header.js'
import { GateError, OAuthError } from '../errors.js'
import type { Emit } from '../events.js'
import type { Params } from '../params.js'
import type { GateRequest } from '../http.js'
import type { ClientInfo } from '../proxy.js'
import { secretMatches, sha256 } from '../secrets.js'
import type { ApplicationRecord, GateStore } from '../store/store.js'
import type { Throttle } from '../throttle.js'

const NO_SUCH_SECRET = sha256('')

export interface ClientAuthDeps {
  readonly store: GateStore
  readonly throttle: Throttle
  readonly emit: Emit
  readonly realm: string
  readonly failures: { readonly limit: number; readonly windowMs: number } | null
}

/**
 * The application that authenticated.
 * @throws {OAuthError} `invalid_request` for two methods at once or malformed credentials,
 * `invalid_client` (401) for missing or wrong ones
 */
export async function authenticateClient(request: GateRequest, params: Params, client: ClientInfo, deps: ClientAuthDeps): Promise<ApplicationRecord> {
  let basic: { id: string; secret: string } | undefined
  try {
    const credentials = readCredentials(request, false)
    if (credentials?.kind === 'basic') basic = { id: formDecode(credentials.user), secret: formDecode(credentials.password) }
  } catch (error) {
    throw new OAuthError('invalid_request', error instanceof GateError ? error.message : 'Malformed client credentials')
  }
  const postedId = params.get('client_id')
  const postedSecret = params.get('client_secret')
  if (basic !== undefined && postedSecret !== undefined) {
    throw new OAuthError('invalid_request', 'Use one client authentication method: Authorization: Basic or client_secret, not both')
  }
  if (basic !== undefined && postedId !== undefined && postedId !== basic.id) {
    throw new OAuthError('invalid_request', 'client_id differs from the client in the Authorization header')
  }
  // RFC 6749 §5.2: a client that tried Basic gets a Basic challenge with its 401.
  const headers: Record<string, string> = basic === undefined ? {} : { 'www-authenticate': `Basic realm="${deps.realm}"` }
  const clientId = basic?.id ?? postedId
  const secret = basic?.secret ?? postedSecret
  if (clientId === undefined || secret === undefined) {
    throw new OAuthError('invalid_client', 'Client authentication is required: send client_id and client_secret', { headers })
  }

  const failureKey = `client:${clientId}`
  if (deps.failures !== null) {
    const budget = await deps.throttle.consume(failureKey, deps.failures.limit, deps.failures.windowMs, 0)
    if (budget !== null && budget.remaining < 1) {
      const retryAfter = Math.max(1, Math.ceil(budget.retryAfterMs / 1000))
      deps.emit('throttled', { policy: 'client', appToken: clientId, ip: client.ip, retryAfterMs: budget.retryAfterMs })
      throw new OAuthError('invalid_client', `Too many failed client authentications; retry in ${retryAfter} seconds`, {
        headers: { ...headers, 'retry-after': String(retryAfter) },
      })
    }
  }
  const application = isPlausibleAppToken(clientId) ? await deps.store.getApplication(clientId) : undefined
  const matches = secretMatches(secret, application?.secretHash ?? NO_SUCH_SECRET)
  if (application === undefined || !matches) {
    deps.emit('authenticationFailed', { method: 'client', ip: client.ip, username: undefined })
    if (deps.failures !== null) await deps.throttle.consume(failureKey, deps.failures.limit, deps.failures.windowMs, 1)
    throw new OAuthError('invalid_client', 'Client authentication failed: unknown client_id or wrong client_secret', { headers })
  }
  return application
}

/** RFC 6749 §2.3.1: the Basic user and password are form-urlencoded first. */
function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '))
  } catch {
    throw new OAuthError('invalid_request', 'Malformed client credentials: invalid percent-encoding')
  }
}
