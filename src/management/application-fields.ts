/**
 * The fields of an application that the management API checks as it takes them: an owner's
 * id, an imported app token or secret, a limit of its own.
 */
import { isPlausibleAppToken, MAX_APP_TOKEN_LENGTH } from '../rules/credential-shapes.js'
import { assertStorable } from '../rules/storable.js'
import { positiveInteger } from '../util/validate.js'

/** A user id as the stores keep them: a non-empty string, at most 255 characters (the SQL stores' column), storable. */
export function checkOwnerId(ownerId: unknown): string | null {
  if (ownerId === null) return null
  if (typeof ownerId !== 'string' || ownerId === '' || ownerId.length > 255) {
    throw new TypeError('open-data-gate: ownerId must be a user id (a non-empty string of at most 255 characters) or null')
  }
  assertStorable('ownerId', ownerId)
  return ownerId
}

export function checkImportedAppToken(token: unknown): string {
  if (typeof token !== 'string' || !isPlausibleAppToken(token)) {
    throw new TypeError(`open-data-gate: an imported appToken must be 1 to ${MAX_APP_TOKEN_LENGTH} letters, digits, "-" or "_"`)
  }
  return token
}

/**
 * An imported secret (an app's secret token, an API key's secret) is kept as its SHA-256
 * like a generated one, which is only sound for a high-entropy secret: refuse short ones.
 */
export function checkImportedSecret(field: string, secret: unknown): string {
  // eslint-disable-next-line no-control-regex
  if (typeof secret !== 'string' || secret.length < 16 || secret.length > 512 || /[\s\u0000-\u001f\u007f]/.test(secret)) {
    throw new TypeError(`open-data-gate: an imported ${field} must be 16 to 512 characters without spaces or control characters`)
  }
  assertStorable(`an imported ${field}`, secret)
  return secret
}

export function checkLimit(limit: unknown): number | null {
  if (limit === null) return null
  positiveInteger('limit', limit)
  return limit
}
