/**
 * What a username may be, and when two usernames are the same or only look the same.
 *
 * A new username is prepared as RFC 8265 (PRECIS) prepares a UsernameCaseMapped string:
 * fullwidth and halfwidth forms mapped to their ordinary forms (`ａda` → `ada`), lower
 * case (`toLowerCase`), Unicode NFC; then every code point must be a letter, a combining
 * mark or a decimal digit of any script, or printable ASCII (the IdentifierClass), and no
 * control, format, bidi control, default-ignorable, compatibility or old Hangul jamo code
 * point may remain (`ada\u200b`, `a\u00adda`, `ada\u2060`, `\u202eada` are refused). The
 * gate's own rules add: no `:` (it ends the Basic user part), no leading combining mark,
 * at most 100 characters, and nothing that looks like an API key id.
 *
 * Sign-in maps the name typed the same way, so `ＡＤＡ` and `Ada` are `ada`. A username
 * saved before these rules keeps signing in: it was stored as NFC lower case, and that form
 * of the name typed is tried first (see {@link usernameLookups}).
 *
 * Two usernames that differ but look alike (`аda` in Cyrillic beside `ada`) are told apart
 * by their UTS #39 skeleton: each character of the NFD form replaced by its prototype in
 * Unicode's confusables table (from the `unhomoglyph` package), NFD again. The gate stores
 * the skeleton with the user and refuses a new username whose skeleton another user has.
 */
/** The longest username; longer ones are refused without a lookup. */
export const MAX_USERNAME_LENGTH = 100

/** RFC 8265 §3.3.2 width mapping: the code points with a `<wide>` or `<narrow>` decomposition. */
const WIDE_OR_NARROW = /[\u3000\uff01-\uffee]/gu

/** Code points no username may hold after mapping (see the module's comment). */
const DISALLOWED = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Z}\p{Default_Ignorable_Code_Point}\p{Bidi_Control}\p{Join_Control}\u1100-\u11ff\ua960-\ua97f\ud7b0-\ud7ff:]/u
/** Letters, marks and decimal digits of any script, and printable ASCII: RFC 8264's IdentifierClass, roughly. */
const ALLOWED = /^[\p{L}\p{Mn}\p{Mc}\p{Nd}\x21-\x7e]$/u

/** Legacy form of a username, as the gate stored one before PRECIS: NFC, lower case. */
export function legacyUsername(username: string): string {
  return username.normalize('NFC').toLowerCase()
}

/** The RFC 8265 UsernameCaseMapped mapping (width, case, NFC), without any check. */
export function mapUsername(username: string): string {
  return username.replace(WIDE_OR_NARROW, (c) => c.normalize('NFKC')).toLowerCase().normalize('NFC')
}

/**
 * Why a mapped username is not allowed, or `undefined` when it is. Names the first code
 * point that is not allowed as `U+XXXX`, so the message itself shows nothing invisible.
 */
export function usernameProblem(mapped: string): string | undefined {
  if (mapped === '' || mapped.length > MAX_USERNAME_LENGTH) return `a username must be 1 to ${MAX_USERNAME_LENGTH} characters`
  for (const c of mapped) {
    if (DISALLOWED.test(c) || !ALLOWED.test(c) || c.normalize('NFKC') !== c) {
      const code = `U+${(c.codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')}`
      return `a username must be letters, marks and digits of any script or printable ASCII, without ":", spaces, invisible or formatting characters (RFC 8265); ${code} is not allowed`
    }
  }
  if (/^\p{M}/u.test(mapped)) return 'a username must not start with a combining mark'
  return undefined
}

/**
 * The stored forms a username sent at sign-in may have, to look up in this order: the
 * legacy form first (an account saved before PRECIS, even one with characters PRECIS
 * refuses, keeps signing in with exactly what it always typed), then the PRECIS form
 * when it differs and is allowed. `key` names the account for the failure budget: the
 * PRECIS form, so every width and case variant of a name spends one budget.
 */
export function usernameLookups(sent: string): { key: string; lookups: string[] } {
  const legacy = legacyUsername(sent)
  const mapped = mapUsername(sent)
  if (mapped === legacy || usernameProblem(mapped) !== undefined) return { key: legacy, lookups: [legacy] }
  return { key: mapped, lookups: [legacy, mapped] }
}

type Unhomoglyph = (text: string) => string
let confusables: Promise<Unhomoglyph> | undefined

/** The confusables mapping, loaded on first use (about 100 KB of data, 20-30 ms): most gates never create a user. */
function loadConfusables(): Promise<Unhomoglyph> {
  confusables ??= import('unhomoglyph').then((module) => {
    const fn = (module as { default: unknown }).default
    return (typeof fn === 'function' ? fn : (fn as { default: unknown }).default) as Unhomoglyph
  })
  return confusables
}

/** What is left of a username once nothing invisible counts: for skeletons of legacy names too. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]/gu

/**
 * The UTS #39 skeleton of a username, lower-cased (usernames compare case-insensitively,
 * and the prototypes of `0` and `o` differ only in case). Computed on the mapped form
 * with every invisible character dropped, so that a name saved before these rules
 * (`ada\u200b`) has the skeleton of the name it imitates.
 */
export async function usernameSkeleton(username: string): Promise<string> {
  const unhomoglyph = await loadConfusables()
  const visible = mapUsername(username).replace(INVISIBLE, '')
  return unhomoglyph(visible.normalize('NFD')).normalize('NFD').toLowerCase().normalize('NFD')
}
