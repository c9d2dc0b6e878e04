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

/** What {@link RequestLookupStore.lookupRequest} does, in this order. */
export interface RequestLookup {
  /**
   * The credential's records. With `budget: 'token'` (access tokens only) it is read first,
   * and decides the step: a token live at `now` (present, not revoked, `expiresAt > now`)
   * takes the step `rate`, provided its `appToken` is `appToken` when one is given (else no
   * step at all: the gate refuses the request); any other token takes the step `otherwise`,
   * or none when it is `null`. With `budget: 'fixed'` the step `rate` is taken first, and
   * the records are read only when it is allowed.
   */
  readonly credential: CredentialLookup
  readonly budget: 'token' | 'fixed'
  readonly rate: RateStep
  /** `budget: 'token'` only: the step of a token that is not live. */
  readonly otherwise?: RateStep | null
  /** `budget: 'token'` only: the application a live token must belong to. */
  readonly appToken?: string
}

/** The answer of {@link RequestLookupStore.lookupRequest}. */
export interface RequestLookupResult {
  /** The step taken: `'rate'`, `'otherwise'`, or `null` for none. */
  readonly stepped: 'rate' | 'otherwise' | null
  /** The step's result, when one was taken. */
  readonly result: RateResult | null
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
