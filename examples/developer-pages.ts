/**
 * The portal's own pages for its users: a sign-in, and the developer settings page at the
 * platform's path (`/profile/edit/developer_settings`) where a signed-in user registers an
 * application (its app token and secret token are shown once), sees each of their
 * applications' usage over the last 24 hours and 30 days as charts (with what a shadow
 * limit would have throttled) and which of their limits each is near, renames them, gives
 * them a new secret token and deletes them, manages API keys over the gate's
 * `/api/api_keys` endpoints, and finds the connected-apps page.
 *
 * The portal keeps its own browser session and tells the gate who is signed in through
 * `oauth.authenticateUser`, as a host application does: the gate's authorize endpoint and
 * its API key and connected-apps endpoints then know the user without a second sign-in,
 * and `oauth.loginUrl` sends a signed-out user from those pages to `/login` here and back.
 * Passwords are checked by the gate itself, with `gate.users.signIn`: its failed-login
 * budgets and hash queue apply unchanged, and an API key id and secret typed into the form
 * sign nobody in (a leaked key must not become a session that can mint keys and approve
 * applications).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import express, { type Request, type Response, type Router } from 'express'
import { GateError, type Application, type Gate, type GateRequest, type NearLimit } from 'open-data-gate'
import { usageChart } from './usage-chart.js'

const SESSION_COOKIE = '__Host-portal-session'
const SESSION_TTL_MS = 3_600_000

interface PortalSession {
  readonly userId: string
  readonly displayName: string
  /** Shown beside the display name, which is free text. */
  readonly username: string
  /** The token the portal's own forms carry (synchronizer pattern). */
  readonly csrf: string
  readonly expiresAt: number
}

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

const HOUR = 3_600_000
const DAY = 86_400_000
/** A time as the pages write it: the server does not know the reader's time zone. */
const utc = (t: number) => `${new Date(t).toISOString().slice(0, 16).replace('T', ' ')} UTC`
/** A rolling window in words: "hour", "10 minutes". */
function per(windowMs: number): string {
  for (const [ms, unit] of [[DAY, 'day'], [HOUR, 'hour'], [60_000, 'minute'], [1000, 'second']] as const) {
    if (windowMs % ms === 0) return windowMs === ms ? unit : `${windowMs / ms} ${unit}s`
  }
  return `${windowMs} ms`
}

/**
 * "Near its limit": each limit the application has used 80% (or the gate's thresholds) of,
 * read now from the gate (`gate.applications.nearLimit`), with its window and when the gate
 * reported it. Nothing when it is near none, or when that cannot be told right now.
 */
function nearLimitNotice(near: readonly NearLimit[] | null): string {
  if (near === null || near.length === 0) return ''
  const items = near.map((limit) => {
    const used = limit.threshold === 1 ? '<strong>used up</strong>' : `${Math.round(limit.threshold * 100)}% used`
    const window =
      limit.period === null
        ? `${limit.limit} requests per ${per(limit.windowMs)}, rolling: requests come back as time passes`
        : `${limit.limit} requests per ${per(limit.windowMs)}, whole again at <time datetime="${new Date(limit.period.end).toISOString()}">${utc(limit.period.end)}</time>`
    const since = limit.since === null ? '' : `, since <time datetime="${new Date(limit.since).toISOString()}">${utc(limit.since)}</time>`
    const shadow = limit.shadow ? ' A shadow limit: it does not refuse requests yet, but would have.' : ' Past it, requests are refused with 429 until the budget comes back.'
    return `<li><code>${escape(limit.name)}</code>: ${used} (${limit.remaining} left of ${window})${since}.${shadow}</li>`
  })
  return `<div class="near-limit"><p><strong>Near its limit</strong></p><ul>${items.join('')}</ul></div>`
}

/** App tokens as the gate makes and imports them; anything else in the path is no application. */
const APP_TOKEN = /^[\w-]{1,128}$/

