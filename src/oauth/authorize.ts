/**
 * The authorize endpoint: `GET /oauth/authorize?client_id&response_type=code&redirect_uri[&state][&code_challenge&code_challenge_method=S256]`,
 * and the login and consent forms it shows, which post back to the same URL.
 *
 * Order matters (RFC 6749 §4.1.2.1, SECURITY.md "Checklist"):
 * 1. An unknown client, a suspended one, or a redirect_uri that does not match its
 *    Callback Prefix, is shown to the user on an error page: redirecting would make the
 *    gate an open redirector (for a suspended client, a redirector to a client the
 *    operators no longer trust, RFC 9700 §4.11).
 * 2. The user is authenticated before any redirect, error redirects included.
 * 3. Every other problem goes back to the application as `error`, `error_description`
 *    and `state`.
 * 4. Approval sends `code` (and `state` exactly as sent) after any query string the
 *    redirect_uri already has; denial sends `access_denied`.
 *
 * @see docs/platform-rules.md "Start OAuth 2.0 authorization", "OAuth 2.0" 2-4, "Errors"
 */
import { isPlausibleAppToken } from '../rules/credential-shapes.js'
import type { Authenticator } from '../pipeline/authenticate.js'
import { PlatformError, StoreError, ThrottledError, type OAuthErrorCode, type PageErrorCode } from '../errors.js'
import type { ReportFailure } from '../events.js'
import { encodeUnprintable, type GateRequest, type GateResponse } from '../http/request.js'
import type { ResolvedConfig } from '../config/options.js'
import { bodyParams, CLOSE_AFTER, CONNECTION_CLOSE, queryParams, type Params } from '../http/params.js'
import type { ClientInfo } from '../http/proxy.js'
import { randomToken, sha256 } from '../secrets/tokens.js'
import { isSuspended, suspensionMessage, type ApplicationRecord, type GateStore, type UserRecord } from '../store/store.js'
import { errorPageResponse, type PageErrorView } from './error-pages.js'
import { consentPage, htmlResponse, loginPage, seeOther, type RegisteredBy } from './pages.js'
import { isS256Challenge } from './pkce.js'
import { redirectUriProblem, withParams } from './redirect-uri.js'
import { csrfToken, csrfValid, type LoginSessions } from '../endpoints/sign-in-session.js'

const FORM_LIMIT = 16 * 1024
/** Parameters that must not repeat once the client and redirect_uri are known good. */
const SINGLE = ['response_type', 'state', 'code_challenge', 'code_challenge_method', 'scope'] as const
/** Every parameter of the link the gate reads. */
const LINK_PARAMS = ['client_id', 'redirect_uri', ...SINGLE]
/** Every field of the sign-in and consent forms. */
const FORM_FIELDS = ['csrf_token', 'action', 'username', 'password']

/** A problem to report to the application through the redirect. */
interface RedirectError {
  code: OAuthErrorCode
  description: string
}

/** What the authorize endpoint is made of. */
export interface AuthorizeEndpointParts {
  readonly config: ResolvedConfig
  /** The guarded store: applications, users, grants and codes. */
  readonly store: GateStore
  /** Signs users in at the login form, with every protection of `gate.users.signIn`. */
  readonly auth: Authenticator
  /** The gate's own login sessions. */
  readonly sessions: LoginSessions
  /** Where a failure to issue a code is reported before it goes back to the application. */
  readonly report: ReportFailure
}

export class AuthorizeEndpoint {
  readonly #config: ResolvedConfig
  readonly #store: GateStore
  readonly #auth: Authenticator
  readonly #sessions: LoginSessions
  readonly #report: ReportFailure

  constructor(parts: AuthorizeEndpointParts) {
    this.#config = parts.config
    this.#store = parts.store
    this.#auth = parts.auth
    this.#sessions = parts.sessions
    this.#report = parts.report
  }

