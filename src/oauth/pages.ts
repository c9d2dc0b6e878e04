/**
 * The gate's own login, consent and error pages: small, accessible, and loading nothing
 * from anywhere. The one stylesheet is inline and pinned in the Content-Security-Policy
 * by its hash; there is no script at all.
 *
 * A host can render its own pages instead (`oauth.pages`); the gate then still sends the
 * framing and referrer headers and handles the form posts. The form contract is in
 * {@link LoginView} and {@link ConsentView}.
 *
 * @see oauth-server.md checklist "Consent form"
 */
import { createHash } from 'node:crypto'
import type { GateResponse } from '../http.js'

/** What a login page shows. Its form posts to the same URL (no `action` attribute). */
export interface LoginView {
  readonly application: { readonly name: string }
  /** Put in a hidden field named `csrf_token`. */
  readonly csrfToken: string
  /** The username to prefill after a failed attempt. */
  readonly username: string
  /** Why the last attempt failed, if it did. */
  readonly error: string | undefined
  /** Field names: `username`, `password`, and `action=login` on the submit button. */
}

/**
 * What a consent page shows. Its form posts to the same URL with `action=approve`,
 * `action=deny`, or `action=logout` (sign out, to sign in as someone else).
 */
export interface ConsentView {
  readonly application: { readonly name: string }
  readonly user: { readonly displayName: string; readonly username: string }
  /** Put in a hidden field named `csrf_token`. */
  readonly csrfToken: string
  /** Where the application will receive the answer (its origin), to show the user. */
  readonly redirectOrigin: string
}

/** What an error page shows. The user is not sent back to the application. */
export interface ErrorView {
  readonly title: string
  readonly message: string
}

/** Pages a host renders itself; each returns a complete HTML document. */
export interface OAuthPages {
  login?: (view: LoginView) => string
  consent?: (view: ConsentView) => string
  error?: (view: ErrorView) => string
}

const CSS = `
:root { color-scheme: light dark; --accent: #1a5fb4; --danger: #a51d2d; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; display: grid; place-items: center; min-height: 100vh; padding: 1rem; }
main { width: 100%; max-width: 26rem; border: 1px solid #8886; border-radius: 12px; padding: 1.75rem; }
h1 { font-size: 1.35rem; margin: 0 0 1rem; }
p { margin: 0 0 1rem; }
label { display: block; font-weight: 600; margin: 0.75rem 0 0.25rem; }
input[type=text], input[type=password] { width: 100%; padding: 0.6rem; font: inherit; border: 1px solid #888; border-radius: 6px; }
.actions { display: flex; gap: 0.75rem; margin-top: 1.5rem; }
button { flex: 1; padding: 0.65rem 1rem; font: inherit; font-weight: 600; border-radius: 6px; border: 1px solid var(--accent); cursor: pointer; }
button.primary { background: var(--accent); color: #fff; }
button.secondary { background: transparent; color: inherit; border-color: #888; }
button.link { flex: none; padding: 0; border: 0; background: none; color: var(--accent); font-weight: 400; text-decoration: underline; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.error { color: var(--danger); font-weight: 600; }
.small { font-size: 0.875rem; opacity: 0.8; }
`
const STYLE_SOURCE = `'sha256-${createHash('sha256').update(CSS).digest('base64')}'`

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
/** Text safe in HTML content and attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c] as string)
}

/** A complete page of the gate's own: the title, the inline stylesheet (allowed by its hash), and `body` inside `<main>`. */
export function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style>${CSS}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`
}

export function loginPage(view: LoginView): string {
  const app = escapeHtml(view.application.name)
  const error = view.error === undefined ? '' : `<p class="error" role="alert" id="login-error">${escapeHtml(view.error)}</p>`
  const describedBy = view.error === undefined ? '' : ' aria-describedby="login-error"'
  return layout(
    'Sign in',
    `<h1>Sign in</h1>
<p><strong>${app}</strong> wants to use your account. Sign in to continue.</p>
${error}
<form method="post">
<input type="hidden" name="csrf_token" value="${escapeHtml(view.csrfToken)}">
<label for="username">Username</label>
<input type="text" id="username" name="username" value="${escapeHtml(view.username)}" autocomplete="username" autocapitalize="none" spellcheck="false" required autofocus${describedBy}>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required${describedBy}>
<div class="actions"><button type="submit" class="primary" name="action" value="login">Sign in</button></div>
</form>`,
  )
}

export function consentPage(view: ConsentView): string {
  const app = escapeHtml(view.application.name)
  return layout(
    `Allow ${view.application.name}?`,
    `<h1>Allow ${app} to use your account?</h1>
<form method="post">
<input type="hidden" name="csrf_token" value="${escapeHtml(view.csrfToken)}">
<p>Signed in as <strong>${escapeHtml(view.user.displayName)}</strong> (${escapeHtml(view.user.username)}). <button type="submit" class="link" name="action" value="logout">Not you? Sign out</button></p>
<p><strong>${app}</strong> will be able to read and change data on your account, as you can, until you revoke its access.</p>
<p class="small">You will be sent back to ${escapeHtml(view.redirectOrigin)}.</p>
<div class="actions">
<button type="submit" class="secondary" name="action" value="deny">Deny</button>
<button type="submit" class="primary" name="action" value="approve">Allow</button>
</div>
</form>`,
  )
}

export function errorPage(view: ErrorView): string {
  return layout(view.title, `<h1>${escapeHtml(view.title)}</h1>\n<p role="alert">${escapeHtml(view.message)}</p>`)
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
