/**
 * Bugs the properties found in code another branch is rewriting (issue 8, branch `i8`:
 * authorization-header.ts, app-token.ts, redirect-uri.ts). They are not fixed here;
 * each predicate below recognises exactly the inputs of one such bug, so the properties
 * keep checking everything else. Delete a predicate once its fix is merged: the
 * properties then hold the fix to it.
 */

/**
 * redirect-uri.ts admits `https:/host/path` and `https:host/path`: the WHATWG parser
 * reads them as absolute URLs on `host`, but a browser resolves a Location header
 * against the authorize URL, and there a special scheme without `//` is a path on the
 * gate's own origin. Counterexample (seed 42): prefix `https://transit.example/oauth/`,
 * redirect_uri `https:/transit.example/oauth/` → `Location:
 * https:/transit.example/oauth/?code=…`, followed to
 * `https://<gate host>/transit.example/oauth/?code=…`.
 */
export function schemeWithoutSlashes(redirectUri: string): boolean {
  return /^https?:(?!\/\/)/i.test(redirectUri)
}

/**
 * authorization-header.ts accepts more than one space, or a tab, after the scheme, and
 * trailing whitespace (it trims). Counterexample (seed 42):
 * `Authorization: Basic  YWRhOmZ1enotcGFzc3dvcmQtYWRhLWNvcnJlY3QtaG9yc2U=` is read as
 * ada's credentials instead of a 400.
 */
export function looseAuthorizationSpacing(value: string): boolean {
  return /^\S+(?:[ \t]{2,}|\t)|[ \t]$/.test(value)
}

/**
 * app-token.ts looks for a query token only when the raw query contains `app_token`
 * literally, so a percent-encoded name that every query parser decodes to `$$app_token`
 * (`$$app_tok%65n=...`) is ignored: the host sees a token the gate never checked.
 * Counterexample (seed 42): `?$$app_tok%65n=odgFuzzOAuthApp000000001`.
 */
export function encodedAppTokenName(target: string): boolean {
  const q = target.indexOf('?')
  if (q === -1) return false
  return target
    .slice(q + 1)
    .split('&')
    .some((pair) => {
      const name = pair.split('=')[0] ?? ''
      const decoded = new URLSearchParams(`${name}=`).keys().next().value ?? ''
      return name !== decoded && (decoded === '$$app_token' || decoded === 'app_token')
    })
}

/**
 * authorize.ts `sameUrl()` percent-encodes the request target one UTF-16 unit at a time
 * (a regular expression without the `u` flag), so a character outside the BMP in the
 * query splits into two lone surrogates and `encodeURIComponent` throws: the login or
 * logout post answers 500 and an `internalError` event. Node hands over a target as
 * Latin-1, so this needs a host that passes real Unicode. Counterexample (seed
 * 20261122): `POST /oauth/authorize?client_id=…&𐀀=` with a valid login form.
 */
export function astralCharacterInAuthorizePost(method: string, target: string): boolean {
  return method === 'POST' && target.startsWith('/oauth/authorize') && /[\u{10000}-\u{10ffff}]/u.test(target)
}
