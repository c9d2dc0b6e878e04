/**
 * The connected-apps page (`/oauth/grants`): the signed-in user sees the applications
 * they authorized and revokes any of them. It lives on the gate's login session (or the
 * host's, through `oauth.authenticateUser`), with the consent page's rules: https only,
 * forms that post back to the same URL with a double-submit CSRF token, answered with 303,
 * and the same anti-framing, referrer and CSP headers (`htmlResponse`). Its posts count
 * against the OAuth budget of the address, as the sign-in and consent forms' do.
 *
 * @see docs/guides/connected-apps.md
 */
import type { Authenticator } from '../pipeline/authenticate.js'
import { PlatformError, ThrottledError, type PageErrorCode } from '../errors.js'
import type { ReportFailure } from '../events.js'
import type { ConnectedApp, Grants } from '../management/grants.js'
import type { GateRequest, GateResponse } from '../http/request.js'
import { encodeUnprintable, pathOf } from '../http/request.js'
import type { ResolvedConfig } from '../config/options.js'
import { bodyParams, CLOSE_AFTER, CONNECTION_CLOSE, type Params } from '../http/params.js'
import type { PageEndpoint } from '../http/page-endpoint.js'
import type { ClientInfo } from '../http/proxy.js'
import type { GateStore, UserRecord } from '../store/store.js'
import type { OAuthBudget } from '../oauth/budget.js'
import { errorPageResponse, failurePage, type PageErrorView } from '../oauth/error-pages.js'
import { escapeHtml, htmlResponse, layout, seeOther, signInForm, usernameHtml } from '../oauth/pages.js'
import { withParams } from '../oauth/redirect-uri.js'
import { csrfToken, csrfValid, type LoginSessions } from './sign-in-session.js'

const FORM_LIMIT = 16 * 1024
/** Every field of the page's forms (sign-in, revoke, sign-out). */
const FORM_FIELDS = ['csrf_token', 'action', 'username', 'password', 'app_token']

/** Who is looking at the page, and whether the gate's own session says so (it can sign them out). */
interface Viewer {
  readonly user: UserRecord
  readonly ownSession: boolean
}

/** What the connected-apps page is made of. */
export interface ConnectedAppsPageParts {
  readonly config: ResolvedConfig
  /** The guarded store: the users the host's sign-in names. */
  readonly store: GateStore
  /** Signs users in at the page's form, with every protection of `gate.users.signIn`. */
  readonly auth: Authenticator
  /** The gate's own login sessions. */
  readonly sessions: LoginSessions
  /** The connected apps listed and revoked. */
  readonly grants: Grants
  /** The OAuth budget, which each post counts against (per address). */
  readonly budget: OAuthBudget
  /** Where a failure that is not a refusal on purpose is reported (`internalError`). */
  readonly report: ReportFailure
}

/** The connected-apps page: a list with a Revoke form per application, and its own sign-in form. */
export class ConnectedAppsPage implements PageEndpoint {
  readonly #config: ResolvedConfig
  readonly #store: GateStore
  readonly #auth: Authenticator
  readonly #sessions: LoginSessions
  readonly #grants: Grants
  readonly #budget: OAuthBudget
  readonly #report: ReportFailure

  constructor(parts: ConnectedAppsPageParts) {
    this.#config = parts.config
    this.#store = parts.store
    this.#auth = parts.auth
    this.#sessions = parts.sessions
    this.#grants = parts.grants
    this.#budget = parts.budget
    this.#report = parts.report
  }

  /** Answers a GET (the page) or a POST (sign in, sign out, revoke). Never rejects: a failure is an error page. */
  async handle(request: GateRequest, client: ClientInfo): Promise<GateResponse> {
    try {
      if (request.method === 'POST') await this.#budget.spend(undefined, client)
      return await this.#answer(request, client)
    } catch (error) {
      return this.failure(error, request, client.requestId)
    }
  }

  failure(error: unknown, request: GateRequest, requestId: string | undefined): GateResponse {
    this.#report(error, { method: request.method, url: request.url, requestId })
    return failurePage(this.#config.oauth.pages, error)
  }

  async #answer(request: GateRequest, client: ClientInfo): Promise<GateResponse> {
    if (request.method !== 'GET' && request.method !== 'POST') {
      return this.#error('method_not_allowed', { title: 'Method not allowed', message: 'Open this page from your account settings.' }, { allow: 'GET, POST' })
    }
    if (!client.secure) {
      return this.#error('https_required', { title: 'A secure connection is required', message: 'This page is served over https only. Open this address with https://.' })
    }
    if (request.method === 'POST') return this.#post(request, client)
    const viewer = await this.#viewer(request)
    if (viewer === undefined) {
      const loginUrl = this.#config.oauth.loginUrl
      if (loginUrl !== null) return seeOther(withParams(loginUrl, { return_to: request.url }))
      return this.#signInPage(request, '', undefined, 200)
    }
    return this.#listPage(request, viewer, await this.#grants.list(viewer.user.id))
  }

