/**
 * The token endpoint (`POST /oauth/access_token`) and the RFC 7009 revocation endpoint
 * (`POST /oauth/revoke`).
 *
 * Parameters come as query parameters (as the spec shows), a form body, or a JSON body
 * (the spec shows that too); a name sent twice, in one place or across two, is an error.
 *
 * A code is consumed with one compare-and-set in the store. The token is saved before
 * that compare-and-set, tagged with the code, so an exchange that loses the race, or any
 * later one, always finds it to revoke: RFC 6749 §4.1.2 says a code used more than once
 * revokes every token issued from it, and that holds even for concurrent exchanges.
 *
 * @see docs/platform-rules.md "Exchange code for access token"; SECURITY.md "Checklist", "Token endpoint" and "Codes"
 */
import type { AccessTokens, IssuedAccessToken } from '../management/access-tokens.js'
import { NotFoundError, OAuthError } from '../errors.js'
import type { Emit } from '../events.js'
import type { GateRequest, GateResponse } from '../http/request.js'
import { bodyParams, CLOSE_AFTER, CONNECTION_CLOSE, Params, queryParams } from '../http/params.js'
import type { ClientInfo } from '../http/proxy.js'
import { sha256 } from '../secrets/tokens.js'
import { isSuspended, suspensionMessage, type ApplicationRecord, type AuthorizationCodeRecord, type GateStore } from '../store/store.js'
import { authenticateClient, clientSecretSentInClear, type ClientAuthDeps } from './client-auth.js'
import { isVerifier, verifierMatches } from './pkce.js'

const BODY_LIMIT = 16 * 1024
const TOKEN_PARAMS = ['grant_type', 'code', 'redirect_uri', 'client_id', 'client_secret', 'code_verifier']
const REVOKE_PARAMS = ['token', 'token_type_hint', 'client_id', 'client_secret']
/** Counts one post against the OAuth budget of an authenticated client, or of the address when none authenticated. @throws {ThrottledError} */
export type SpendPost = (appToken: string | undefined, client: ClientInfo) => Promise<void>

/** Revokes access tokens that travelled in clear; how many were live. */
export type RevokeInsecure = (tokens: readonly string[], client: ClientInfo) => Promise<number>

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' }

/**
 * What the token and revocation endpoints are made of. It is the client authentication's
 * own dependencies too (store, throttle, emit, realm, failures), so each is given once.
 */
export interface TokenEndpointParts extends ClientAuthDeps {
  /** Issues the access token of an exchanged code. */
  readonly tokens: AccessTokens
  /** Revokes the access tokens sent to the revocation endpoint over plain http. */
  readonly revokeInsecure: RevokeInsecure
  /** How long a body may take to arrive (`bodyTimeoutMs`). */
  readonly bodyTimeoutMs: number
  /** Counts each post against the client's OAuth budget, or the address's. */
  readonly spend: SpendPost
}

export class TokenEndpoints {
  readonly #store: GateStore
  readonly #tokens: AccessTokens
  readonly #clientAuth: ClientAuthDeps
  readonly #emit: Emit
  readonly #revokeInsecure: RevokeInsecure
  readonly #bodyTimeoutMs: number
  readonly #spend: SpendPost

  constructor(parts: TokenEndpointParts) {
    this.#store = parts.store
    this.#tokens = parts.tokens
    this.#clientAuth = parts
    this.#emit = parts.emit
    this.#revokeInsecure = parts.revokeInsecure
    this.#bodyTimeoutMs = parts.bodyTimeoutMs
    this.#spend = parts.spend
  }

  /** Client authentication, and the post counted against the client's budget, or the address's when it failed. */
  async #authenticated(request: GateRequest, params: Params, client: ClientInfo): Promise<ApplicationRecord> {
    let application: ApplicationRecord
    try {
      application = await authenticateClient(request, params, client, this.#clientAuth)
    } catch (error) {
      await this.#spend(undefined, client)
      throw error
    }
    await this.#spend(application.appToken, client)
    return application
  }

