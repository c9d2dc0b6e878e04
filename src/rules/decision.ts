/**
 * The record of one decided request: made once per request by the pipeline
 * (src/pipeline/request-state.ts) and read, once each, by what observes decisions (usage,
 * metrics, traces, the log, the request-id header). Named here, in the bottom layer, so
 * that each observer reads the one record without importing the pipeline that makes it.
 */
import type { AuthMethod } from './auth-methods.js'

/**
 * How a decision is counted: `allowed` for a request let through, or answered by the
 * gate's own endpoints without an error; `throttled` for a 429; `error` for a 5xx (the
 * store down, a failure); `refused` for any other 4xx (a made-up app token included).
 */
export type DecisionOutcome = 'allowed' | 'throttled' | 'refused' | 'error'

/** The budget a decided request counted against (the metrics' `policy`). */
export type DecisionPolicy = 'application' | 'anonymous'

/** The throttle's verdict on a request let through, as a decision carries it. */
export interface DecisionThrottle {
  readonly policy: 'application' | 'anonymous'
  /** The limit closest to refusing (the one `RateLimit` names). */
  readonly limit: number
  readonly windowMs: number
  readonly remaining: number
  /**
   * Under a plan, each of its enforced limits as the request left it (what the near-limit
   * alerts read, limit by limit); `undefined` for one limit of its own (named `app`).
   */
  readonly limits?: readonly DecisionLimit[]
}

/** One enforced limit of a plan, as a request it let through left it. */
export interface DecisionLimit {
  /** The limit's name in the plan. */
  readonly name: string
  readonly limit: number
  readonly remaining: number
  /** The rolling window in ms; for a quota, its current period's length. */
  readonly windowMs: number
  /** A quota's current period's start (epoch ms); `null` for a rolling window. */
  readonly periodStart: number | null
}

/** One decided request. */
export interface Decision {
  /** The request's id (`X-Request-Id`), or `undefined` with `requestId: false`. */
  readonly requestId: string | undefined
  /** The application whose budget and usage the request counts in, by app token; `null`: the anonymous pool. */
  readonly appToken: string | null
  /** How the request authenticated (`none` until it did). */
  readonly auth: AuthMethod
  /** The status of the gate's own answer, or `null` when the request goes on to the host's handler. */
  readonly status: number | null
  readonly outcome: DecisionOutcome
  /** Refused for an app token no application has: counted as one number, never in a bucket of its own. */
  readonly unknownAppToken: boolean
  /** The throttle's verdict on a request it let through, or `null`. */
  readonly throttle: DecisionThrottle | null
  /** What a 5xx answered (a failure, the store down), for the log and the traces; `undefined` otherwise. */
  readonly error: unknown
  /** Refused because its application is suspended (403 `application_suspended`): counted as an outcome of its own. */
  readonly suspended: boolean
  /**
   * The names of the shadow limits (`shadow: true`) that would have refused this request,
   * had they been enforced; empty for most. The request itself was decided without them.
   */
  readonly shadowed: readonly string[]
}

/** The outcome of an answer with `status` (`null`: let through). The one place statuses are sorted. */
export function outcomeOf(status: number | null): DecisionOutcome {
  if (status === null) return 'allowed'
  return status === 429 ? 'throttled' : status >= 500 ? 'error' : status >= 400 ? 'refused' : 'allowed'
}
