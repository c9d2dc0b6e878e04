/**
 * Which plan an application is on: `gate.applications.update(appToken, { plan })` takes a
 * plan's name, checked for its shape and against the plans the gate's configuration knows,
 * or `null` for the configured default plan.
 */
import { isPlanName } from '../rules/plan-names.js'

/**
 * `plan` as a record keeps it: a known plan's name, or `null` (the default plan).
 * @param known the names of the configured plans; absent or empty, only `null` is accepted
 * @throws {TypeError} naming `plan`, for a value that is not a plan name or null, and for a
 *   name no configured plan has (listing the ones there are)
 */
export function checkPlan(plan: unknown, known: ReadonlySet<string> | undefined): string | null {
  if (plan === null) return null
  if (!isPlanName(plan)) {
    throw new TypeError(`open-data-gate: plan must be a plan name (1 to 64 lowercase letters, digits, "-" or "_", starting with a letter or digit) or null for the default plan, got ${describe(plan)}`)
  }
  if (known === undefined || known.size === 0) {
    throw new TypeError(`open-data-gate: plan ${JSON.stringify(plan)} is not configured: the gate has no plans, so plan can only be null (the default)`)
  }
  if (!known.has(plan)) {
    throw new TypeError(`open-data-gate: plan ${JSON.stringify(plan)} is not configured; the plans are: ${[...known].sort().join(', ')} (or null for the default)`)
  }
  return plan
}

function describe(value: unknown): string {
  if (typeof value !== 'string') return value === undefined ? 'undefined' : typeof value
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)
}
