/**
 * The gate's own login, consent and error pages: small, accessible, and loading nothing
 * from anywhere. The one stylesheet is inline and pinned in the Content-Security-Policy
 * by its hash; there is no script at all.
 *
 * A host can render its own pages instead (`oauth.pages`); the gate then still sends the
 * framing and referrer headers and handles the form posts. The form contract is in
 * `LoginView` and `ConsentView` (src/config/pages-option.ts).
 *
 * @see SECURITY.md "Checklist", "Consent form"
 */
import { createHash } from 'node:crypto'
import type { GateResponse } from '../http/request.js'

import type { ConsentView, ErrorView, LoginView, RegisteredBy } from '../config/pages-option.js'

export type { ConsentView, ErrorView, LoginView, OAuthPages, RegisteredBy } from '../config/pages-option.js'

// Every colour pair meets WCAG AA (4.5:1) in both schemes; the browser test measures them.
const CSS = `
:root { color-scheme: light dark; --bg: #ffffff; --text: #1a1a1a; --muted: #5e5e5e; --accent: #1a5fb4; --on-accent: #ffffff; --danger: #a51d2d; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #121212; --text: #e8e8e8; --muted: #b0b0b0; --accent: #78aeed; --on-accent: #121212; --danger: #ff938a; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text); font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; display: grid; place-items: center; min-height: 100vh; padding: 1rem; }
main { width: 100%; max-width: 26rem; border: 1px solid #8886; border-radius: 12px; padding: 1.75rem; }
h1 { font-size: 1.35rem; margin: 0 0 1rem; }
.site { font-size: 0.875rem; font-weight: 600; color: var(--muted); margin: 0 0 0.5rem; }
p { margin: 0 0 1rem; }
label { display: block; font-weight: 600; margin: 0.75rem 0 0.25rem; }
input[type=text], input[type=password] { width: 100%; padding: 0.6rem; font: inherit; color: inherit; background: var(--bg); border: 1px solid #888; border-radius: 6px; }
.actions { display: flex; gap: 0.75rem; margin-top: 1.5rem; }
button { flex: 1; padding: 0.65rem 1rem; font: inherit; font-weight: 600; border-radius: 6px; border: 1px solid var(--accent); cursor: pointer; }
button.primary { background: var(--accent); color: var(--on-accent); }
button.secondary { background: transparent; color: inherit; border-color: #888; }
a.button { flex: 1; display: block; text-align: center; padding: 0.65rem 1rem; border-radius: 6px; border: 1px solid #888; color: inherit; font-weight: 600; text-decoration: none; }
button.link { flex: none; padding: 0; border: 0; background: none; color: var(--accent); font-weight: 400; text-decoration: underline; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.error { color: var(--danger); font-weight: 600; }
.small { font-size: 0.875rem; color: var(--muted); }
details { margin-top: 1.5rem; font-size: 0.875rem; color: var(--muted); }
summary { cursor: pointer; }
details p { margin: 0.5rem 0 0; overflow-wrap: anywhere; }
`
const STYLE_SOURCE = `'sha256-${createHash('sha256').update(CSS).digest('base64')}'`

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
/**
 * A username as a page shows it beside the display name (which is free text anyone may
 * copy): escaped, isolated from the text around it (`<bdi>`), and with any invisible or
 * formatting character an account saved before RFC 8265 may hold written out as `[U+200B]`,
 * so that two accounts never read the same.
 */
export function usernameHtml(username: string): string {
  const visible = username.replace(/[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]/gu, (c) => `[U+${(c.codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')}]`)
  return `<bdi>${escapeHtml(visible)}</bdi>`
}

/** Text safe in HTML content and attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c] as string)
}

/**
 * A complete page of the gate's own: the title (with the portal's name, when there is
 * one), the inline stylesheet (allowed by its hash), and `body` inside `<main>`, under a
 * line with the portal's name unless `banner` is false (a heading that names it already).
 */
export function layout(title: string, body: string, siteName?: string, banner = true): string {
  const fullTitle = siteName === undefined ? title : `${title} · ${siteName}`
  const site = siteName === undefined || !banner ? '' : `<p class="site">${escapeHtml(siteName)}</p>\n`
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(fullTitle)}</title>
<style>${CSS}</style>
</head>
<body>
<main>
${site}${body}
</main>
</body>
</html>
`
}

/**
 * The username and password form of every sign-in page the gate shows (the authorize
 * flow's and connected apps'), with the error, if any, announced and tied to the fields.
 * @param actions the buttons, as markup
 */
export function signInForm(csrfToken: string, username: string, error: string | undefined, actions: string): string {
  const alert = error === undefined ? '' : `<p class="error" role="alert" id="login-error">${escapeHtml(error)}</p>`
  const describedBy = error === undefined ? '' : ' aria-describedby="login-error"'
  return `${alert}
