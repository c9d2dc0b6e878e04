/**
 * Text no store can hold: U+0000 (PostgreSQL refuses it in `text`, and C strings end at
 * it) and unpaired UTF-16 surrogates (UTF-8 cannot encode them: a driver silently stores
 * U+FFFD instead, so the value read back differs from the one written). Every reader of
 * client input (query and body parameters, the `Authorization` header, the sign-in forms)
 * and every management call refuses such text before any store call, and the store's guard
 * checks the string arguments of every call once more.
 */

// eslint-disable-next-line no-control-regex
const SUSPECT = /[\u0000\ud800-\udfff]/
/** Up to this length a string is checked by a loop rather than {@link SUSPECT}. */
const SHORT = 64
/** `String.prototype.isWellFormed` (ES2024: Node 20, Bun, Deno, workers), not in the ES2023 lib the package compiles against. */
type WellFormed = string & { isWellFormed(): boolean }
const HAS_IS_WELL_FORMED = typeof (String.prototype as Partial<WellFormed>).isWellFormed === 'function'
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Why `value` cannot be stored, in words for an error message, or `undefined` when it can. */
export function unstorableCharacter(value: string): string | undefined {
  // Two builtins for the common case, no NUL and no unpaired surrogate: the store's guard
  // asks this of every string argument (a rate key, an app token) on every request, and
  // `isWellFormed` answers a string of Latin-1 text without reading it. A runtime without
  // it (before ES2024) loops over the string, which regular expressions cost more than.
  if (HAS_IS_WELL_FORMED) {
    if (value.indexOf('\u0000') === -1 && (value as WellFormed).isWellFormed()) return undefined
  } else if (value.length <= SHORT) {
    let suspect = false
    for (let i = 0; i < value.length; i++) {
      const c = value.charCodeAt(i)
      if (c === 0 || (c >= 0xd800 && c <= 0xdfff)) {
        suspect = true
        break
      }
    }
    if (!suspect) return undefined
  } else if (!SUSPECT.test(value)) return undefined
  if (value.includes('\u0000')) return 'holds U+0000 (NUL)'
  return LONE_SURROGATE.test(value) ? 'holds an unpaired UTF-16 surrogate' : undefined
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
