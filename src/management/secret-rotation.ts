/**
 * An application's secret token after registration: which of its secrets a client sent
 * (the current one, or the one before the last rotation within its grace), a rotation
 * with its grace (`applications.secretGraceMs`, or the rotation's own `graceMs`: 0 after
 * a leak), and the retirement of a previous secret that was seen in clear.
 *
 * @see docs/guides/applications.md "Rotating the secret token", "If your secret leaked"
 */
import { MAX_SECRET_GRACE_MS } from '../config/defaults.js'
import { optionsObject, secretGrace } from '../util/validate.js'
import { NotFoundError, PlatformError } from '../errors.js'
import { randomToken, secretMatches, sha256 } from '../secrets/tokens.js'
import type { ApplicationRecord, GateStore } from '../store/store.js'

/** What {@link Applications.rotateSecret} takes. */
export interface RotateSecretOptions {
  /**
   * How long the replaced secret keeps working, in ms: 0 retires it at once (the answer
   * to a leak), at most 7 days. Default `applications.secretGraceMs` (1 hour).
   */
  graceMs?: number
}

/** Which of an application's secrets a client sent. */
export type SecretMatch = 'current' | 'previous'

/** Until when the previous secret is accepted, or `null` when there is none or its grace is over. */
function graceUntil(record: ApplicationRecord, now: number): number | null {
  const until = record.previousSecretExpiresAt ?? null
  return record.previousSecretHash !== null && record.previousSecretHash !== undefined && until !== null && until > now ? until : null
}

/**
 * Which secret `secret` is: the application's current one, its previous one within the
 * grace of the last rotation, or neither (`undefined`). Both hashes are compared in
 * constant time, whichever matches, so the time taken does not say which.
 */
export function matchingSecret(record: ApplicationRecord, secret: string, now = Date.now()): SecretMatch | undefined {
  const current = secretMatches(secret, record.secretHash)
  const previous = graceUntil(record, now) !== null && secretMatches(secret, record.previousSecretHash!)
  return current ? 'current' : previous ? 'previous' : undefined
}

/** Whether `secret` is the application's secret token, or its previous one within the grace of the last rotation. */
export function applicationSecretMatches(record: ApplicationRecord, secret: string, now = Date.now()): boolean {
  return matchingSecret(record, secret, now) !== undefined
}

/**
 * The grace a rotation asked for, checked, or the configured one.
 * @throws {TypeError} for anything but a whole number of ms from 0 to 7 days, or an unknown option
 */
export function rotationGrace(options: RotateSecretOptions, configured: number): number {
  optionsObject('rotateSecret() options', options, ['graceMs'])
  return options.graceMs === undefined ? configured : secretGrace('graceMs', options.graceMs, MAX_SECRET_GRACE_MS)
}

/**
 * Replaces the secret token: the old one is kept, hashed, for `graceMs` (none with 0);
 * the one before it stops at once.
 * @returns the new secret
 * @throws {NotFoundError} when there is no such application
 * @throws {PlatformError} `conflict` when another rotation overtook this one
 */
export async function rotateSecret(store: GateStore, appToken: string, graceMs: number, changed: (appToken: string) => void): Promise<string> {
  const current = await store.getApplication(appToken)
  if (current === undefined) throw noSuchApplication(appToken)
  const secretToken = randomToken(32)
  const secretHash = sha256(secretToken)
  const now = Date.now()
  const record = await store.updateApplication(appToken, {
    secretHash,
    previousSecretHash: graceMs === 0 ? null : current.secretHash,
    previousSecretExpiresAt: graceMs === 0 ? null : now + graceMs,
    updatedAt: now,
  })
  changed(appToken)
  if (record === undefined) throw noSuchApplication(appToken)
  // Two rotations at once both read the same secret; the last write wins. The caller
  // whose secret was overwritten must not be handed a secret that never works.
  const after = await store.getApplication(appToken)
  if (after !== undefined && after.secretHash !== secretHash) throw new PlatformError('conflict', 'The secret token was rotated again at the same time; use the secret that rotation gave')
  return secretToken
}

/**
 * Ends the grace of the previous secret at once: it was seen in clear. The application
 * already has its new secret, so nothing that was updated breaks. The store has no
 * compare-and-set for this; a rotation that lands between the read and this write loses
 * its own grace, which fails safe (the new secret works).
 * @returns `false` when the application is gone
 */
export async function retirePreviousSecret(store: GateStore, record: ApplicationRecord): Promise<boolean> {
  const updated = await store.updateApplication(record.appToken, { previousSecretHash: null, previousSecretExpiresAt: null, updatedAt: Date.now() })
  return updated !== undefined
}

export function noSuchApplication(appToken: string): NotFoundError {
  return new NotFoundError(`No application has the app token ${JSON.stringify(appToken.slice(0, 40))}`)
}