  async #post(request: GateRequest, client: ClientInfo): Promise<GateResponse> {
    const form = await bodyParams(request, FORM_LIMIT, this.#config.bodyTimeoutMs)
    if (form === 'timeout') return this.#error('request_timeout', { title: 'The form took too long to arrive', message: 'Go back and try again.' }, CONNECTION_CLOSE)
    if (typeof form === 'string') return this.#error('invalid_request', { title: 'Invalid form', message: 'The form could not be read. Go back and try again.' }, CLOSE_AFTER[form] ? CONNECTION_CLOSE : {})
    const badField = form.unstorable(FORM_FIELDS)
    if (badField !== undefined) return this.#error('invalid_request', { title: 'Invalid form', message: `The field ${badField}. Go back and try again.` })
    if (!csrfValid(request, form.get('csrf_token'))) {
      return this.#error('form_expired', { title: 'This form has expired', message: 'The form expired or was not sent from this page. Reload the page and try again.' })
    }
    const action = form.get('action')
    if (action === 'login') return this.#login(request, client, form)
    if (action === 'logout') return seeOther(here(request), { 'set-cookie': await this.#sessions.end(request) })
    if (action !== 'revoke') return this.#error('invalid_request', { title: 'Invalid form', message: 'The form did not say what to do.' })
    const viewer = await this.#viewer(request)
    const appToken = form.get('app_token')
    // Signed out meanwhile: back to the page, which asks to sign in; nothing is revoked.
    if (viewer !== undefined && appToken !== undefined) await this.#grants.revoke(viewer.user.id, appToken)
    return seeOther(here(request))
  }

  /** The host's signed-in user first, then the gate's own login session. */
  async #viewer(request: GateRequest): Promise<Viewer | undefined> {
    const fromHost = (await this.#config.oauth.authenticateUser?.(request)) ?? undefined
    if (fromHost !== undefined) {
      const user = await this.#store.getUser(fromHost)
      return user === undefined ? undefined : { user, ownSession: false }
    }
    const user = await this.#sessions.user(request)
    return user === undefined ? undefined : { user, ownSession: true }
  }

  /** The sign-in form was posted: checked as `gate.users.signIn` does (never with an API key), then back to the page. */
  async #login(request: GateRequest, client: ClientInfo, form: Params): Promise<GateResponse> {
    const username = form.get('username') ?? ''
    try {
      const user = await this.#auth.signIn(username, form.get('password') ?? '', client)
      return seeOther(here(request), { 'set-cookie': await this.#sessions.start(user) })
    } catch (error) {
      if (error instanceof ThrottledError) return this.#signInPage(request, username, error.message, error.status, error.headers ?? {})
      if (error instanceof PlatformError && error.code === 'invalid_credentials') return this.#signInPage(request, username, error.message, error.status)
      throw error
    }
  }

  #signInPage(request: GateRequest, username: string, error: string | undefined, status: number, headers: Record<string, string> = {}): GateResponse {
    const csrf = csrfToken(request)
    const html = layout(
      'Sign in',
      `<h1>Sign in</h1>
<p>Sign in to see the applications connected to your account.</p>
${signInForm(csrf.token, username, error, '<button type="submit" class="primary" name="action" value="login">Sign in</button>')}`,
      this.#config.oauth.pages.siteName,
    )
    return htmlResponse(status, html, { ownPage: true, headers: withCsrfCookie(headers, csrf.setCookie) })
  }

  #listPage(request: GateRequest, viewer: Viewer, apps: readonly ConnectedApp[]): GateResponse {
    const csrf = csrfToken(request)
    const token = `<input type="hidden" name="csrf_token" value="${escapeHtml(csrf.token)}">`
    const signOut = viewer.ownSession ? ` <button type="submit" class="link" name="action" value="logout">Sign out</button>` : ''
    const list =
      apps.length === 0
        ? '<p>No application has access to your account.</p>'
        : apps.map((app) => appSection(app, token)).join('\n')
    const html = layout(
      'Connected apps',
      `<h1>Connected apps</h1>
<form method="post">${token}<p>Signed in as <strong>${escapeHtml(viewer.user.displayName)}</strong> (${usernameHtml(viewer.user.username)}).${signOut}</p></form>
<p>These applications can read and change data on your account, as you can. Revoking one ends its access at once; it must ask you again to get it back.</p>
${list}`,
      this.#config.oauth.pages.siteName,
    )
    return htmlResponse(200, html, { ownPage: true, headers: withCsrfCookie({}, csrf.setCookie) })
  }

  #error(code: PageErrorCode, view: PageErrorView, headers: Record<string, string> = {}): GateResponse {
    return errorPageResponse(this.#config.oauth.pages, code, view, headers)
  }
}

function appSection(app: ConnectedApp, csrfField: string): string {
  const name = app.name ?? 'A deleted application'
  const tokens = `${app.liveTokens} active ${app.liveTokens === 1 ? 'token' : 'tokens'}`
  return `<section aria-label="${escapeHtml(name)}">
<p><strong>${escapeHtml(name)}</strong><br><span class="small">Authorized ${when(app.firstAuthorizedAt)}; last used ${when(app.lastUsedAt)}; ${tokens}.</span></p>
<form method="post">${csrfField}<input type="hidden" name="app_token" value="${escapeHtml(app.appToken)}">
<div class="actions"><button type="submit" class="secondary" name="action" value="revoke" aria-label="Revoke access for ${escapeHtml(name)}">Revoke access</button></div>
</form>
</section>`
}

/** A time as people read it, in UTC (the page has no script to learn the reader's zone). */
function when(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`
}

function withCsrfCookie(headers: Record<string, string>, setCookie: string | undefined): Record<string, string> {
  return setCookie === undefined ? headers : { ...headers, 'set-cookie': setCookie }
}

/** This page as a relative reference (its last path segment), so it works wherever the gate is mounted. */
function here(request: GateRequest): string {
  const path = pathOf(request.url)
  const last = path.slice(path.lastIndexOf('/') + 1)
  return last === '' ? './' : encodeUnprintable(last)
}
