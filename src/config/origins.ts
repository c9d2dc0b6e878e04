/**
 * The origins the options name: the OAuth issuer, and the origins whose pages may change
 * the account besides the gate's own (`trustedOrigins`).
 */

/** Whether `value` is an https URL without query or fragment: what `oauth.issuer` must be. */
export function isIssuer(value: unknown): boolean {
  if (typeof value !== 'string' || !URL.canParse(value)) return false
  const url = new URL(value)
  return url.protocol === 'https:' && url.search === '' && url.hash === '' && !value.includes('?') && !value.includes('#')
}

/**
 * `trustedOrigins`, with `oauth.issuer`'s origin (the gate's own public origin, when set),
 * each as `URL#origin` serializes it (lower-case host, no default port), which is how a
 * browser writes `Origin`.
 * @throws {TypeError} naming the option, for anything but a list of https origins (or
 *   http ones on a loopback host, for a front end in development)
 */
export function resolveTrustedOrigins(option: unknown, issuer: string | null): ReadonlySet<string> {
  const origins = new Set<string>(issuer === null ? [] : [new URL(issuer).origin])
  if (option === undefined) return origins
  if (!Array.isArray(option)) throw new TypeError('open-data-gate: trustedOrigins must be a list of origins such as "https://portal.example.org"')
  for (const entry of option as unknown[]) {
    const url = typeof entry === 'string' && URL.canParse(entry) ? new URL(entry) : undefined
    const loopback = url !== undefined && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)
    const bare = url !== undefined && url.username === '' && url.password === '' && url.pathname === '/' && !/[?#]/.test(entry as string)
    if (url === undefined || !bare || (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))) {
      throw new TypeError(`open-data-gate: trustedOrigins entry ${JSON.stringify(entry)} is not an origin: https://host[:port], nothing after it (http only on localhost, 127.0.0.1 or [::1])`)
    }
    origins.add(url.origin)
  }
  return origins
}
