/**
 * `throttle.local`: local-first counting for hot applications. An instance takes a share of
 * an application's budget from the store as a lease (one GCRA step of cost = the lease's
 * size) and decides that application's requests in its own memory until the lease is spent
 * or expires (src/pipeline/leases.ts, src/pipeline/steps/lease.ts). Off by default; the
 * operator names the plans and the applications that count locally.
 * @see docs/guides/throttling.md "Local-first counting", docs/performance.md "Scaling"
 */
import { DEFAULT_PLAN, type ResolvedLimit, type ResolvedPlan } from './plans.js'
import { optionNames, optionsObject, positiveInteger } from '../util/validate.js'

/**
 * Local-first counting (`throttle.local`), for an application whose requests would
 * otherwise cost the store one command each. Only the rate step is leased: the application
 * record, its suspension and every credential are read as they are without it.
 *
 * **The bound.** With `units` = L, `ttlMs` = T, N instances, and the application's limit
 * `limit` per `windowMs` (one request per I = windowMs / limit): in any interval, the
 * application gets at most E = min(N × L, ⌈T / I⌉) requests more than the gate without
 * leases lets through (at most `limit` + ⌊t / I⌋ in any interval of length t). Below its
 * limit, it may be refused while up to L − 1 units are left in the store (an instance
 * refused a lease waits until it fits), while other instances hold units unspent (at most
 * L each), and after a lease expired unspent (its units count as spent); a lease lost with
 * a killed process costs at most L units, which the store gives back within L × I.
 * docs/guides/throttling.md "Local-first counting" derives it.
 */
export interface LocalCountingOptions {
  /**
   * L, the most units (requests) one lease holds. An instance starts with a lease of 1 and
   * doubles it each time it is spent within half of `ttlMs`, up to L; a lease that
   * expires with units left makes the next one the size of what was spent. Capped at the
   * application's limit. A store command per lease: an application that spends a whole
   * lease within `ttlMs` on each instance costs about one command per L requests.
   */
  units: number
  /** T, how long a lease may be spent, in ms from when it was asked for. Default 1000. */
  ttlMs?: number
  /**
   * The plans whose applications count locally: names of `throttle.plans`, or `'default'`
   * for `throttle.application`. A plan must be one rolling limit per application (not a
   * quota, a limit per address, a shadow limit, or several limits).
   */
  plans?: string[]
  /**
   * Applications, by app token, that count locally whatever their plan (the operator can
   * also put one on a plan named in `plans`). One on a plan of several limits is decided by
   * the store per request, as without this option.
   */
  applications?: string[]
}

/** `throttle.local`, resolved. */
export interface ResolvedLocalCounting {
  readonly units: number
  readonly ttlMs: number
  readonly plans: ReadonlySet<string>
  readonly applications: ReadonlySet<string>
}

const NAMES = optionNames<LocalCountingOptions>({ units: true, ttlMs: true, plans: true, applications: true })
export const DEFAULT_LEASE_TTL_MS = 1000

/** Whether a plan is one rolling limit per application, enforced: a plan a lease can take a share of. */
export function isLeasable(plan: ResolvedPlan): boolean {
  const only = plan.limits[0] as ResolvedLimit
  return plan.limits.length === 1 && only.windowMs !== null && only.per === 'application' && !only.shadow
}

/**
 * `throttle.local`, checked against the plans it names.
 * @param defaultPlan the default plan of several limits, or `null` when `throttle.application` is one limit (or off)
 * @param defaultOn whether `throttle.application` is on
 * @throws {TypeError} naming the option
 */
export function resolveLocalCounting(input: unknown, plans: ReadonlyMap<string, ResolvedPlan>, defaultPlan: ResolvedPlan | null, defaultOn: boolean): ResolvedLocalCounting | null {
  if (input === undefined || input === false) return null
  const local = optionsObject('throttle.local', input as LocalCountingOptions, NAMES)
  positiveInteger('throttle.local.units', local.units)
  const ttlMs = local.ttlMs ?? DEFAULT_LEASE_TTL_MS
  positiveInteger('throttle.local.ttlMs', ttlMs)
  const names = stringList('throttle.local.plans', local.plans)
  const applications = stringList('throttle.local.applications', local.applications)
  if (names.length === 0 && applications.length === 0) throw new TypeError('open-data-gate: throttle.local names no plan and no application: give plans (such as ["partner"]) or applications (app tokens)')
  for (const name of names) {
    const plan = name === DEFAULT_PLAN ? defaultPlan : plans.get(name)
    if (name === DEFAULT_PLAN && plan === null) {
      if (!defaultOn) throw new TypeError("open-data-gate: throttle.local.plans names 'default', but throttle.application is off")
      continue
    }
    if (plan === undefined || plan === null) throw new TypeError(`open-data-gate: throttle.local.plans names ${JSON.stringify(name)}, which is not a plan of throttle.plans (nor 'default')`)
    if (!isLeasable(plan)) throw new TypeError(`open-data-gate: throttle.local.plans names ${JSON.stringify(name)}, which is not one rolling limit per application (a quota, a limit per address, a shadow limit or several limits are decided by the store per request)`)
  }
  return { units: local.units, ttlMs, plans: new Set(names), applications: new Set(applications) }
}

function stringList(option: string, input: unknown): string[] {
  if (input === undefined) return []
  if (!Array.isArray(input) || !input.every((item) => typeof item === 'string' && item.length > 0)) throw new TypeError(`open-data-gate: ${option} must be a list of non-empty strings`)
  return input as string[]
}
