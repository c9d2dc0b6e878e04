/**
 * What a Callback Prefix may be: the prefix every OAuth `redirect_uri` of an application
 * must start with, checked when it is registered or changed.
 *
 * @see docs/platform-rules.md "Resources and their fields" (Callback Prefix)
 */
import { unstorableCharacter } from '../rules/storable.js'

/**
 * A Callback Prefix must be an absolute https URL without credentials, query or
 * fragment: redirect URIs are matched against its origin exactly and its path by prefix.
 * With `allowLoopback` (`oauth.allowLoopbackCallbacks`), `http://localhost`,
 * `http://127.0.0.1` and `http://[::1]` on any port are accepted too (RFC 8252 §7.3).
 */
export function checkCallbackPrefix(prefix: unknown, allowLoopback = false): string | null {
  if (prefix === null) return null
  const reason = typeof prefix !== 'string' ? 'it is not a string' : callbackPrefixProblem(prefix, allowLoopback)
  if (reason !== undefined) {
    const expected = allowLoopback ? 'an absolute https URL, or http on localhost, 127.0.0.1 or [::1]' : 'an absolute https URL'
    throw new TypeError(`open-data-gate: callbackPrefix must be ${expected} (like https://app.example/oauth/); ${JSON.stringify(prefix)} is not: ${reason}`)
  }
  return prefix as string
}

/** Whether `url` is plain http to a loopback host, the one exception `oauth.allowLoopbackCallbacks` makes. */
export function isLoopbackHttp(url: URL): boolean {
  return url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]')
}

function callbackPrefixProblem(prefix: string, allowLoopback: boolean): string | undefined {
  const unstorable = unstorableCharacter(prefix)
  if (unstorable !== undefined) return `it ${unstorable}`
  if (!URL.canParse(prefix)) return 'it is not an absolute URL'
  const url = new URL(prefix)
  if (url.protocol !== 'https:' && !(allowLoopback && isLoopbackHttp(url))) {
    // A developer's first OAuth client usually runs on localhost: say which option allows it.
    return isLoopbackHttp(url)
      ? 'it does not use https (http on localhost, 127.0.0.1 or [::1] is accepted, for local development only, with the gate option oauth.allowLoopbackCallbacks)'
      : 'it does not use https'
  }
  if (url.username !== '' || url.password !== '') return 'it holds credentials'
  if (url.search !== '' || prefix.includes('?')) return 'it has a query'
  if (url.hash !== '' || prefix.includes('#')) return 'it has a fragment'
  return undefined
}
