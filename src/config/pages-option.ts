/**
 * The `oauth.pages` option: the portal's name and the pages a host renders itself, and what
 * each page is shown. The gate's own pages (src/oauth/pages.ts) render the same views.
 */

/**
 * What a login page shows. Its form posts to the same URL (no `action` attribute):
 * `action=login` with `username` and `password`, or `action=deny` to cancel and go back
 * to the application with `error=access_denied`.
 */
export interface LoginView {
  /** The portal's name (`oauth.pages.siteName`), if one is configured. */
  readonly siteName: string | undefined
  readonly application: { readonly name: string }
  /** Put in a hidden field named `csrf_token`. */
  readonly csrfToken: string
  /** The username to prefill after a failed attempt. */
  readonly username: string
  /** Why the last attempt failed, if it did. */
  readonly error: string | undefined
}

/**
 * What a consent page shows. Its form posts to the same URL with `action=approve`,
 * `action=deny`, or `action=logout` (sign out, to sign in as someone else).
 */
export interface ConsentView {
  /** The portal's name (`oauth.pages.siteName`), if one is configured. */
  readonly siteName: string | undefined
  readonly application: { readonly name: string; readonly registeredBy: RegisteredBy }
  readonly user: { readonly displayName: string; readonly username: string }
  /** Put in a hidden field named `csrf_token`. */
  readonly csrfToken: string
  /** Where the application will receive the answer (its origin), to show the user. */
  readonly redirectOrigin: string
}

/**
 * Who registered the application a consent page asks about, shown so that a look-alike
 * name cannot pass for the portal's own application: its operators (an application with no
 * owner), a user of the portal (their display name and username), or a user whose account
 * has since been deleted.
 */
export type RegisteredBy =
  | { readonly kind: 'operator' }
  | { readonly kind: 'user'; readonly displayName: string; readonly username: string }
  | { readonly kind: 'former-user' }

/**
 * What an error page shows. `title` and `message` are for the person in front of the
 * browser; `detail`, when there is one, is for the application's developer (it names
 * parameters such as `redirect_uri`). The user is never sent back to the application
 * automatically; at most offered a link (`back`).
 */
export interface ErrorView {
  /** The portal's name (`oauth.pages.siteName`), if one is configured. */
  readonly siteName?: string | undefined
  readonly title: string
  readonly message: string
  readonly detail?: string | undefined
  /**
   * When the application may hear about the problem (a bad request from a known client, to
   * a verified redirect_uri): the address that tells it, for a link the user follows
   * themselves. Absent when the application or its redirect_uri is unknown.
   */
  readonly back?: { readonly url: string; readonly applicationName: string }
}

/** The portal's name and the pages a host renders itself; each page returns a complete HTML document. */
export interface OAuthPages {
  /** The portal's name, shown in the title and heading of the gate's own pages and given to custom ones. */
  siteName?: string
  login?: (view: LoginView) => string
  consent?: (view: ConsentView) => string
  error?: (view: ErrorView) => string
}
