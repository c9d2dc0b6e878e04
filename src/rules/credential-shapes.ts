/**
 * What a credential looks like, read by every layer that meets one: the Basic parser, the
 * pipeline, the API key endpoints and the user registry (no username may look like a key id).
 */

/**
 * What an API key id looks like: 25 lower-case letters and digits, as the platform's are
 * (`33a32ov2gl6eh6u6ziushg2uf`), so imported platform keys work; new ids use the
 * unambiguous alphabet of src/management/api-keys.ts. No username may look like one.
 */
export const API_KEY_ID = /^[a-z0-9]{25}$/

/** Longest token the gate will look up; anything longer cannot be one of ours. */
export const MAX_APP_TOKEN_LENGTH = 128

/**
 * Whether a string can be an application token at all (base64url, not too long), before
 * any store lookup. A loop, not a regular expression: it runs on every request.
 */
export function isPlausibleAppToken(token: string): boolean {
  if (token.length > MAX_APP_TOKEN_LENGTH) return false
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i)
    // 0-9, A-Z, a-z, '-', '_'
    if (!((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 45 || c === 95)) return false
  }
  return token.length > 0
}
