/**
 * Random identifiers and secrets, their stored hashes, and constant-time comparison,
 * all on node:crypto.
 *
 * High-entropy secrets (app secret tokens, API key secrets, codes, access tokens) are
 * stored as their SHA-256: with 256 random bits there is nothing for a slow hash to
 * protect (RFC 9700 §4.13, SECURITY.md "Checklist"). Passwords, which people choose, use scrypt
 * in `passwords.ts`.
 */
import { createHash, hash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto'

/** `bytes` random bytes as base64url (no padding). 32 bytes give 256 bits. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url')
}

/** Lowercase letters and digits without the look-alikes 0/o and 1/l, as the platform's 4x4 ids. */
const ID_ALPHABET = '23456789abcdefghijkmnpqrstuvwxyz'

/** A random string over {@link ID_ALPHABET} (5 bits a character). */
export function randomId(length: number): string {
  let out = ''
  for (let i = 0; i < length; i++) out += ID_ALPHABET[randomInt(ID_ALPHABET.length)]
  return out
}

/** SHA-256 of a secret, hex: how high-entropy secrets are stored and looked up. */
export function sha256(value: string): string {
  // One-shot crypto.hash (Node 20.12+): no Hash object per call; this runs on every token and key request.
  return hash('sha256', value, 'hex')
}

/**
 * Whether `secret` hashes to `storedHash`, compared in constant time. Both sides are
 * fixed-length digests, so the comparison never leaks the secret's length either.
 */
export function secretMatches(secret: string, storedHash: string): boolean {
  const actual = Buffer.from(sha256(secret), 'hex')
  const expected = Buffer.from(storedHash, 'hex')
  return actual.length === expected.length && timingSafeEqual(actual, expected)
}

/** Constant-time equality of two strings of any length (hashes both to equalise lengths). */
export function safeEqual(a: string, b: string): boolean {
  const x = createHash('sha256').update(a, 'utf8').digest()
  const y = createHash('sha256').update(b, 'utf8').digest()
  return timingSafeEqual(x, y) && a.length === b.length
}

/** A stored hash nothing matches: comparing against it makes an unknown id cost what a known one costs. */
export const NO_SUCH_SECRET = sha256('')