  async handle(request: GateRequest, client: ClientInfo): Promise<GateResponse> {
    if (request.method !== 'GET' && request.method !== 'POST') {
      return this.#error('method_not_allowed', { title: 'This page cannot be opened this way', message: 'Open it from a link in the application you are using.', detail: `${request.method} is not allowed at the authorize endpoint; use GET.` }, { allow: 'GET, POST' })
    }
    if (!client.secure) {
      return this.#error('https_required', { title: 'A secure connection is required', message: 'This sign-in page works only over a secure connection. Open the address again, starting with https://.', detail: 'The authorize endpoint is served over https only.' })
    }

    // 1. The client and the redirect_uri: problems go to the user, never to a redirect.
    const params = queryParams(request.url)
    if (params.isDuplicated('client_id') || params.isDuplicated('redirect_uri')) {
      return this.#brokenLink('client_id or redirect_uri was sent more than once.')
    }
    // Text no store can hold is refused before any lookup (a NUL once made PostgreSQL look down).
    const unstorable = params.unstorable(LINK_PARAMS)
    if (unstorable !== undefined) return this.#brokenLink(`The parameter ${unstorable}.`)
    const clientId = params.get('client_id')
    if (clientId === undefined) return this.#brokenLink('The request has no client_id.')
    const application = isPlausibleAppToken(clientId) ? await this.#store.getApplication(clientId) : undefined
    if (application === undefined) return this.#brokenLink('No application is registered with this client_id.')
    if (isSuspended(application)) return this.#suspended(application)
    if (application.callbackPrefix === null) {
      return this.#brokenLink(`${application.name} has no Callback Prefix registered, so it cannot use OAuth.`, application.name)
    }
    const redirectUri = params.get('redirect_uri')
    if (redirectUri === undefined) return this.#brokenLink('The request has no redirect_uri.', application.name)
    const problem = redirectUriProblem(redirectUri, application.callbackPrefix, this.#config.oauth.allowLoopbackCallbacks)
    if (problem !== undefined) {
      return this.#brokenLink(`The redirect_uri is not allowed for ${application.name}: ${problem}.`, application.name)
    }

    // 2. The user, before any redirect.
    let decision: 'approve' | 'deny' | undefined
    if (request.method === 'POST') {
      const form = await bodyParams(request, FORM_LIMIT, this.#config.bodyTimeoutMs)
      if (form === 'timeout') {
        return this.#error('request_timeout', { title: 'The form took too long to arrive', message: 'Go back and try again.', detail: `The form body did not arrive within ${this.#config.bodyTimeoutMs} ms.` }, CONNECTION_CLOSE)
      }
      if (typeof form === 'string') return this.#error('invalid_request', { title: 'Something went wrong with the form', message: 'Go back and try again.', detail: form }, CLOSE_AFTER[form] ? CONNECTION_CLOSE : {})
      const badField = form.unstorable(FORM_FIELDS)
      if (badField !== undefined) return this.#error('invalid_request', { title: 'Something went wrong with the form', message: 'Go back and try again.', detail: `The field ${badField}.` })
      if (!csrfValid(request, form.get('csrf_token'))) {
        return this.#error('form_expired', { title: 'This form has expired', message: 'Go back to the application and start signing in again.', detail: 'The csrf_token field was missing or did not match its cookie (the form expired, or was not sent from this page).' })
      }
      const action = form.get('action')
      if (action === 'login') return this.#login(request, client, application, form)
      if (action === 'logout') return seeOther(sameUrl(request), { 'set-cookie': await this.#sessions.end(request) })
      if (action !== 'approve' && action !== 'deny') return this.#error('invalid_request', { title: 'Something went wrong with the form', message: 'Go back and try again.', detail: 'The form had no action (login, approve, deny or logout).' })
      decision = action
    }
    const state = params.isDuplicated('state') ? undefined : params.get('state')
    const back = (code: OAuthErrorCode, description: string) => seeOther(withParams(redirectUri, { error: code, error_description: description, state }))
    const user = await this.#signedInUser(request)
    if (user === undefined) {
      // Cancel on the login page: the person chose not to sign in, which is a denial (the
      // form's CSRF token shows it came from the page the gate served).
      if (decision === 'deny') return back('access_denied', 'The user cancelled the sign-in')
      return this.#askToSignIn(request, application, '', undefined, 200)
    }

    // 3. Everything else goes back to the application, failures of our own included.
    const error = this.#requestError(params)
    if (error !== undefined) {
      // Sent back automatically only in answer to the user's own post on the consent page:
      // a link from anywhere must not turn the gate into a redirector to every registered
      // prefix (RFC 9700 §4.11.2). Otherwise the user gets a page and a link to follow.
      if (decision !== undefined) return back(error.code, error.description)
      const url = withParams(redirectUri, { error: error.code, error_description: error.description, state })
      return this.#error('invalid_request', {
        title: 'Something went wrong with this sign-in request',
        message: `${application.name} sent a request that cannot be accepted. Go back to it and try again.`,
        detail: `${error.code}: ${error.description}`,
        back: { url, applicationName: application.name },
      })
    }
    if (decision === undefined) {
      if (!(await this.#consentRemembered(user, application))) return this.#consent(request, application, user, redirectUri)
      decision = 'approve'
    }
    if (decision === 'deny') return back('access_denied', 'The user denied the request')
    try {
      // The grant before the code: the token endpoint refuses a code whose grant is gone (revoked meanwhile).
      await this.#store.recordGrant(user.id, application.appToken, Date.now())
      const code = await this.#issueCode(application, user, redirectUri, params.get('code_challenge') ?? null)
      return seeOther(withParams(redirectUri, { code, state }))
    } catch (failure) {
      this.#report(failure, { method: request.method, url: request.url, requestId: client.requestId })
      if (failure instanceof StoreError) return back('temporarily_unavailable', 'The authorization server is temporarily unavailable, please retry')
      return back('server_error', 'The authorization server could not complete the request')
    }
  }

  /** 4. Approved: a code bound to the application, the user, the redirect_uri and the PKCE challenge. */
  async #issueCode(application: ApplicationRecord, user: UserRecord, redirectUri: string, codeChallenge: string | null): Promise<string> {
    const code = randomToken(32)
    const now = Date.now()
    await this.#store.insertAuthorizationCode({
      codeHash: sha256(code),
      appToken: application.appToken,
      userId: user.id,
      redirectUri,
      codeChallenge,
      createdAt: now,
      expiresAt: now + this.#config.oauth.codeTtlMs,
      usedAt: null,
    })
    return code
  }

  /**
   * With `oauth.rememberConsent`, a user who authorized this application before (and did
   * not revoke it since) is not asked again. Off by default: see the option.
   */
  async #consentRemembered(user: UserRecord, application: ApplicationRecord): Promise<boolean> {
    if (!this.#config.oauth.rememberConsent) return false
    return (await this.#store.getGrant(user.id, application.appToken)) !== undefined
  }

  /** The user the host says is signed in, or else the one of the gate's own session. */
  async #signedInUser(request: GateRequest): Promise<UserRecord | undefined> {
    const fromHost = (await this.#config.oauth.authenticateUser?.(request)) ?? undefined
    if (fromHost !== undefined) return this.#store.getUser(fromHost)
    return this.#sessions.user(request)
  }

  /** RFC 6749 §4.1.1 and RFC 7636 §4.3 checks, in the order the RFCs list them. */
  #requestError(params: Params): RedirectError | undefined {
    const repeated = params.firstDuplicated(SINGLE)
    if (repeated !== undefined) return { code: 'invalid_request', description: `${repeated} was sent more than once` }
    const responseType = params.get('response_type')
    if (responseType === undefined) return { code: 'invalid_request', description: 'response_type is missing' }
    if (responseType !== 'code') return { code: 'unsupported_response_type', description: 'Only response_type=code is supported' }
    const challenge = params.get('code_challenge')
    const method = params.get('code_challenge_method')
    if (challenge === undefined) {
      if (method !== undefined) return { code: 'invalid_request', description: 'code_challenge_method was sent without code_challenge' }
      if (this.#config.oauth.requirePkce) return { code: 'invalid_request', description: 'PKCE is required: send code_challenge with code_challenge_method=S256' }
      return undefined
    }
    if (method !== 'S256') return { code: 'invalid_request', description: 'Only code_challenge_method=S256 is supported' }
    if (!isS256Challenge(challenge)) return { code: 'invalid_request', description: 'code_challenge must be 43 base64url characters' }
    return undefined
  }

  /** Nobody is signed in: the host's login page if it has one, else the gate's. */
  #askToSignIn(request: GateRequest, application: ApplicationRecord, username: string, error: string | undefined, status: number, headers: Record<string, string> = {}): GateResponse {
    const loginUrl = this.#config.oauth.loginUrl
    if (loginUrl !== null && error === undefined) {
      return seeOther(withParams(loginUrl, { return_to: request.url }))
    }
    const csrf = csrfToken(request)
    const view = { siteName: this.#config.oauth.pages.siteName, application: { name: application.name }, csrfToken: csrf.token, username, error }
    const custom = this.#config.oauth.pages.login
    return htmlResponse(status, custom === undefined ? loginPage(view) : custom(view), {
      ownPage: custom === undefined,
      headers: csrf.setCookie === undefined ? headers : { ...headers, 'set-cookie': csrf.setCookie },
    })
  }

  /** The login form was posted: sign in (as `gate.users.signIn` does: never with an API key) and come back here. */
  async #login(request: GateRequest, client: ClientInfo, application: ApplicationRecord, form: Params): Promise<GateResponse> {
    const username = form.get('username') ?? ''
    const password = form.get('password') ?? ''
    try {
      const user = await this.#auth.signIn(username, password, client)
      return seeOther(sameUrl(request), { 'set-cookie': await this.#sessions.start(user) })
    } catch (error) {
      if (error instanceof ThrottledError) {
        return this.#askToSignIn(request, application, username, error.message, error.status, error.headers ?? {})
      }
      if (error instanceof PlatformError && error.code === 'invalid_credentials') {
        return this.#askToSignIn(request, application, username, error.message, error.status)
      }
      throw error
    }
  }

  async #consent(request: GateRequest, application: ApplicationRecord, user: UserRecord, redirectUri: string): Promise<GateResponse> {
    const csrf = csrfToken(request)
    const redirectOrigin = new URL(redirectUri).origin
    const view = {
      siteName: this.#config.oauth.pages.siteName,
      application: { name: application.name, registeredBy: await this.#registeredBy(application) },
      user: { displayName: user.displayName, username: user.username },
      csrfToken: csrf.token,
      redirectOrigin,
    }
    const custom = this.#config.oauth.pages.consent
    return htmlResponse(200, custom === undefined ? consentPage(view) : custom(view), {
      ownPage: custom === undefined,
      formTargets: [redirectOrigin],
      headers: csrf.setCookie === undefined ? {} : { 'set-cookie': csrf.setCookie },
    })
  }

  /** Who registered the application: the consent page names a user's, so a look-alike name cannot pass for the portal's. */
  async #registeredBy(application: ApplicationRecord): Promise<RegisteredBy> {
    const ownerId = application.ownerId ?? null
    if (ownerId === null) return { kind: 'operator' }
    const owner = await this.#store.getUser(ownerId)
    return owner === undefined ? { kind: 'former-user' } : { kind: 'user', displayName: owner.displayName, username: owner.username }
  }

  /**
   * The application sent a sign-in link the gate cannot use. The person is told in plain
   * words and never redirected; the developer's detail is on the page, folded away.
   */
  #brokenLink(detail: string, applicationName?: string): GateResponse {
    const who = applicationName === undefined ? 'The application that sent you here' : applicationName
    return this.#error('invalid_request', {
      title: 'This sign-in link does not work',
      message: `${who} asked you to sign in with a link this site cannot accept, so you cannot sign in to it from here. Go back to the application and try again; if it happens again, let its makers know.`,
      detail,
    })
  }

  /**
   * The client is suspended: no sign-in, no consent, no grant, no code, and no redirect
   * back. The person is told why they cannot go on; the operator's reason is the detail.
   */
  #suspended(application: ApplicationRecord): GateResponse {
    return this.#error('application_suspended', {
      title: `${application.name} is suspended`,
      message: `The operators of this site have suspended ${application.name}, so you cannot sign in to it or allow it to act for you from here. Nothing was shared with it. Go back to the application.`,
      detail: `application_suspended: ${suspensionMessage(application)}`,
    })
  }

  #error(code: PageErrorCode, view: PageErrorView, headers: Record<string, string> = {}): GateResponse {
    return errorPageResponse(this.#config.oauth.pages, code, view, headers)
  }
}

/**
 * This same URL as a relative reference (just the query), so it works wherever the gate is
 * mounted; bytes outside printable ASCII are percent-encoded, as a Location must be.
 */
function sameUrl(request: GateRequest): string {
  const q = request.url.indexOf('?')
  return encodeUnprintable(q === -1 ? '?' : request.url.slice(q))
}
