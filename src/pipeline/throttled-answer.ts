/**
 * What the throttle (./throttle.ts) sends with its verdict on a single limit: the legacy
 * `X-RateLimit-*` headers, and the 429 whose message says which budget is spent.
 */
import { retryAfterSeconds, ThrottledError } from '../errors.js'
import type { RateResult } from '../limits/gcra.js'

/** `X-RateLimit-Reset` is epoch seconds when the whole budget is back, as GitHub sends it. */
export function legacyHeaders(headers: Record<string, string>, limit: number, result: RateResult): void {
  headers['x-ratelimit-limit'] = String(limit)
  headers['x-ratelimit-remaining'] = String(result.remaining)
  headers['x-ratelimit-reset'] = String(Math.ceil((Date.now() + result.resetMs) / 1000))
}

/** The 429's message says which budget is spent: the application's, everyone's, or this address's. */
export function throttledError(budget: 'application' | 'shared' | 'address', limit: number, windowMs: number, result: RateResult, headers: Record<string, string>): ThrottledError {
  const retryAfter = retryAfterSeconds(result.retryAfterMs)
  const windowS = Math.round(windowMs / 1000)
  const register = 'or register an application and send its token in X-App-Token'
  const message =
    budget === 'application'
      ? `Too many requests: this application's limit of ${limit} requests per ${windowS} seconds is used up; retry in ${retryAfter} seconds`
      : budget === 'shared'
        ? `Too many requests: requests without an app token share a limit of ${limit} per ${windowS} seconds; retry in ${retryAfter} seconds, ${register}`
        : `Too many requests: requests without an app token are limited to ${limit} per ${windowS} seconds from each address; retry in ${retryAfter} seconds, ${register}`
  return new ThrottledError(message, result.retryAfterMs, headers)
}
