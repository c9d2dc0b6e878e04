/**
 * Text no store can hold: U+0000 (PostgreSQL refuses it in `text`, and C strings end at
 * it) and unpaired UTF-16 surrogates (UTF-8 cannot encode them: a driver silently stores
 * U+FFFD instead, so the value read back differs from the one written). Every reader of
 * client input (query and body parameters, the `Authorization` header, the sign-in forms)
 * and every management call refuses such text before any store call, and the store's guard
 * checks the string arguments of every call once more.
 */

/** `String.prototype.isWellFormed` (ES2024; in every runtime the package supports: Node 20, Bun, Deno), not in the ES2023 lib it compiles against. */
type WellFormed = string & { isWellFormed(): boolean }

/** Why `value` cannot be stored, in words for an error message, or `undefined` when it can. */
export function unstorableCharacter(value: string): string | undefined {
  // Two builtins: the store's guard asks this of every string argument (a rate key, an app
  // token) on every request, and `isWellFormed` answers a string of Latin-1 text without
  // reading it (a loop over the characters, or a regular expression, costs more).
  if (value.indexOf('\u0000') !== -1) return 'holds U+0000 (NUL)'
  return (value as WellFormed).isWellFormed() ? undefined : 'holds an unpaired UTF-16 surrogate'
}

/**
 * Why `value` cannot be stored or is longer than `maxLength`, or `undefined` when it is fine.
 * @param maxLength in UTF-16 code units, as `String#length` counts
 */
export function unstorableText(value: string, maxLength = Infinity): string | undefined {
  if (value.length > maxLength) return `is longer than ${maxLength} characters`
  return unstorableCharacter(value)
}

/**
 * Throws a `TypeError` naming the field when `value` is a string no store can hold: for the
 * management API, whose other checks throw `TypeError` too.
 */
export function assertStorable(field: string, value: unknown): void {
  if (typeof value !== 'string') return
  const problem = unstorableCharacter(value)
  if (problem !== undefined) throw new TypeError(`open-data-gate: ${field} ${problem}, which no store can hold`)
}
