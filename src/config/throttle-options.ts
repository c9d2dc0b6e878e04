/**
 * The `throttle` option of {@link createGate}: the application and anonymous budgets, the
 * plans, and what the throttle does when the store fails.
 * @see docs/guides/throttling.md, docs/guides/plans.md
 */
import type { LocalCountingOptions } from './local-counting.js'
import type { LimitOptions } from './plans.js'
import type { RatePolicyOptions } from './rate-policy-options.js'

/** The budget of requests that carry no application token. */
export interface AnonymousPolicyOptions extends RatePolicyOptions {
  /**
   * `'shared'`: one pool for every request without a token (the spec's reading).
   * `'ip'`: one pool per client address (what the platform does today). Default `'ip'`.
   */
  scope?: 'shared' | 'ip'
  /** With `scope: 'ip'`, IPv6 clients are counted per prefix of this many bits. Default 56. */
  ipv6Subnet?: number
}

/** What to do when the store fails or times out during a throttling step. */
export type StoreFailureMode =
  /** Let the request through unthrottled (Kong, Envoy). */
  | 'fail-open'
  /** Answer 503 `service_unavailable` (express-rate-limit, @fastify/rate-limit). */
  | 'fail-closed'
  /** Throttle in this process's memory until the store answers again. */
  | 'memory'

/** Throttling options. */
export interface ThrottleOptions {
  /**
   * Per registered application, keyed by its app token: the default plan. One limit
   * (`{ limit, windowMs }`, default 1000 per hour), or a list of named limits decided
   * together (rolling windows, calendar quotas, per address, shadow: docs/guides/plans.md);
   * `false` turns it off.
   */
  application?: RatePolicyOptions | LimitOptions[] | false
  /** Named plans beside the default one, assigned per application (`gate.applications.update(appToken, { plan })`): docs/guides/plans.md. */
  plans?: Record<string, LimitOptions | LimitOptions[]>
  /** Requests without a token. Default 60 per hour per client address; `false` turns it off. */
  anonymous?: AnonymousPolicyOptions | false
  /** Also send the legacy `X-RateLimit-Limit/-Remaining/-Reset` headers. Default `false`. */
  legacyHeaders?: boolean
  /** Default `'memory'`. */
  onStoreError?: StoreFailureMode
  /**
   * Which budget a request authenticated with an OAuth access token, and without an
   * `X-App-Token`, counts against. `'application'` (the default): the application the
   * token was issued to, since the token is that application's credential (the spec counts
   * usage "for that application"). `'anonymous'`: the anonymous budget, the literal reading
   * (no application token, no application).
   */
  oauthTokenBudget?: 'application' | 'anonymous'
  /**
   * Local-first counting for hot applications: an instance takes a share of an application's
   * budget from the store as a lease and decides its requests in memory until the lease is
   * spent or expires, one store command per lease rather than per request. Off by default
   * (`false`); on for the plans and applications it names. With L = `units`, T = `ttlMs`
   * and N instances, an application gets at most min(N × L, ⌈T × limit / windowMs⌉)
   * requests more than without it in any interval: {@link LocalCountingOptions},
   * docs/guides/throttling.md "Local-first counting".
   */
  local?: LocalCountingOptions | false
}
