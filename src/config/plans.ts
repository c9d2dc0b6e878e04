/**
 * Plans: named lists of limits an application's requests are decided by, all together
 * (`throttle.application` is the default plan; `throttle.plans` names others, which an
 * operator assigns with `gate.applications.update(appToken, { plan })`). A limit is a
 * rolling window (`windowMs`, GCRA, as the single limit always was) or a calendar quota
 * (`period: 'day' | 'month'` in a time zone), counted per application or per application
 * and client address, enforced or in shadow (counted, never refusing) until `enforceFrom`.
 * @see docs/guides/plans.md
 */
import { optionNames, optionsObject, positiveInteger } from '../util/validate.js'

/** One limit of a plan. */
export interface LimitOptions {
  /**
   * Its name, in `RateLimit-Policy` and in a 429's `data`: lower-case letters, digits, `-`
   * and `_`, at most 40. Default `app` for a plan's only limit; required when a plan has several.
   */
  name?: string
  /** Requests per window, or per period. */
  limit: number
  /** A rolling window, in ms (GCRA: the budget comes back continuously). */
  windowMs?: number
  /** Or a calendar quota: the whole budget comes back at the start of each day or month. */
  period?: 'day' | 'month'
  /** The quota's time zone (IANA, such as `America/New_York`). Default `UTC`. */
  timeZone?: string
  /**
   * `application` (the default): one budget per application. `address`: one per application
   * and client address (IPv6 by `throttle.anonymous.ipv6Subnet`), the platform's documented
   * rule for a shared app token.
   */
  per?: 'application' | 'address'
  /**
   * Counted, never refusing: a request it would have refused is let through and counted as
   * an outcome of its own in usage. Default `false`.
   */
  shadow?: boolean
  /** With `shadow`: when it starts refusing (an ISO 8601 date, or epoch ms). */
  enforceFrom?: string | number
}

/** A limit, resolved. */
export interface ResolvedLimit {
  readonly name: string
  readonly limit: number
  /** The rolling window, or `null` for a quota. */
  readonly windowMs: number | null
  readonly period: 'day' | 'month' | null
  readonly timeZone: string
  readonly per: 'application' | 'address'
  readonly shadow: boolean
  /** With `shadow`: epoch ms from which it refuses; `null`: never. */
  readonly enforceFrom: number | null
}

/** A plan, resolved: its limits in the order given. */
export interface ResolvedPlan {
  readonly name: string
  readonly limits: readonly ResolvedLimit[]
}

/** The plan an application without one of its own is on. */
export const DEFAULT_PLAN = 'default'

const LIMIT_OPTION_NAMES = optionNames<LimitOptions>({ name: true, limit: true, windowMs: true, period: true, timeZone: true, per: true, shadow: true, enforceFrom: true })
const NAME = /^[a-z0-9_-]{1,40}$/
const PLAN_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/

/** Whether a time zone is one `Intl` knows. */
function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
    return true
  } catch {
    return false
  }
}

/** One limit. @throws {TypeError} naming the option */
export function resolveLimit(option: string, input: unknown, only: boolean): ResolvedLimit {
  const limit = optionsObject(option, input as LimitOptions, LIMIT_OPTION_NAMES)
  const name = limit.name ?? (only ? 'app' : undefined)
  if (name === undefined) throw new TypeError(`open-data-gate: ${option}.name is needed when a plan has several limits`)
  if (typeof name !== 'string' || !NAME.test(name)) throw new TypeError(`open-data-gate: ${option}.name must be 1 to 40 lower-case letters, digits, - or _, got ${JSON.stringify(name)}`)
  positiveInteger(`${option}.limit`, limit.limit)
  if ((limit.windowMs === undefined) === (limit.period === undefined)) throw new TypeError(`open-data-gate: ${option} needs either windowMs (a rolling window) or period ('day' or 'month', a calendar quota)`)
  if (limit.windowMs !== undefined) positiveInteger(`${option}.windowMs`, limit.windowMs)
  if (limit.period !== undefined && limit.period !== 'day' && limit.period !== 'month') throw new TypeError(`open-data-gate: ${option}.period must be 'day' or 'month', got ${JSON.stringify(limit.period)}`)
  if (limit.timeZone !== undefined && limit.period === undefined) throw new TypeError(`open-data-gate: ${option}.timeZone applies to a period (a calendar quota) only`)
  const timeZone = limit.timeZone ?? 'UTC'
  if (typeof timeZone !== 'string' || !isTimeZone(timeZone)) throw new TypeError(`open-data-gate: ${option}.timeZone must be an IANA time zone such as 'UTC' or 'America/New_York', got ${JSON.stringify(timeZone)}`)
  const per = limit.per ?? 'application'
  if (per !== 'application' && per !== 'address') throw new TypeError(`open-data-gate: ${option}.per must be 'application' or 'address', got ${JSON.stringify(per)}`)
  if (limit.shadow !== undefined && typeof limit.shadow !== 'boolean') throw new TypeError(`open-data-gate: ${option}.shadow must be a boolean`)
  let enforceFrom: number | null = null
  if (limit.enforceFrom !== undefined) {
    if (limit.shadow !== true) throw new TypeError(`open-data-gate: ${option}.enforceFrom applies to a shadow limit (shadow: true) only`)
    enforceFrom = typeof limit.enforceFrom === 'number' ? limit.enforceFrom : typeof limit.enforceFrom === 'string' ? Date.parse(limit.enforceFrom) : Number.NaN
    if (!Number.isFinite(enforceFrom)) throw new TypeError(`open-data-gate: ${option}.enforceFrom must be an ISO 8601 date or epoch ms, got ${JSON.stringify(limit.enforceFrom)}`)
  }
  return { name, limit: limit.limit, windowMs: limit.windowMs ?? null, period: limit.period ?? null, timeZone, per, shadow: limit.shadow === true, enforceFrom }
}

/** One plan: a limit or a list of 1 to 10, their names distinct. @throws {TypeError} naming the option */
export function resolvePlan(option: string, name: string, input: unknown): ResolvedPlan {
  const list = Array.isArray(input) ? input : [input]
  if (list.length === 0 || list.length > 10) throw new TypeError(`open-data-gate: ${option} must be a limit or a list of 1 to 10 limits`)
  const limits = list.map((limit, i) => resolveLimit(Array.isArray(input) ? `${option}[${i}]` : option, limit, list.length === 1))
  const names = new Set<string>()
  for (const limit of limits) {
    if (names.has(limit.name)) throw new TypeError(`open-data-gate: ${option} names the limit ${JSON.stringify(limit.name)} twice`)
    names.add(limit.name)
  }
  return { name, limits }
}

/** `throttle.plans`: the named plans beside the default one. @throws {TypeError} naming the option */
export function resolvePlans(input: unknown): ReadonlyMap<string, ResolvedPlan> {
  const plans = new Map<string, ResolvedPlan>()
  if (input === undefined) return plans
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new TypeError('open-data-gate: throttle.plans must be an object of plans by name, such as { partner: [{ name: "hour", limit: 10000, windowMs: 3600000 }] }')
  for (const [name, plan] of Object.entries(input)) {
    if (!PLAN_NAME.test(name) || name === DEFAULT_PLAN) throw new TypeError(`open-data-gate: throttle.plans.${name}: a plan's name is 1 to 64 lower-case letters, digits, - or _, and not '${DEFAULT_PLAN}'`)
    plans.set(name, resolvePlan(`throttle.plans.${name}`, name, plan))
  }
  return plans
}