/** The pages' security headers: no inline script, no framing, nothing cached. */
const HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
  'referrer-policy': 'same-origin',
}

function page(res: Response, status: number, title: string, body: string, data: Record<string, string> = {}): void {
  const attributes = Object.entries(data)
    .map(([k, v]) => ` data-${k}="${escape(v)}"`)
    .join('')
  res
    .status(status)
    .set(HEADERS)
    .type('html')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escape(title)}</title><link rel="stylesheet" href="/assets/portal.css"></head><body${attributes}><main><h1>${escape(title)}</h1>${body}</main></body></html>`,
    )
}

/** The portal's sign-ins, kept in this process (a demo; a real portal has its own sessions). */
export class PortalSessions {
  readonly #sessions = new Map<string, PortalSession>()

  /** The session of a request (Express or the gate's plain request), if live. */
  session(headers: Readonly<Record<string, string | string[] | undefined>>): PortalSession | undefined {
    const raw = headers.cookie
    const cookie = (Array.isArray(raw) ? raw.join('; ') : (raw ?? '')).split(/;\s*/).find((c) => c.startsWith(`${SESSION_COOKIE}=`))
    const id = cookie?.slice(SESSION_COOKIE.length + 1)
    if (id === undefined) return undefined
    const session = this.#sessions.get(id)
    if (session === undefined || session.expiresAt <= Date.now()) return undefined
    return session
  }

  /** For the gate's `oauth.authenticateUser`: the signed-in user's id, or nothing. */
  readonly userOf = (request: GateRequest): string | undefined => this.session(request.headers)?.userId

  start(res: Response, userId: string, displayName: string, username: string): void {
    const id = randomBytes(32).toString('base64url')
    this.#sessions.set(id, { userId, displayName, username, csrf: randomBytes(32).toString('base64url'), expiresAt: Date.now() + SESSION_TTL_MS })
    res.cookie(SESSION_COOKIE, id, { httpOnly: true, secure: true, sameSite: 'lax', path: '/', maxAge: SESSION_TTL_MS })
  }

  end(req: Request, res: Response): void {
    const id = req.headers.cookie?.split(/;\s*/).find((c) => c.startsWith(`${SESSION_COOKIE}=`))
    if (id !== undefined) this.#sessions.delete(id.slice(SESSION_COOKIE.length + 1))
    res.clearCookie(SESSION_COOKIE, { httpOnly: true, secure: true, sameSite: 'lax', path: '/' })
  }
}

/** Where to go after signing in: a path on this portal only, never another site. */
function returnTo(value: unknown): string {
  return typeof value === 'string' && value.startsWith('/') && !value.startsWith('//') && !value.startsWith('/\\') ? value : '/profile/edit/developer_settings'
}

/** A text field of a posted form. */
function field(req: Request, name: string): string | undefined {
  const value = (req.body as Record<string, unknown> | undefined)?.[name]
  return typeof value === 'string' ? value : undefined
}

function sameCsrf(session: PortalSession, submitted: unknown): boolean {
  if (typeof submitted !== 'string') return false
  const a = Buffer.from(session.csrf)
  const b = Buffer.from(submitted)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** What the settings page shows beside the list: a form's outcome, or the register form's input back. */
interface SettingsShown {
  registered?: string
  problem?: string
  name?: string
  prefix?: string
  notice?: string
}

export interface DeveloperPagesOptions {
  gate: Gate
  sessions: PortalSessions
  /** The portal's own application: its pages send this token with their API calls. */
  portalAppToken: string
}

/** The sign-in and developer settings pages, and their stylesheet and script. */
export function developerPages({ gate, sessions, portalAppToken }: DeveloperPagesOptions): Router {
  const router = express.Router()
  const form = express.urlencoded({ extended: false, limit: '8kb' })

  router.get('/assets/portal.css', (_req, res) => {
    res.type('css').set('cache-control', 'no-cache').send(CSS)
  })
  router.get('/assets/developer-settings.js', (_req, res) => {
    res.type('js').set('cache-control', 'no-cache').send(SCRIPT)
  })

  const loginForm = (res: Response, status: number, to: string, problem = '') =>
    page(
      res,
      status,
      'Sign in to the example portal',
      `${problem === '' ? '' : `<p class="problem" role="alert">${escape(problem)}</p>`}<form method="post" action="/login"><input type="hidden" name="return_to" value="${escape(to)}"><label>Username <input name="username" autocomplete="username" required></label><label>Password <input name="password" type="password" autocomplete="current-password" required></label><button>Sign in</button></form>`,
    )

  router.get('/login', (req, res) => {
    if (!req.secure) return page(res, 403, 'Sign in over https', '<p>Signing in needs https: open the https address the portal printed.</p>')
    loginForm(res, 200, returnTo(req.query.return_to))
  })

  router.post('/login', form, async (req, res) => {
    const to = returnTo(field(req, 'return_to'))
    // Another site must not sign a visitor in to an account of its choosing.
    if (!req.secure || (req.headers['sec-fetch-site'] !== undefined && req.headers['sec-fetch-site'] !== 'same-origin')) {
      return page(res, 403, 'Refused', '<p>Sign in from this portal&apos;s own page, over https.</p>')
    }
    const username = field(req, 'username') ?? ''
    const password = field(req, 'password') ?? ''
    if (username === '' || password === '') return loginForm(res, 400, to, 'Give a username and a password.')
    // The gate checks the password, with its own failed-login budgets; it never takes an API key.
    // (No proxy in front of the demo: the socket's address is the client's.)
    let user: { id: string; displayName: string; username: string }
    try {
      user = await gate.users.signIn({ username, password, clientIp: req.socket.remoteAddress ?? '' })
    } catch (error) {
      if (!(error instanceof GateError)) throw error
      if (error.headers?.['retry-after'] !== undefined) res.set('retry-after', error.headers['retry-after'])
      // A wrong password, an API key, a spent budget: the gate's message is for the person at the form.
      const problem = error.status < 500 ? error.message : 'Signing in is not possible right now; try again in a moment.'
      return loginForm(res, error.status, to, problem)
    }
    sessions.start(res, user.id, user.displayName, user.username)
    res.redirect(303, to)
  })

  router.post('/logout', form, (req, res) => {
    const session = sessions.session(req.headers)
    if (session !== undefined && sameCsrf(session, field(req, 'csrf'))) sessions.end(req, res)
    res.redirect(303, '/login')
  })

  /** The settings page; `registered` is the new credentials' box, `notice` what a form on the list did. */
  const settings = async (res: Response, session: PortalSession, status: number, shown: SettingsShown = {}) => {
    const { registered = '', problem = '', name = '', prefix = '', notice = '' } = shown
    const applications = await gate.applications.list({ ownerId: session.userId })
    const cards = await Promise.all(applications.map((app) => applicationCard(app, session)))
    page(
      res,
      status,
      'Developer settings',
      `<div>Signed in as <strong>${escape(session.displayName)}</strong> (<bdi>${escape(session.username)}</bdi>). <form class="inline" method="post" action="/logout"><input type="hidden" name="csrf" value="${escape(session.csrf)}"><button>Sign out</button></form></div>
