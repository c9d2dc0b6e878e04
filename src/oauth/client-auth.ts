/**
 * Client authentication at the token and revocation endpoints (RFC 6749 §2.3.1):
 * `Authorization: Basic` with the form-encoded client_id and client_secret
 * (client_secret_basic), or client_id and client_secret as parameters (client_secret_post,
 * and the spec's query form). Exactly one method per request. The secret is compared in
 * constant time against its stored hash; attempts spend a budget per client and source
 * address, given back on success.
 */
import { isPlausibleAppToken } from '../app-token.js'
import { readCredentials } from '../authorization-header.js'
import { GateError, OAuthError, retryAfterSeconds } from '../errors.js'
import type { Emit } from '../events.js'
import type { Params } from '../params.js'
import type { GateRequest } from '../http.js'
import { addressKey, type ClientInfo } from '../proxy.js'
import { secretMatches } from '../secrets.js'
import type { ApplicationRecord, GateStore } from '../store/store.js'
import type { Throttle } from '../throttle.js'

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
  // RFC 7235 §3.1: every 401 names a scheme the client can use.
  const challenge = { 'www-authenticate': `Basic realm="${deps.realm}"` }
  const clientId = basic?.id ?? postedId
  const secret = basic?.secret ?? postedSecret
  if (clientId === undefined || secret === undefined) {
    throw new OAuthError('invalid_client', 'Client authentication is required: send client_id and client_secret', { headers: challenge })
  }
  const refuse = () => {
    deps.emit('authenticationFailed', { method: 'client', ip: client.ip, username: undefined })
    return new OAuthError('invalid_client', 'Client authentication failed: unknown client_id or wrong client_secret', { headers: challenge })
  }

  // Only a real client has a budget, and one per source address: a client_id is public,
  // so a budget shared by everyone would let anybody lock the real client out, and
  // made-up ids would fill the store with keys.
  const application = isPlausibleAppToken(clientId) ? await deps.store.getApplication(clientId) : undefined
  if (application === undefined) throw refuse()
  const failureKey = `client:${clientId}:${addressKey(client.ip, 56)}`
  if (deps.failures !== null) {
    // Counted before the secret is checked, atomically, so a burst cannot pass a stale check.
    const budget = await deps.throttle.consume(failureKey, deps.failures.limit, deps.failures.windowMs, 1)
    if (budget !== null && !budget.allowed) {
      const retryAfter = retryAfterSeconds(budget.retryAfterMs)
      deps.emit('throttled', { policy: 'client', appToken: clientId, ip: client.ip, retryAfterMs: budget.retryAfterMs })
      throw new OAuthError('invalid_client', `Too many failed client authentications; retry in ${retryAfter} seconds`, {
        headers: { ...challenge, 'retry-after': String(retryAfter) },
      })
    }
  }
  if (!secretMatches(secret, application.secretHash)) throw refuse()
  if (deps.failures !== null) await deps.throttle.reset(failureKey)
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
