/**
 * An optional capability of a store that holds records and rate counters together: the
 * store work of one authenticated request (a rate step and the credential's records) in one
 * round trip. The gate works without it, with one call per record and one per rate step;
 * with it, an OAuth token, an API key or a verified password costs the store one round
 * trip, as an app token does.
 *
 * The gate still makes every decision itself, from what the call returns: which budget
 * counted the request, whether the credential verifies (secrets are compared by the gate,
 * in constant time), which error a refused request gets. The store only has to do, in one
 * step, what the separate calls would have done one after the other.
 */
import type { RateResult } from '../../limits/gcra.js'
import type { LimitResult, LimitStep } from '../../limits/limit-steps.js'
import type { ApiKeyRecord } from './api-keys.js'
import type { Awaitable } from './lifecycle.js'
import type { AccessTokenRecord } from './oauth.js'
import type { UserRecord } from './users.js'

/** One rate step, as `consumeRate` takes it. */
export interface RateStep {
  readonly key: string
  readonly limit: number
  readonly windowMs: number
  readonly cost: number
}

/** The record a request's credential needs, besides the rate step. */
export type CredentialLookup =
  /** An access token by its hash, and its user (`userId`) when the token is live at `now`. */
  | { readonly kind: 'accessToken'; readonly tokenHash: string; readonly now: number }
  /** An API key by its id, and its user when the key exists and is not revoked. */
  | { readonly kind: 'apiKey'; readonly keyId: string }
  /** A user by id (a password verified earlier: the gate checks the hash is still the one it verified). */
  | { readonly kind: 'user'; readonly userId: string }

/** What every {@link RequestLookup} has: the credential, and which budget it is counted under. */
interface LookupOf {
  /**
   * The credential's records. With `budget: 'token'` (access tokens only) it is read first,
   * and decides the step: a token live at `now` (present, not revoked, `expiresAt > now`)
   * takes the step `rate` (or `limits`), provided its `appToken` is `appToken` when one is
   * given (else no step at all: the gate refuses the request); any other token takes the
   * step `otherwise` (or `otherwiseLimits`), or none when it is `null`. With
   * `budget: 'fixed'` the step is taken first, and the records are read only when it is
   * allowed.
   */
  readonly credential: CredentialLookup
  readonly budget: 'token' | 'fixed'
  /** `budget: 'token'` only: the application a live token must belong to. */
  readonly appToken?: string
}

/** A lookup whose budget is one rate step, as `consumeRate` takes it. */
export interface RateStepLookup extends LookupOf {
  readonly rate: RateStep
  /** `budget: 'token'` only: the step of a token that is not live. */
  readonly otherwise?: RateStep | null
  readonly limits?: undefined
  readonly otherwiseLimits?: undefined
}

/**
 * A lookup whose budget is several limits (a plan), taken all or nothing as `consumeLimits`
 * takes them: allowed when every one of them is. The gate sends it only to a store that has
 * `consumeLimits` as well as `lookupRequest`; such a store must honour it.
 */
export interface LimitsLookup extends LookupOf {
  /** The limits of the step, at least one. */
  readonly limits: readonly LimitStep[]
  /** `budget: 'token'` only: the limits of a token that is not live. */
  readonly otherwiseLimits?: readonly LimitStep[] | null
  readonly rate?: undefined
  readonly otherwise?: undefined
}

/** What {@link RequestLookupStore.lookupRequest} does, in this order: see {@link LookupOf.credential}. */
export type RequestLookup = RateStepLookup | LimitsLookup

/** The answer of {@link RequestLookupStore.lookupRequest}. */
export interface RequestLookupResult {
  /** The step taken: `'rate'`, `'otherwise'`, or `null` for none. */
  readonly stepped: 'rate' | 'otherwise' | null
  /**
   * The step's result, when one was taken. With `limits`, the first refused limit's result,
   * or the first limit's when all were allowed: `result.allowed` says whether the step was taken.
   */
  readonly result: RateResult | null
  /** With `limits`, when a step was taken: every limit's result, in the order of the step's limits. */
  readonly results?: LimitResult[]
  /** The access token or API key read (`undefined`: there is none), or not read (the field is absent). */
  readonly accessToken?: AccessTokenRecord | undefined
  readonly apiKey?: ApiKeyRecord | undefined
  /** The user, when it was read (`undefined`: there is none). */
  readonly user?: UserRecord | undefined
}

/**
 * The optional capability. A store that cannot do a request's work in one round trip
 * leaves the method out: the gate then makes the separate calls. The gate uses it only when
 * the store holds the rate counters too (no separate `rateStore`). RedisStore has it on a
 * single server (one script) and on Cluster, where one request's keys live on several
 * nodes: there it sends their commands at once, which is one round trip once the store has
 * seen the credential (see `src/store/redis/cluster-lookup.ts`).
 */
export interface RequestLookupStore {
  /**
   * The rate step and records of one request, in one round trip, as {@link RequestLookup}
   * describes, atomically or not (each part must be what its separate call would have
   * answered at some moment during the call). Records may be read before the step is known
   * to be allowed, as long as the answer leaves out what the contract would not have read.
   *
   * One leeway, for a store that cannot read the token before it steps (RedisStore on
   * Cluster): with `budget: 'token'` it may take the step the token's unchanging facts
   * predict (its application and expiry), at the same time as it reads the token, provided
   * that when the token turns out revoked it gives that step back and takes the right one
   * before it answers. The answer is then what the contract says; the budget of `rate` held
   * one count more for that round trip, so a concurrent request at the very edge of it may
   * have been refused.
   */
  lookupRequest?(lookup: RequestLookup): Awaitable<RequestLookupResult>
}

/** The budget a lookup takes: one rate step, or several limits. */
export type LookupBudget = RateStep | readonly LimitStep[]

/** A lookup's two budgets: the step of a live token (or of a fixed budget), and the other one. */
export function lookupBudgets(lookup: RequestLookup): { readonly rate: LookupBudget; readonly otherwise: LookupBudget | null } {
  return lookup.limits === undefined ? { rate: lookup.rate, otherwise: lookup.otherwise ?? null } : { rate: lookup.limits, otherwise: lookup.otherwiseLimits ?? null }
}

/**
 * A step's result as a lookup carries it until it answers: for several limits, their
 * summary ({@link summaryResult}) with every limit's result in `results`, which
 * {@link withLimitResults} then moves to the answer's own field.
 */
export interface TakenStep extends RateResult {
  readonly results?: LimitResult[]
}

/** The answer with several limits' results in `results`, and their summary alone in `result`. */
export function withLimitResults(out: RequestLookupResult): RequestLookupResult {
  const taken = out.result as TakenStep | null
  if (taken?.results === undefined) return out
  const { results, ...result } = taken
  return { ...out, result, results }
}

/** What a lookup answers for several limits' results: the first refused one, or the first. */
export function summaryResult(results: readonly LimitResult[]): RateResult {
  const first = results.find((result) => !result.allowed) ?? results[0]
  return first ?? { allowed: true, remaining: 0, resetMs: 0, retryAfterMs: 0 }
}
