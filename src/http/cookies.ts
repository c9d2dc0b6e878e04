/**
 * The two cookies of the gate's own login and consent pages. Both are `__Host-`
 * prefixed (the browser accepts them only from a secure origin, for path `/`, with no
 * Domain: a sibling subdomain cannot plant one), `Secure` and `HttpOnly`.
 */
import type { GateRequest } from './request.js'

/** The value of cookie `name`, or `undefined`. */
export function readCookie(request: GateRequest, name: string): string | undefined {
  const header = request.headers.cookie
  const text = Array.isArray(header) ? header.join('; ') : header
  if (text === undefined) return undefined
  for (const pair of text.split(';')) {
    const eq = pair.indexOf('=')
    if (eq !== -1 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim()
  }
  return undefined
}

/** A `Set-Cookie` value; `maxAgeSeconds: 0` deletes the cookie. */
export function cookie(name: string, value: string, options: { maxAgeSeconds: number; sameSite: 'Strict' | 'Lax' }): string {
  return `${name}=${value}; Path=/; Max-Age=${options.maxAgeSeconds}; Secure; HttpOnly; SameSite=${options.sameSite}`
}
