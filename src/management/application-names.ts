/**
 * What an application name may hold. A name is shown to people who must be able to trust
 * it: on the consent page and in its `<title>`, on the connected-apps page, in the portal,
 * in the command's tables. So besides what no store can hold (`src/rules/storable.ts`), a
 * name may hold no control character (Unicode category Cc: ESC, BEL, CR, LF, TAB, C1), no
 * format character (Cf: the bidi overrides and isolates such as U+202E that reorder what
 * follows, U+200B and the other invisible ones, soft hyphens, tags) and no line or paragraph
 * separator (U+2028, U+2029). Such characters let a name imitate another one, reorder the
 * text around it, break a log line or drive a terminal.
 *
 * One exception, as RFC 8264's FreeformClass makes it in context: U+200C ZERO WIDTH
 * NON-JOINER and U+200D ZERO WIDTH JOINER between two visible characters, which Persian,
 * the Indic scripts and emoji sequences (`👩‍💻`) need to be written at all.
 *
 * Names stored before this rule are left as they are and stay readable: the pages escape
 * them, and the command prints each such character as `?`.
 *
 * A suspension reason is shown to people too (in error messages, on the authorize page, to
 * the owner, in the command), so it follows the same rule ({@link shownTextProblem}).
 */
import { unstorableCharacter } from '../rules/storable.js'

/** The longest application name, in UTF-16 code units. */
export const MAX_APPLICATION_NAME_LENGTH = 200

const REFUSED = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u
const JOINERS = /[\u200c\u200d]/u
const VISIBLE = /[\p{L}\p{M}\p{N}\p{P}\p{S}]/u

/**
 * Why `name` cannot be an application name, in words for an error message (a refused
 * character named as `U+XXXX`, so the message shows nothing invisible), or `undefined`.
 */
export function applicationNameProblem(name: unknown): string | undefined {
  return shownTextProblem('an application name', name, MAX_APPLICATION_NAME_LENGTH)
}

/**
 * Why `text` cannot be shown to people as `what` (`an application name`, `a suspension
 * reason`): not a non-empty string of at most `maxLength` characters, text no store can
 * hold, or a control, format or line separator character (named as `U+XXXX`); or `undefined`.
 */
export function shownTextProblem(what: string, text: unknown, maxLength: number): string | undefined {
  if (typeof text !== 'string' || text.trim() === '' || text.length > maxLength) {
    return `${what} must be a non-empty string of at most ${maxLength} characters`
  }
  const unstorable = unstorableCharacter(text)
  if (unstorable !== undefined) return `${what} ${unstorable}, which no store can hold`
  // What trim() removes (a trailing line break, a BOM) is never stored, so never refused.
  const trimmed = text.trim()
  if (!REFUSED.test(trimmed)) return undefined
  const characters = [...trimmed]
  for (const [i, c] of characters.entries()) {
    if (!REFUSED.test(c)) continue
    if (JOINERS.test(c) && VISIBLE.test(characters[i - 1] ?? '') && VISIBLE.test(characters[i + 1] ?? '')) continue
    const code = `U+${(c.codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')}`
    return `${what} must not hold control, format or line separator characters (invisible or reordering text); ${code} is not allowed`
  }
  return undefined
}

/**
 * The name to store: trimmed, once it passed {@link applicationNameProblem}.
 * @throws {TypeError} naming the problem
 */
export function checkApplicationName(name: unknown): string {
  const problem = applicationNameProblem(name)
  if (problem !== undefined) throw new TypeError(`open-data-gate: ${problem}`)
  return (name as string).trim()
}
