/**
 * Suspending an application and resuming it: `gate.applications.suspend` and `resume`.
 * A suspension is two fields of the record (`suspendedAt`, `suspensionReason`), written in
 * one patch, so nothing of the application is deleted (its usage, grants, tokens, keys and
 * secret stay) and resuming gives everything back at once. The patch goes out as the
 * store's change notice like any other change, so every instance forgets its cached copy.
 *
 * @see docs/guides/applications.md "Suspending an application"
 */
import type { Emit } from '../events.js'
import { isSuspended, type ApplicationRecord } from '../store/contract/applications.js'
import type { GateStore } from '../store/store.js'
import { optionsObject } from '../util/validate.js'
import { shownTextProblem } from './application-names.js'
import { noSuchApplication } from './secret-rotation.js'

/** The longest suspension reason, in UTF-16 code units: it travels in every refusal's message. */
export const MAX_SUSPENSION_REASON_LENGTH = 500

/** What {@link Applications.suspend} takes. */
export interface SuspendApplicationOptions {
  /**
   * Why, in words for the application's developers: it is the message of every refused
   * request (`application_suspended`) and shown to the owner. 1 to 500 characters, trimmed,
   * no control, format or line separator character (as an application name).
   */
  reason: string
}

/** A suspended application's state, as {@link Application.suspended} shows it. */
export interface ApplicationSuspension {
  /** The operator's reason. */
  readonly reason: string
  /** When the suspension began (epoch ms); a new reason keeps it. */
  readonly since: number
}

/** The suspension of a record, or `null` while it is active (a record from before suspensions included). */
export function suspensionOf(record: ApplicationRecord): ApplicationSuspension | null {
  if (!isSuspended(record)) return null
  return { reason: record.suspensionReason ?? '', since: record.suspendedAt as number }
}

/**
 * The reason of a suspension, checked and trimmed.
 * @throws {TypeError} naming `reason` for anything but 1 to 500 characters that can be shown
 */
export function checkSuspensionReason(options: unknown): string {
  if (typeof options !== 'object' || options === null) throw new TypeError('open-data-gate: suspend() takes { reason }: why, in words its developers will read')
  optionsObject('suspend() options', options, ['reason'])
  const reason = (options as { reason?: unknown }).reason
  const problem = shownTextProblem('the reason', reason, MAX_SUSPENSION_REASON_LENGTH)
  if (problem !== undefined) throw new TypeError(`open-data-gate: suspend() { reason }: ${problem}`)
  return (reason as string).trim()
}

/**
 * Suspends, or gives a suspended application a new reason (keeping when it began).
 * @throws {NotFoundError} when there is no such application
 * @throws {TypeError} when the store did not keep the suspension (a store written before it)
 */
export async function suspendApplication(store: GateStore, appToken: string, reason: string, changed: (appToken: string) => void, emit: Emit): Promise<ApplicationRecord> {
  const current = await store.getApplication(appToken)
  if (current === undefined) throw noSuchApplication(appToken)
  const before = suspensionOf(current)
  const now = Date.now()
  const since = before?.since ?? now
  const record = await store.updateApplication(appToken, { suspendedAt: since, suspensionReason: reason, updatedAt: now })
  changed(appToken)
  if (record === undefined) throw noSuchApplication(appToken)
  if (record.suspendedAt !== since || record.suspensionReason !== reason) {
    // A store that drops the fields would let the application through while reporting it suspended.
    throw new TypeError("open-data-gate: the store's updateApplication did not keep suspendedAt and suspensionReason; a store must save both (see the store contract)")
  }
  emit('applicationSuspended', { appToken, reason, since, previousReason: before?.reason ?? null })
  return record
}

/**
 * Resumes a suspended application; an active one is left as it is (no event).
 * @throws {NotFoundError} when there is no such application
 */
export async function resumeApplication(store: GateStore, appToken: string, changed: (appToken: string) => void, emit: Emit): Promise<ApplicationRecord> {
  const current = await store.getApplication(appToken)
  if (current === undefined) throw noSuchApplication(appToken)
  const before = suspensionOf(current)
  if (before === null) return current
  const record = await store.updateApplication(appToken, { suspendedAt: null, suspensionReason: null, updatedAt: Date.now() })
  changed(appToken)
  if (record === undefined) throw noSuchApplication(appToken)
  emit('applicationResumed', { appToken, reason: before.reason, since: before.since })
  return record
}
