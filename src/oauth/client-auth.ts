/**
 * Client authentication at the token and revocation endpoints (RFC 6749 §2.3.1):
 * `Authorization: Basic` with the form-encoded client_id and client_secret
 * (client_secret_basic), or client_id and client_secret as parameters (client_secret_post,
 * and the spec's query form). Exactly one method per request. The secret is compared in
 * constant time against its stored hash (and the previous secret's, within the grace of a rotation); failed attempts spend a budget per client and
 * source address, and once it is spent every attempt from there is refused.
 */
import { isPlausibleAppToken } from '../rules/credential-shapes.js'
import { readCredentials } from '../http/authorization-header.js'
import { GateError, OAuthError, retryAfterSeconds } from '../errors.js'
import type { Emit } from '../events.js'
import type { Params } from '../http/params.js'
import type { GateRequest } from '../http/request.js'
import type { ClientInfo } from '../http/proxy.js'
import { clientFailuresRateKey } from '../limits/rate-keys.js'
import { applicationSecretMatches, matchingSecret, retirePreviousSecret } from '../management/secret-rotation.js'
import { unstorableCharacter } from '../rules/storable.js'
import type { ApplicationRecord, GateStore } from '../store/store.js'
import type { Throttle } from '../pipeline/throttle.js'

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
  const locked = (retryAfterMs: number) => {
    const retryAfter = retryAfterSeconds(retryAfterMs)
    deps.emit('throttled', { policy: 'client', appToken: clientId, ip: client.ip, requestId: client.requestId, retryAfterMs })
    return new OAuthError('invalid_client', `Too many failed client authentications; retry in ${retryAfter} seconds`, {
      headers: { ...challenge, 'retry-after': String(retryAfter) },
    })
  }
  const refuse = () => {
    deps.emit('authenticationFailed', { method: 'client', ip: client.ip, requestId: client.requestId, username: undefined })
    return new OAuthError('invalid_client', 'Client authentication failed: unknown client_id or wrong client_secret', { headers: challenge })
  }

  // Only a real client has a budget, and one per source address: a client_id is public,
  // so a budget shared by everyone would let anybody lock the real client out, and
  // made-up ids would fill the store with keys.
  const application = isPlausibleAppToken(clientId) ? await deps.store.getApplication(clientId) : undefined
  if (application === undefined) throw refuse()
  const failureKey = clientFailuresRateKey(clientId, client.ip)
  const failures = deps.failures
  // The secret is one constant-time compare of hashes (no scrypt), so it is checked first
  // and only failures are counted: a busy client exchanging many codes at once never
  // spends its own budget. A spent budget refuses even the right secret.
  if (failures !== null) {
    const state = await deps.throttle.consume(failureKey, failures.limit, failures.windowMs, 0)
    if (state !== null && state.remaining === 0) throw locked(state.retryAfterMs)
  }
  // The previous secret of a rotation is accepted until its grace ends (applications.secretGraceMs).
  if (!applicationSecretMatches(application, secret)) {
    if (failures !== null) {
      const spent = await deps.throttle.consume(failureKey, failures.limit, failures.windowMs, 1)
      if (spent !== null && !spent.allowed) throw locked(spent.retryAfterMs)
    }
    throw refuse()
  }
  return application
}

/**
 * A client secret that came over plain http (the request is refused; see the token
 * endpoint). The right current secret is reported (`clientSecretExposed`) and kept:
 * replacing it would break the application until its operators deploy a new one. The
 * previous secret of a rotation, still in its grace, is retired at once and reported: the
 * application already has its new secret, so nothing that was updated breaks, and the
 * one seen in clear must not keep issuing tokens over https.
 */
export async function clientSecretSentInClear(request: GateRequest, params: Params, client: ClientInfo, deps: Pick<ClientAuthDeps, 'store' | 'emit'>): Promise<void> {
  let clientId = params.get('client_id')
  let secret = params.get('client_secret')
  try {
    const credentials = readCredentials(request, false)
    if (credentials?.kind === 'basic') {
      clientId = decodeURIComponent(credentials.user.replace(/\+/g, ' '))
      secret = decodeURIComponent(credentials.password.replace(/\+/g, ' '))
    }
  } catch {
    // Malformed credentials hold no secret to report.
  }
  if (clientId === undefined || secret === undefined || !isPlausibleAppToken(clientId)) return
  const application = await deps.store.getApplication(clientId)
  const match = application === undefined ? undefined : matchingSecret(application, secret)
  if (application === undefined || match === undefined) return
  if (match === 'previous') await retirePreviousSecret(deps.store, application)
  deps.emit('clientSecretExposed', { appToken: application.appToken, secret: match, ip: client.ip, requestId: client.requestId })
}

/** RFC 6749 §2.3.1: the Basic user and password are form-urlencoded first. */
function formDecode(value: string): string {
  let decoded: string
  try {
    decoded = decodeURIComponent(value.replace(/\+/g, ' '))
  } catch {
    throw new OAuthError('invalid_request', 'Malformed client credentials: invalid percent-encoding')
  }
  const problem = unstorableCharacter(decoded)
  if (problem !== undefined) throw new OAuthError('invalid_request', `Malformed client credentials: the decoded value ${problem}`)
  return decoded
}
