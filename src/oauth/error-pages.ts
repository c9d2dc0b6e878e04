/**
 * The error pages every page endpoint answers a person with (the authorize endpoint's, the
 * connected-apps page's): the gate's own, or the host's (`oauth.pages.error`), with the
 * framing and referrer headers of every page (`htmlResponse`).
 */
import { GateError, pageStatusOf, StoreError, ThrottledError, type PageErrorCode } from '../errors.js'
import type { GateResponse } from '../http/request.js'
import { errorPage, htmlResponse, type ErrorView, type OAuthPages } from './pages.js'

/** A page of the error pages: what the person reads (the portal's name is added). */
export type PageErrorView = Omit<ErrorView, 'siteName'>

/**
 * An error page, rendered by the host's `oauth.pages.error` when it has one, with the
 * status of its code (src/errors.ts): a page never picks a status of its own.
 */
export function errorPageResponse(pages: OAuthPages, code: PageErrorCode, view: PageErrorView, headers: Record<string, string> = {}): GateResponse {
  return render(pages, pageStatusOf(code), view, headers)
}

function render(pages: OAuthPages, status: number, view: PageErrorView, headers: Record<string, string> = {}): GateResponse {
  const custom = pages.error
  const full = { ...view, siteName: pages.siteName }
  return htmlResponse(status, custom === undefined ? errorPage(full) : custom(full), { ownPage: custom === undefined, headers })
}

/**
 * The page for a failure a page endpoint threw, or one found before it ran (a store down,
 * a spent budget, a refusal of the gate's): the status of its code, and `internal`'s for
 * anything unexpected (the cause is reported, never shown).
 */
export function failurePage(pages: OAuthPages, error: unknown): GateResponse {
  if (error instanceof StoreError) {
    return render(pages, error.status, { title: 'The service is temporarily unavailable', message: 'Please try again in a moment.', detail: `The store failed (${error.operation}).` }, error.headers ?? {})
  }
  if (error instanceof ThrottledError) return render(pages, error.status, { title: 'Too many attempts', message: error.message, detail: undefined }, error.headers ?? {})
  if (error instanceof GateError) {
    return render(pages, error.status, { title: 'This request was refused', message: error.message, detail: `Error code: ${error.code}` }, error.headers ?? {})
  }
  return errorPageResponse(pages, 'internal', { title: 'Something went wrong', message: 'Please try again later.', detail: undefined })
}