  /** Exchanges an authorization code for an access token. */
  async token(request: GateRequest, client: ClientInfo): Promise<GateResponse> {
    const params = await this.#readParams(request, client, 'token', TOKEN_PARAMS)
    const application = await this.#authenticated(request, params, client)

    const grantType = params.get('grant_type')
    if (grantType === undefined) throw new OAuthError('invalid_request', 'grant_type is missing')
    if (grantType !== 'authorization_code') throw new OAuthError('unsupported_grant_type', 'Only grant_type=authorization_code is supported')
    if (application.callbackPrefix === null) throw new OAuthError('unauthorized_client', 'This application has no Callback Prefix, so it cannot use the authorization code grant')
    // RFC 6749 §5.2: the client authenticated, but may not use the grant while it is suspended. The code is left unspent.
    if (isSuspended(application)) throw new OAuthError('unauthorized_client', suspensionMessage(application))
    const code = params.get('code')
    if (code === undefined) throw new OAuthError('invalid_request', 'code is missing')
    const redirectUri = params.get('redirect_uri')
    if (redirectUri === undefined) throw new OAuthError('invalid_request', 'redirect_uri is missing')

    const codeHash = sha256(code)
    const record = await this.#store.getAuthorizationCode(codeHash)
    if (record === undefined) throw new OAuthError('invalid_grant', 'The authorization code is unknown or expired')
    // The client first: another application holding a leaked code must not be able to
    // revoke the rightful client's tokens by replaying it.
    if (record.appToken !== application.appToken) throw new OAuthError('invalid_grant', 'The authorization code was issued to another application')
    if (record.usedAt !== null) throw await this.#replayed(record, client)
    if (record.expiresAt <= Date.now()) throw new OAuthError('invalid_grant', 'The authorization code has expired')
    if (record.redirectUri !== redirectUri) throw new OAuthError('invalid_grant', 'redirect_uri is not identical to the one of the authorization request')
    checkPkce(record, params.get('code_verifier'))
    if ((await this.#store.getUser(record.userId)) === undefined) throw new OAuthError('invalid_grant', 'The user who approved the request no longer exists')

    const issued = await this.#issue(record.userId, application.appToken, codeHash)
    if (!(await this.#store.consumeAuthorizationCode(codeHash, Date.now()))) {
      // Another exchange of this code won the compare-and-set: this one is a replay.
      throw await this.#replayed(record, client)
    }
    // The user may have revoked the application since approving (connected apps): the grant
    // is deleted before the tokens are revoked, and checked here after this token was saved,
    // so whichever order the two requests run in, no live token is left behind.
    if ((await this.#store.getGrant(record.userId, application.appToken)) === undefined) {
      await this.#store.revokeAccessToken(issued.record.tokenHash, Date.now())
      throw new OAuthError('invalid_grant', 'The user has revoked this application’s access since approving the request')
    }
    return {
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8', ...NO_STORE },
      body: JSON.stringify({ access_token: issued.accessToken, token_type: 'bearer', expires_in: issued.expiresIn }),
    }
  }

  /**
   * The token, or the RFC 6749 error of a record deleted since it was read: the application
   * (deleted after it authenticated) is `invalid_client`, the user `invalid_grant`.
   */
  async #issue(userId: string, appToken: string, codeHash: string): Promise<IssuedAccessToken> {
    try {
      return await this.#tokens.issue({ userId, appToken, codeHash })
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error
      if ((await this.#store.getApplication(appToken)) === undefined) {
        throw new OAuthError('invalid_client', 'The client was deleted during the request', { headers: { 'www-authenticate': `Basic realm="${this.#clientAuth.realm}"` } })
      }
      throw new OAuthError('invalid_grant', 'The user who approved the request no longer exists')
    }
  }

  /** RFC 7009: a client revokes one of its own tokens. Unknown tokens are answered 200 too. */
  async revoke(request: GateRequest, client: ClientInfo): Promise<GateResponse> {
    const params = await this.#readParams(request, client, 'revoke', REVOKE_PARAMS)
    const application = await this.#authenticated(request, params, client)
    const token = params.get('token')
    if (token === undefined) throw new OAuthError('invalid_request', 'token is missing')
    // token_type_hint is only a hint (RFC 7009 §2.1): access tokens are all there is.
    const tokenHash = sha256(token)
    const record = await this.#store.getAccessToken(tokenHash)
    if (record !== undefined && record.appToken !== application.appToken) {
      throw new OAuthError('unauthorized_client', 'The token was not issued to this client')
    }
    if (record !== undefined) await this.#store.revokeAccessToken(tokenHash, Date.now())
    return { status: 200, headers: { ...NO_STORE }, body: '' }
  }

  /** The parameters of a token or revocation request: query and body, nothing repeated, over https only. */
  async #readParams(request: GateRequest, client: ClientInfo, endpoint: 'token' | 'revoke', names: readonly string[]): Promise<Params> {
    if (request.method !== 'POST') throw new OAuthError('invalid_request', `The ${endpoint} endpoint accepts POST only`, { headers: { allow: 'POST' } })
    const body = await bodyParams(request, BODY_LIMIT, this.#bodyTimeoutMs)
    if (body === 'timeout') throw new OAuthError('request_timeout', 'The request body did not arrive in time', { headers: CONNECTION_CLOSE })
    if (typeof body === 'string' && CLOSE_AFTER[body]) throw new OAuthError('invalid_request', BODY_PROBLEMS[body], { headers: CONNECTION_CLOSE })
    if (!client.secure) {
      await this.#sentInClear(request, Params.merge(queryParams(request.url), typeof body === 'string' ? new Params() : body), endpoint, client)
      throw new OAuthError('invalid_request', 'https is required: client credentials must not travel in clear')
    }
    if (typeof body === 'string') throw new OAuthError('invalid_request', BODY_PROBLEMS[body])
    const params = Params.merge(queryParams(request.url), body)
    const repeated = params.firstDuplicated(names)
    if (repeated !== undefined) throw new OAuthError('invalid_request', `${repeated} was sent more than once`)
    const unstorable = params.unstorable(names)
    if (unstorable !== undefined) throw new OAuthError('invalid_request', `${unstorable}, which no parameter may hold`)
    return params
  }

  /**
   * What a request over plain http gave away is made worthless, as far as the gate can:
   * a code is consumed (so its exchange over https later counts as a replay and revokes
   * what it issued), access tokens are revoked. A client secret cannot be replaced without
   * breaking the application, so the right one seen in clear is reported
   * (`clientSecretExposed`) for the operator to rotate; the previous one of a rotation,
   * still in its grace, is retired at once (`clientSecretSentInClear`).
   */
  async #sentInClear(request: GateRequest, params: Params, endpoint: 'token' | 'revoke', client: ClientInfo): Promise<void> {
    const code = params.get('code')
    if (endpoint === 'token' && code !== undefined) await this.#store.consumeAuthorizationCode(sha256(code), Date.now())
    const tokens = [params.get('access_token'), params.get('oauth_token'), endpoint === 'revoke' ? params.get('token') : undefined]
    await this.#revokeInsecure(tokens.filter((t): t is string => t !== undefined), client)
    await clientSecretSentInClear(request, params, client, { store: this.#store, emit: this.#emit })
  }

  /** A code presented after its first exchange: revoke what it issued, and refuse. */
  async #replayed(record: AuthorizationCodeRecord, client: ClientInfo): Promise<OAuthError> {
    const revokedTokens = await this.#store.revokeAccessTokens({ codeHash: record.codeHash }, Date.now())
    this.#emit('codeReplayed', { appToken: record.appToken, userId: record.userId, ip: client.ip, requestId: client.requestId, revokedTokens })
    return new OAuthError('invalid_grant', 'The authorization code has already been used; the tokens issued from it are revoked')
  }
}

const BODY_PROBLEMS = {
  'too-large': 'The request body is too large',
  timeout: 'The request body did not arrive in time',
  'unsupported-type': 'Send the parameters as application/x-www-form-urlencoded or application/json',
  malformed: 'The request body could not be parsed, or holds values that are not strings',
  unreadable: 'The request body could not be read',
} as const

/** RFC 7636 §4.6, and a verifier without a stored challenge is refused too (downgrade). */
function checkPkce(record: AuthorizationCodeRecord, verifier: string | undefined): void {
  if (record.codeChallenge === null) {
    if (verifier !== undefined) throw new OAuthError('invalid_grant', 'code_verifier was sent, but the authorization request had no code_challenge')
    return
  }
  if (verifier === undefined) throw new OAuthError('invalid_grant', 'code_verifier is missing: the authorization request had a code_challenge')
  if (!isVerifier(verifier) || !verifierMatches(verifier, record.codeChallenge)) throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge')
}
