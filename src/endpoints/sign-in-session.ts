/**
 * Who is signed in on the gate's own login page, and the CSRF token of its forms.
 *
 * The session cookie holds 256 random bits; the store holds only their SHA-256. It is
 * `SameSite=Lax` so that it comes along when an application sends the user to the
 * authorize endpoint. The CSRF token is a double-submit value: a `SameSite=Strict`
 * cookie and a hidden form field that must match, compared in constant time; on top, a
 * form post whose `Sec-Fetch-Site` says it came from another site is refused.
 */
import { cookie, readCookie } from '../http/cookies.js'
import { headerValue, type GateRequest } from '../http/request.js'
import { randomToken, safeEqual, sha256 } from '../secrets/tokens.js'
import type { GateStore, UserRecord } from '../store/store.js'

const SESSION_COOKIE = '__Host-odg-session'
const CSRF_COOKIE = '__Host-odg-csrf'
const CSRF_TTL_SECONDS = 3600

export class LoginSessions {
  readonly #store: GateStore
  readonly #ttlMs: number
  readonly #maxPerUser: number

  constructor(store: GateStore, ttlMs: number, maxPerUser: number) {
    this.#store = store
    this.#ttlMs = ttlMs
    this.#maxPerUser = maxPerUser
  }

  /**
   * The user of the request's session, if it has a live one whose user still exists with
   * the password they signed in with.
   */
  async user(request: GateRequest): Promise<UserRecord | undefined> {
    const value = sessionCookie(request)
    if (value === undefined) return undefined
    const session = await this.#store.getSession(sha256(value))
    if (session === undefined || session.expiresAt <= Date.now()) return undefined
    const user = await this.#store.getUser(session.userId)
    return user !== undefined && stampOf(user) === session.passwordStamp ? user : undefined
  }

  /**
   * Starts a session for a user who just signed in, and ends the user's oldest ones past
   * the cap, so that a password guessed once cannot leave an unbounded number behind.
   * @returns the `Set-Cookie` value
   */
  async start(user: UserRecord): Promise<string> {
    const value = randomToken(32)
    const now = Date.now()
    await this.#store.insertSession({ sessionHash: sha256(value), userId: user.id, passwordStamp: stampOf(user), createdAt: now, expiresAt: now + this.#ttlMs })
    await this.#store.trimSessions(user.id, this.#maxPerUser)
    return cookie(SESSION_COOKIE, value, { maxAgeSeconds: Math.floor(this.#ttlMs / 1000), sameSite: 'Lax' })
  }

  /** Ends the request's session. @returns the `Set-Cookie` value that removes the cookie */
  async end(request: GateRequest): Promise<string> {
    const value = sessionCookie(request)
    if (value !== undefined) await this.#store.deleteSession(sha256(value))
    return cookie(SESSION_COOKIE, '', { maxAgeSeconds: 0, sameSite: 'Lax' })
  }
}

function sessionCookie(request: GateRequest): string | undefined {
  const value = readCookie(request, SESSION_COOKIE)
  return value !== undefined && /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined
}

/** What a session remembers of the password: enough to notice it changed, nothing to test a guess against. */
function stampOf(user: UserRecord): string {
  return sha256(user.passwordHash ?? '')
}

/** The request's CSRF token, or a new one with the cookie that carries it. */
export function csrfToken(request: GateRequest): { token: string; setCookie: string | undefined } {
  const existing = readCookie(request, CSRF_COOKIE)
  if (existing !== undefined && /^[A-Za-z0-9_-]{43}$/.test(existing)) return { token: existing, setCookie: undefined }
  const token = randomToken(32)
  return { token, setCookie: cookie(CSRF_COOKIE, token, { maxAgeSeconds: CSRF_TTL_SECONDS, sameSite: 'Strict' }) }
}

/** Whether a form post carries the CSRF token of its cookie and did not come from another site. */
export function csrfValid(request: GateRequest, submitted: string | undefined): boolean {
  // Not Origin against Host: proxies that rewrite Host would make every honest post fail.
  const fetchSite = headerValue(request.headers, 'sec-fetch-site')
  if (fetchSite !== undefined && fetchSite !== 'same-origin' && fetchSite !== 'none') return false
  const expected = readCookie(request, CSRF_COOKIE)
  return expected !== undefined && submitted !== undefined && safeEqual(expected, submitted)
}
