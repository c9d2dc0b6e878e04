/**
 * One budget option (`{ limit, windowMs }` or `false`) resolved: the throttle's policies and
 * the per-user and per-address budgets all take this shape.
 */
import type { RatePolicyOptions, ResolvedPolicy } from './options.js'
import { optionNames, positiveInteger, rejectUnknownKeys } from '../util/validate.js'

/** One budget option (`{ limit, windowMs }` or `false`), its defaults filled in. */
export function resolvePolicy(
  name: string,
  input: RatePolicyOptions | false | undefined,
  defaults: RatePolicyOptions,
  header: ResolvedPolicy['name'],
): ResolvedPolicy | null {
  if (input === false) return null
  if (input !== undefined && (typeof input !== 'object' || input === null)) {
    throw new TypeError(`open-data-gate: ${name} must be { limit, windowMs } or false`)
  }
  // `throttle.anonymous` has more keys; its caller checks them.
  if (input !== undefined && !name.endsWith('anonymous')) rejectUnknownKeys(name, input, optionNames<RatePolicyOptions>({ limit: true, windowMs: true }))
  const limit = input?.limit ?? defaults.limit
  const windowMs = input?.windowMs ?? defaults.windowMs
  positiveInteger(`${name}.limit`, limit)
  positiveInteger(`${name}.windowMs`, windowMs)
  return { name: header, limit, windowMs }
}

/** A resolved policy as a plain budget (no header name), for the budgets that send no `RateLimit` headers. */
export function budget(policy: ResolvedPolicy | null): RatePolicyOptions | null {
  return policy === null ? null : { limit: policy.limit, windowMs: policy.windowMs }
}
