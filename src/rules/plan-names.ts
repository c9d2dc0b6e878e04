/**
 * What a plan's name looks like: 1 to 64 lowercase ASCII letters, digits, `-` or `_`,
 * starting with a letter or a digit (`free`, `partner-2026`). Plain enough to be a column
 * value, a hash field, a CLI argument and a metric attribute as it is. Named here, in the
 * bottom layer, so that the configuration that declares plans and the registry that puts
 * an application on one read the same rule.
 */

/** The shape of a plan name. */
export const PLAN_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/

/** Whether `name` has the shape of a plan name (not whether such a plan is configured). */
export function isPlanName(name: unknown): name is string {
  return typeof name === 'string' && PLAN_NAME.test(name)
}