<form method="post">
<input type="hidden" name="csrf_token" value="${escapeHtml(csrfToken)}">
<label for="username">Username</label>
<input type="text" id="username" name="username" value="${escapeHtml(username)}" autocomplete="username" autocapitalize="none" spellcheck="false" required autofocus${describedBy}>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required${describedBy}>
<div class="actions">${actions}</div>
</form>`
}

/** The gate's login page: sign in, or cancel back to the application (Sign in comes first: Enter submits it). */
export function loginPage(view: LoginView): string {
  const app = escapeHtml(view.application.name)
  const heading = view.siteName === undefined ? 'Sign in' : `Sign in to ${view.siteName}`
  return layout(
    'Sign in',
    `<h1>${escapeHtml(heading)}</h1>
<p><strong>${app}</strong> wants to use your account. Sign in to continue.</p>
${signInForm(view.csrfToken, view.username, view.error, `
<button type="submit" class="primary" name="action" value="login">Sign in</button>
<button type="submit" class="secondary" name="action" value="deny" formnovalidate>Cancel</button>
`)}`,
    view.siteName,
    false, // the heading names the portal already
  )
}

/** Who registered the application, as the consent page says it. */
function registeredByHtml(by: RegisteredBy, siteName: string | undefined): string {
  const site = siteName === undefined ? 'this site' : escapeHtml(siteName)
  switch (by.kind) {
    case 'operator':
      return `<p class="registered-by">Registered by the operators of ${site}.</p>`
    case 'user':
      return `<p class="registered-by">Registered by <strong><bdi>${escapeHtml(by.displayName)}</bdi></strong> (${usernameHtml(by.username)}), a user of ${site}, not by ${site} itself.</p>`
    case 'former-user':
      return `<p class="registered-by">Registered by a user of ${site} whose account no longer exists, not by ${site} itself.</p>`
  }
}

/** The gate's consent page: allow, deny, or sign out. */
export function consentPage(view: ConsentView): string {
  const app = escapeHtml(view.application.name)
  return layout(
    `Allow ${view.application.name}?`,
    `<h1>Allow ${app} to use your account?</h1>
<form method="post">
<input type="hidden" name="csrf_token" value="${escapeHtml(view.csrfToken)}">
<p>Signed in as <strong>${escapeHtml(view.user.displayName)}</strong> (${usernameHtml(view.user.username)}). <button type="submit" class="link" name="action" value="logout">Not you? Sign out</button></p>
<p><strong>${app}</strong> will be able to read and change data on your account, as you can, until you revoke its access.</p>
${registeredByHtml(view.application.registeredBy, view.siteName)}
<p class="small">You will be sent back to ${escapeHtml(view.redirectOrigin)}.</p>
<div class="actions">
<button type="submit" class="secondary" name="action" value="deny">Deny</button>
<button type="submit" class="primary" name="action" value="approve">Allow</button>
</div>
</form>`,
    view.siteName,
  )
}

/** The gate's error page: what happened in the user's words, the technical detail folded away for the developer. */
export function errorPage(view: ErrorView): string {
  const detail =
    view.detail === undefined
      ? ''
      : `\n<details>\n<summary>Technical details for the application's developer</summary>\n<p>${escapeHtml(view.detail)}</p>\n</details>`
  const back = view.back === undefined ? '' : `\n<p class="actions"><a class="button" href="${escapeHtml(view.back.url)}">Back to ${escapeHtml(view.back.applicationName)}</a></p>`
  return layout(view.title, `<h1>${escapeHtml(view.title)}</h1>\n<p role="alert">${escapeHtml(view.message)}</p>${detail}${back}`, view.siteName)
}

/** A form answered: the browser follows with a GET, never re-posting the form (no 307). Not an error: no code. */
export const SEE_OTHER = 303

/** 303 See Other to `location`, with no caching and no referrer. */
export function seeOther(location: string, headers: Record<string, string> = {}): GateResponse {
  return { status: SEE_OTHER, headers: { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', ...headers }, body: '' }
}

/**
 * An HTML response with the headers every page of the flow carries: no framing, no
 * referrer, no caching, no sniffing. The gate's own pages also get a CSP that allows
 * only their inline stylesheet and form posts to this origin (and, for the consent
 * page, the redirect's origin: Chromium checks `form-action` on the redirect too).
 */
export function htmlResponse(status: number, html: string, options: { ownPage: boolean; formTargets?: readonly string[]; headers?: Record<string, string | readonly string[]> }): GateResponse {
  const csp = options.ownPage
    ? `default-src 'none'; style-src ${STYLE_SOURCE}; form-action 'self'${(options.formTargets ?? []).map((t) => ` ${t}`).join('')}; frame-ancestors 'none'; base-uri 'none'`
    : `frame-ancestors 'none'`
  return {
    status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': csp,
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      ...options.headers,
    },
    body: html,
  }
}
