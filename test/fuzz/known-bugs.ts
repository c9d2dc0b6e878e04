/**
 * Bugs the properties found in code the security review (issue 8, branch `i8`) owns. They
 * are not fixed here; each predicate below recognises exactly the inputs of one such bug,
 * so the properties keep checking everything else. Delete a predicate once its fix is
 * merged: the properties then hold the fix to it.
 *
 * Found earlier and fixed by i8 (the properties now check them with no exception):
 * redirect_uri `https:/host/...` admitted though a browser resolves it on the gate's own
 * origin; `Authorization: Basic  <credentials>` (two spaces, a tab, trailing space)
 * accepted; `?$$app_tok%65n=...` ignored though every query parser decodes it to
 * `$$app_token`.
 */

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