<section><h2>Register an application</h2>
<p>An application gets an <em>app token</em> (send it as <code>X-App-Token</code>, and as OAuth <code>client_id</code>) and a <em>secret token</em> (OAuth <code>client_secret</code>).</p>
${registered}${problem === '' ? '' : `<p class="problem" role="alert">${escape(problem)}</p>`}
<form method="post" action="/profile/edit/developer_settings"><input type="hidden" name="csrf" value="${escape(session.csrf)}">
<label>Application name <input name="name" required maxlength="200" value="${escape(name)}"></label>
<label>Callback Prefix <input name="callbackPrefix" type="url" placeholder="https://your-app.example/oauth/" value="${escape(prefix)}"></label>
<button>Register</button></form></section>
<section id="applications"><h2>Your applications</h2>
${notice}<p>Requests are counted as they are answered and appear here within the gate's flush interval (10 seconds by default). Times are UTC.</p>
${cards.length === 0 ? '<p>You have not registered an application yet.</p>' : cards.join('')}</section>
<section id="api-keys"><h2>API keys</h2>
<p>A key id and secret sign in as you with HTTP Basic, in place of your password. One key per script lets you revoke one alone.</p>
<p id="new-key" class="secret" hidden></p>
<form id="create-key"><label>Key name <input name="keyName" required maxlength="200"></label><button>Create API key</button></form>
<p id="key-problem" class="problem" role="alert" hidden></p>
<table id="keys"><thead><tr><th>Name</th><th>Key id</th><th>Created</th><th>Last used</th><th></th></tr></thead><tbody></tbody></table></section>
<section><h2>Connected apps</h2><p>The applications you allowed to act for you, and revoking them: <a id="connected-apps" href="/oauth/grants">connected apps</a>.</p></section>
<script src="/assets/developer-settings.js" defer></script>`,
      { 'app-token': portalAppToken },
    )
  }

  /** One application: its details, its usage charts and its forms. */
  const applicationCard = async (app: Application, session: PortalSession) => {
    const now = Date.now()
    // 24 buckets ending with the current hour, and 30 ending with today. A store that cannot
    // answer costs the charts, not the page: the forms still work.
    const usage = await Promise.all([
      gate.usage.query({ appToken: app.appToken, from: now - (now % HOUR) - 23 * HOUR, to: now, granularity: 'hour' }),
      gate.usage.query({ appToken: app.appToken, from: now - (now % DAY) - 29 * DAY, to: now, granularity: 'day' }),
    ]).catch(() => undefined)
    // Read now, for this application only: which of its limits it is near.
    const near = await gate.applications.nearLimit(app.appToken).catch(() => null)
    const unavailable = '<p class="problem">Usage cannot be read right now; reload the page in a moment.</p>'
    const token = escape(app.appToken)
    const name = escape(app.name)
    const action = `/profile/edit/developer_settings/applications/${token}`
    const csrf = `<input type="hidden" name="csrf" value="${escape(session.csrf)}">`
    const grace =
      app.previousSecretExpiresAt !== null && app.previousSecretExpiresAt > now
        ? `<dt>Previous secret token</dt><dd>works until <time datetime="${new Date(app.previousSecretExpiresAt).toISOString()}">${utc(app.previousSecretExpiresAt)}</time></dd>`
        : ''
    // The plan the operators put it on, which only they change: the owner sees it, with no form.
    const plan = app.plan === null ? 'the default plan' : `<code>${escape(app.plan)}</code>`
    // Suspended by the operators: the owner sees why and since when, and has no form to lift it.
    const suspended =
      app.suspended === null
        ? ''
        : `<p class="problem suspended" role="status"><strong>Suspended</strong> by the operators of this portal since <time datetime="${new Date(app.suspended.since).toISOString()}">${utc(app.suspended.since)}</time>: ${escape(app.suspended.reason)}. Its requests, its users' access tokens and new authorizations are refused until they lift it; nothing of it is deleted.</p>`
    return `<article class="application" id="app-${token}"><h3>${name}</h3>${suspended}${nearLimitNotice(near)}
<dl><dt>App token</dt><dd><code>${token}</code></dd><dt>Plan</dt><dd>${plan}</dd><dt>Created</dt><dd><time datetime="${new Date(app.createdAt).toISOString()}">${utc(app.createdAt)}</time></dd>${
      app.callbackPrefix === null ? '' : `<dt>Callback Prefix</dt><dd><code>${escape(app.callbackPrefix)}</code></dd>`
    }${grace}</dl>
<h4>Last 24 hours, by hour</h4>${usage === undefined ? unavailable : usageChart(usage[0].buckets, { granularity: 'hour', title: `${app.name}: requests in the last 24 hours`, id: `hours-${app.appToken}` })}
<h4>Last 30 days, by day</h4>${usage === undefined ? unavailable : usageChart(usage[1].buckets, { granularity: 'day', title: `${app.name}: requests in the last 30 days`, id: `days-${app.appToken}` })}
<form method="post" action="${action}/name">${csrf}<label>New name <input name="name" required maxlength="200" value="${name}"></label><button>Rename</button></form>
<form method="post" action="${action}/secret">${csrf}<fieldset><legend>A new secret token replaces this one. The current one:</legend>
<label><input type="radio" name="previous" value="grace" checked> keeps working for a short grace (its end is shown next), so your server can be updated first</label>
<label><input type="radio" name="previous" value="retire"> stops working now: it leaked</label></fieldset><button>New secret token</button></form>
<p><a class="danger" href="${action}/delete">Delete ${name}</a></p></article>`
  }

  /** The signed-in user's application named in the path, or a 404 page (another user's is no different from none). */
  const ownApplication = async (req: Request, res: Response, session: PortalSession): Promise<Application | undefined> => {
    const appToken = typeof req.params.appToken === 'string' ? req.params.appToken : ''
    const app = APP_TOKEN.test(appToken) ? await gate.applications.find(appToken) : undefined
    if (app !== undefined && app.ownerId === session.userId) return app
    page(res, 404, 'No such application', '<p>You have no application with this app token. <a href="/profile/edit/developer_settings">Back to developer settings</a></p>')
    return undefined
  }

  /** A signed-in user's form post with the page's CSRF token, or an answer already sent. */
  const formSession = (req: Request, res: Response): PortalSession | undefined => {
    const session = sessions.session(req.headers)
    if (session === undefined) {
      res.redirect(303, '/login')
      return undefined
    }
    if (!sameCsrf(session, field(req, 'csrf'))) {
      page(res, 403, 'Refused', '<p>The form is out of date; reload the page and try again.</p>')
      return undefined
    }
    return session
  }

  router.get('/profile/edit/developer_settings', async (req, res) => {
    const session = sessions.session(req.headers)
    if (session === undefined) return res.redirect(303, `/login?return_to=${encodeURIComponent(req.originalUrl)}`)
    await settings(res, session, 200)
  })

  router.post('/profile/edit/developer_settings', form, async (req, res) => {
    const session = sessions.session(req.headers)
    if (session === undefined) return res.redirect(303, '/login')
    if (!sameCsrf(session, field(req, 'csrf'))) return page(res, 403, 'Refused', '<p>The form is out of date; reload the page and try again.</p>')
    const name = field(req, 'name') ?? ''
    const prefix = (field(req, 'callbackPrefix') ?? '').trim()
    try {
      // registerOwn: the application is the user's (listed and managed on /api/applications), within their cap and registration budget.
      const app = await gate.applications.registerOwn({ ownerId: session.userId, name, callbackPrefix: prefix === '' ? null : prefix })
      const shown = `<div class="secret" id="registered" role="status"><p>Registered <strong>${escape(app.application.name)}</strong>. Copy the secret token now: it is shown this once, and only its hash is kept.</p>
<dl><dt>App token</dt><dd><code id="app-token">${escape(app.appToken)}</code></dd><dt>Secret token</dt><dd><code id="secret-token">${escape(app.secretToken)}</code></dd></dl></div>`
      await settings(res, session, 201, { registered: shown })
    } catch (error) {
      if (error instanceof GateError && (error.code === 'application_limit_reached' || error.code === 'too_many_requests')) {
        if (error.headers?.['retry-after'] !== undefined) res.setHeader('retry-after', error.headers['retry-after'])
        return await settings(res, session, error.status, { problem: error.message, name, prefix })
      }
      if (!(error instanceof TypeError)) throw error
      await settings(res, session, 400, { problem: error.message.replace(/^open-data-gate: /, ''), name, prefix })
    }
  })

  router.post('/profile/edit/developer_settings/applications/:appToken/name', form, async (req, res) => {
    const session = formSession(req, res)
    const app = session === undefined ? undefined : await ownApplication(req, res, session)
    if (session === undefined || app === undefined) return
    try {
      const renamed = await gate.applications.update(app.appToken, { name: field(req, 'name') ?? '' })
      await settings(res, session, 200, { notice: `<p class="notice" role="status">Renamed <strong>${escape(app.name)}</strong> to <strong>${escape(renamed.name)}</strong>.</p>` })
    } catch (error) {
      if (!(error instanceof TypeError)) throw error
      await settings(res, session, 400, { notice: `<p class="problem" role="alert">${escape(error.message.replace(/^open-data-gate: /, ''))}</p>` })
    }
  })

  router.post('/profile/edit/developer_settings/applications/:appToken/secret', form, async (req, res) => {
    const session = formSession(req, res)
    const app = session === undefined ? undefined : await ownApplication(req, res, session)
    if (session === undefined || app === undefined) return
    // After a leak the old secret must stop now; otherwise it gets the gate's grace (applications.secretGraceMs).
    const secretToken = await gate.applications.rotateSecret(app.appToken, field(req, 'previous') === 'retire' ? { graceMs: 0 } : {})
    const expiresAt = (await gate.applications.find(app.appToken))?.previousSecretExpiresAt ?? null
    const until =
      expiresAt === null || expiresAt <= Date.now()
        ? '<p>The previous secret token no longer works.</p>'
        : `<p>The previous secret token keeps working until <time datetime="${new Date(expiresAt).toISOString()}">${utc(expiresAt)}</time>: update your server with the new one before then.</p>`
    await settings(res, session, 200, {
      notice: `<div class="secret" id="rotated" role="status"><p>A new secret token for <strong>${escape(app.name)}</strong>. Copy it now: it is shown this once, and only its hash is kept.</p>
<dl><dt>Secret token</dt><dd><code id="new-secret-token">${escape(secretToken)}</code></dd></dl>${until}</div>`,
    })
  })

  // Deleting asks first, on a page of its own: a GET shows what will happen, the POST does it.
  router.get('/profile/edit/developer_settings/applications/:appToken/delete', async (req, res) => {
    const session = sessions.session(req.headers)
    if (session === undefined) return res.redirect(303, `/login?return_to=${encodeURIComponent(req.originalUrl)}`)
    const app = await ownApplication(req, res, session)
    if (app === undefined) return
    page(
      res,
      200,
      `Delete ${app.name}?`,
      `<p>Its app token <code>${escape(app.appToken)}</code> will be refused from then on, and the access tokens users gave it stop working. This cannot be undone.</p>
<form method="post" action="/profile/edit/developer_settings/applications/${escape(app.appToken)}/delete"><input type="hidden" name="csrf" value="${escape(session.csrf)}"><button class="danger">Delete ${escape(app.name)} for good</button></form>
<p><a href="/profile/edit/developer_settings#app-${escape(app.appToken)}">Keep it</a></p>`,
    )
  })

  router.post('/profile/edit/developer_settings/applications/:appToken/delete', form, async (req, res) => {
    const session = formSession(req, res)
    const app = session === undefined ? undefined : await ownApplication(req, res, session)
    if (session === undefined || app === undefined) return
    await gate.applications.delete(app.appToken)
    await settings(res, session, 200, { notice: `<p class="notice" role="status">Deleted <strong>${escape(app.name)}</strong>.</p>` })
  })
  return router
}

