/**
 * PKCE (RFC 7636) with S256 only: `plain` sends the secret in the front channel and is
 * refused (RFC 9700 §2.1.1).
 */
import { createHash, timingSafeEqual } from 'node:crypto'

/** An S256 challenge is base64url of a SHA-256: exactly 43 characters. */
export function isS256Challenge(challenge: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(challenge)
}

/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
export function isVerifier(verifier: string): boolean {
  return /^[A-Za-z0-9\-._~]{43,128}$/.test(verifier)
}

/** Whether `verifier` hashes to `challenge`, compared in constant time. */
export function verifierMatches(verifier: string, challenge: string): boolean {
  const actual = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'))
  const expected = Buffer.from(challenge)
  return actual.length === expected.length && timingSafeEqual(actual, expected)
}
