/**
 * The way of a request to the self-service endpoints (the API key endpoints,
 * `/api/applications` and its usage, connected apps) through the gate, once what travelled
 * in clear is revoked.
 *
 * These endpoints are the user's own, not an application's: no app token is needed (a
 * password over Basic needs no `X-App-Token` here, whatever `basic.requireAppToken` says),
 * one that is sent is not looked at, no application's throttle is spent, and the request
 * counts in no application's usage. A developer whose application is throttled can still
 * read its usage and manage it. The user's own budget (`selfServiceBudget`) is spent by the
 * endpoints once the user is known; what a request costs before that is bounded like a
 * sign-in: a password by the sign-in failure budgets and the hash queue, an API key or an
 * access token by one store read (and refused: only the user's own sign-in may manage the
 * account).
 *
 * @see docs/guides/applications.md "What a request sends"
 */
import type { Authenticator } from './authenticate.js'
import { toGateUser } from './authenticate.js'
import type { GateContext, GateOutcome } from './context.js'
import { assertMethodEnabled, type EnabledMethods } from './enabled-methods.js'
import type { RequestState } from './request-state.js'
import type { ContextEndpoint } from './routes.js'
import { readCredentials } from '../http/authorization-header.js'
import type { GateResponse } from '../http/request.js'

/** The options this path reads. */
export type SelfServiceAccessConfig = EnabledMethods & { readonly oauth: { readonly acceptBearer: boolean } }

/** Decides a request to a self-service endpoint. */
export class SelfServiceAccess {
  readonly #config: SelfServiceAccessConfig
  readonly #auth: Authenticator

  constructor(config: SelfServiceAccessConfig, auth: Authenticator) {
    this.#config = config
    this.#auth = auth
  }

  /**
   * The endpoint's answer. Credentials are verified only over https (the endpoint refuses
   * plain http, and a token sent in clear was revoked before): the request goes on without
   * a user then, and the endpoint answers 405 or `https_required`.
   */
  async decide(endpoint: ContextEndpoint<Promise<GateResponse>>, state: RequestState): Promise<GateOutcome> {
    const client = state.client
    const credentials = readCredentials(state.request, this.#config.oauth.acceptBearer)
    if (credentials !== undefined) {
      assertMethodEnabled(credentials, this.#config)
      if (client.secure) state.authentication = await this.#auth.verify(credentials, client)
    }
    const authentication = state.authentication
    const token = authentication?.token ?? null
    const context: GateContext = {
      application: null,
      throttle: null,
      secure: client.secure,
      clientIp: client.ip,
      user: authentication === null ? null : toGateUser(authentication.user),
      auth: state.auth,
      apiKeyId: authentication === null ? null : authentication.apiKeyId,
      accessToken: token === null ? null : { appToken: token.appToken, expiresAt: token.expiresAt },
      revokedInsecureToken: state.revokedInsecureToken || (credentials?.kind === 'token' && !client.secure),
      requestId: state.requestId ?? null,
    }
    return { type: 'respond', response: await endpoint.answer(state.request, context) }
  }
}
