/**
 * What a browser does with the login and consent pages, over real HTTP: keeps cookies,
 * reads the CSRF token from the form, posts forms, and follows 303 redirects by hand so
 * that tests can see each hop.
 */
import { tlsFetch } from './tls-fetch.js'

export interface Page {
  readonly url: string
  readonly status: number
  readonly headers: Headers
  readonly html: string
  /** The redirect target, resolved against the page URL. */
  readonly location: string | undefined
}

export class Browser {
  readonly cookies = new Map<string, string>()
  readonly #fetch: typeof fetch

  constructor(fetcher: typeof fetch = tlsFetch) {
    this.#fetch = fetcher
  }

  async get(url: string, headers: Record<string, string> = {}): Promise<Page> {
    return this.#request(url, { method: 'GET', headers })
  }

  async post(url: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<Page> {
    return this.#request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', ...headers },
      body: new URLSearchParams(form).toString(),
    })
  }

  /** Opens the authorize URL, signs in on the login page, and returns the page after the 303 (the consent page). */
  async signIn(authorizeUrl: string, username: string, password: string): Promise<Page> {
    const login = await this.get(authorizeUrl)
    if (login.status !== 200 || !login.html.includes('name="password"')) throw new Error(`expected the login page, got ${login.status}: ${login.html.slice(0, 200)}`)
    const posted = await this.post(login.url, { csrf_token: csrfOf(login), username, password, action: 'login' })
    if (posted.status !== 303 || posted.location === undefined) throw new Error(`expected 303 after signing in, got ${posted.status}: ${posted.html.slice(0, 300)}`)
    return this.get(posted.location)
  }

  /** Presses Allow (or Deny) on a consent page and returns where the 303 sends the browser: the application's callback. */
  async decide(consent: Page, action: 'approve' | 'deny' = 'approve'): Promise<string> {
    if (consent.status !== 200 || !consent.html.includes('value="approve"')) throw new Error(`expected the consent page, got ${consent.status}: ${consent.html.slice(0, 300)}`)
    const posted = await this.post(consent.url, { csrf_token: csrfOf(consent), action })
    if (posted.status !== 303 || posted.location === undefined) throw new Error(`expected 303 after deciding, got ${posted.status}`)
    return posted.location
  }

  /** The whole user side of the flow: sign in, approve, and return the callback URL with the code. */
  async authorize(authorizeUrl: string, username: string, password: string): Promise<string> {
    return this.decide(await this.signIn(authorizeUrl, username, password))
  }

  async #request(url: string, init: RequestInit & { headers: Record<string, string> }): Promise<Page> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
    const response = await this.#fetch(url, { ...init, headers: { ...init.headers, ...(cookie === '' ? {} : { cookie }) }, redirect: 'manual' })
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';')
      const eq = pair.indexOf('=')
      const name = pair.slice(0, eq).trim()
      if (attributes.some((a) => a.trim().toLowerCase() === 'max-age=0')) this.cookies.delete(name)
      else this.cookies.set(name, pair.slice(eq + 1).trim())
    }
    const location = response.headers.get('location')
    return {
      url,
      status: response.status,
      headers: response.headers,
      html: await response.text(),
      location: location === null ? undefined : new URL(location, url).toString(),
    }
  }
}

/** The hidden csrf_token field of a page's form. */
export function csrfOf(page: Page): string {
  const match = /name="csrf_token" value="([^"]+)"/.exec(page.html)
  if (match === null) throw new Error('the page has no csrf_token field')
  return match[1] as string
}