const CSS = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1b1f24}
main{max-width:46rem;margin:2rem auto;padding:0 1rem}
section{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:1rem 1.25rem;margin:1rem 0}
label{display:block;margin:.5rem 0}input{display:block;width:100%;max-width:30rem;padding:.4rem;font:inherit}
button{font:inherit;padding:.35rem .9rem;margin-top:.5rem}form.inline{display:inline}
.problem{color:#a40e26;font-weight:600}.secret{background:#fff8c5;border:1px solid #d4a72c;padding:.5rem 1rem;border-radius:6px}
code{word-break:break-all}article.application{border-top:1px solid #d0d7de;padding-top:.5rem;margin-top:1rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dd{margin:0}figure{margin:.5rem 0}figure svg{display:block;max-width:100%;height:auto}
.near-limit{background:#fff8c5;border:1px solid #d4a72c;padding:.25rem 1rem;border-radius:6px}.near-limit ul{margin:.25rem 0}
details{font-size:.9rem}a.danger,button.danger{color:#a40e26}.notice{background:#dafbe1;border:1px solid #4ac26b;padding:.5rem 1rem;border-radius:6px}
table{border-collapse:collapse;width:100%;margin-top:1rem}th,td{text-align:left;padding:.3rem;border-bottom:1px solid #d0d7de;font-size:.9rem}
@media (prefers-color-scheme:dark){body{background:#0d1117;color:#e6edf3}section{background:#161b22;border-color:#30363d}.secret{background:#3b2e00;border-color:#9e6a03}.problem{color:#ff7b72}.near-limit{background:#3b2e00;border-color:#9e6a03}.notice{background:#0f2e1a;border-color:#2ea043}a.danger,button.danger{color:#ff7b72}article.application{border-color:#30363d}}`

/** The API key section: the platform's endpoints, called from the page with the portal session. */
const SCRIPT = `'use strict'
const appToken = document.body.dataset.appToken
let csrf = null
async function call(method, path, body) {
  const headers = { accept: 'application/json', 'x-app-token': appToken }
  if (csrf !== null) headers['x-csrf-token'] = csrf
  if (body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) })
  csrf = response.headers.get('x-csrf-token') ?? csrf
  const data = await response.json().catch(() => null)
  if (!response.ok) throw new Error((data && data.message) || 'HTTP ' + response.status)
  return data
}
function cell(row, text) { const td = document.createElement('td'); td.textContent = text; row.append(td); return td }
const when = (t) => (t ? new Date(t).toLocaleString() : '-')
function problem(error) { const p = document.getElementById('key-problem'); p.hidden = error === null; p.textContent = error === null ? '' : String(error.message || error) }
async function refresh() {
  const keys = await call('GET', '/api/api_keys?limit=100&sortBy=created_at&sortOrder=desc')
  const body = document.querySelector('#keys tbody')
  body.replaceChildren()
  for (const key of keys) {
    const row = document.createElement('tr')
    row.dataset.keyId = key.keyId
    cell(row, key.keyName); cell(row, key.keyId); cell(row, when(key.createdAtTimestamp)); cell(row, when(key.lastUsedAtTimestamp))
    const button = document.createElement('button')
    button.textContent = 'Delete'
    button.addEventListener('click', async () => {
      try { await call('DELETE', '/api/api_keys/' + encodeURIComponent(key.keyId)); problem(null); await refresh() } catch (error) { problem(error) }
    })
    cell(row, '').append(button)
    body.append(row)
  }
}
document.getElementById('create-key').addEventListener('submit', async (event) => {
  event.preventDefault()
  const form = event.target
  try {
    const key = await call('POST', '/api/api_keys', { keyName: form.keyName.value })
    const shown = document.getElementById('new-key')
    shown.hidden = false
    shown.textContent = ''
    shown.append('Created "' + key.keyName + '". Copy the secret now, it is shown this once. Key id: ')
    const id = document.createElement('code'); id.id = 'new-key-id'; id.textContent = key.keyId
    const secret = document.createElement('code'); secret.id = 'new-key-secret'; secret.textContent = key.keySecret
    shown.append(id, ' Key secret: ', secret)
    form.reset()
    problem(null)
    await refresh()
  } catch (error) { problem(error) }
})
refresh().catch(problem)
`
