/**
 * Step 7, the throttle, and the credential's records in the same store round trip. The
 * throttle comes before verification, so a throttled client cannot make the server run
 * scrypt.
 *
 * Every request with credentials takes one path, whatever the store: one lookup
 * (`RequestLookup`) that takes the rate step and reads the records the credential needs.
 * A store that does it in one round trip (`lookupRequest`: RedisStore) is asked directly;
 * for any other, the gate composes it from the store's separate calls
 * (src/store/composed-lookup.ts).
 *
 * A lookup that fails takes no second step: the store may have taken it before the
 * failure reached the gate (Redis paused past the timeout runs the script when it resumes;
 * a script can fail on a record after its step; a reply lost with its connection), and a
 * second step would count the request twice. The throttle's verdict comes from the
 * store-failure mode instead (`Throttle.checkFailed`: this process's count, no verdict, or
 * 503), and verification reads the records itself, meeting the store's failure handling (a
 * 503 for a record the store cannot give). An access token that decides its own budget is
 * read first, so that the verdict is on the budget it decides.
 *
 * What cannot be exact: the gate cannot know whether the store took the step. If it did,
 * the request counts once in the store (when a paused Redis resumes) and, with
 * `onStoreError: 'memory'`, once in this process's own count too, which serves only while
 * the store is failing; the store never counts it twice.
 */
import type { Authenticator } from '../authenticate.js'
import type { GateOutcome } from '../context.js'
import type { RequestState } from '../request-state.js'
import type { Step } from '../run-steps.js'
import type { Throttle, ThrottlePass, ThrottlePlan } from '../throttle.js'
import type { LimitStep } from '../../limits/limit-steps.js'
import type { TokenBudgets } from './token-budget.js'
import { API_KEY_ID } from '../../rules/credential-shapes.js'
import { sha256 } from '../../secrets/tokens.js'
import { isLiveAccessToken } from '../../store/contract/oauth.js'
import type { Awaitable, CredentialLookup, RequestLookup, RequestLookupResult } from '../../store/store.js'
import { isPromiseLike } from '../../util/awaitable.js'

/** The store's lookup of one request: its own `lookupRequest`, or one composed of its separate calls. */
export type LookupRequest = (lookup: RequestLookup) => Awaitable<RequestLookupResult>

export function throttleStep(throttle: Throttle, lookupRequest: LookupRequest, auth: Authenticator, tokens: TokenBudgets): Step {
  /** The verdict on a request without a lookup: no credential records to read with the step. */
  const check = (state: RequestState): Awaitable<undefined> => {
    // Spelled out rather than andThen(...): no closure is made when the store answers at once.
    return passed(state, throttle.check(state.application, state.client, state))
  }

  /** The records the credential needs beside the step, or `undefined`: none to read ahead. */
  const credentialOf = (state: RequestState): CredentialLookup | undefined => {
    const credentials = state.credentials
    if (credentials === undefined) return undefined
    if (credentials.kind === 'token') {
      const read = state.read
      if (read === undefined || !('record' in read)) return { kind: 'accessToken', tokenHash: state.tokenHash ?? sha256(credentials.token), now: Date.now() }
      return isLiveAccessToken(read.record, Date.now()) ? { kind: 'user', userId: read.record.userId } : undefined
    }
    if (API_KEY_ID.test(credentials.user)) return { kind: 'apiKey', keyId: credentials.user }
    // A password only while it is in the cache of verified ones: a cold one runs scrypt, and the store's round trips do not count beside it.
    const userId = auth.cachedPasswordUser(credentials.user, credentials.password)
    return userId === undefined ? undefined : { kind: 'user', userId }
  }

  const step: Step = (state) => {
    // Decided from a lease (./lease.ts): verification reads the credential's records itself.
    if (state.leased) return undefined
    const credential = credentialOf(state)
    if (credential === undefined && !state.budgetFromToken) return check(state)
    const client = state.client
    const rate = throttle.plan(state.application, client)
    const otherwise = state.budgetFromToken && state.sent === null ? throttle.plan(null, client) : rate
    // No step to take in the store (no policy applies, or this process knows the key is
    // over its limit): a token's own budget is read first, then the throttle decides without a store call.
    if (rate === undefined || otherwise === undefined) return state.budgetFromToken ? after(tokens.readToken(state), () => step(state)) : check(state)
    let lookup: RequestLookup
    if (rate.limits === undefined && otherwise.limits === undefined) {
      lookup = state.budgetFromToken
        ? { credential: credential as CredentialLookup, budget: 'token', rate, otherwise, appToken: rate.application?.appToken as string }
        : { credential: credential as CredentialLookup, budget: 'fixed', rate }
    } else {
      // A plan of several limits: the store takes them all or none (consumeLimits), in the same round trip.
      lookup = state.budgetFromToken
        ? { credential: credential as CredentialLookup, budget: 'token', limits: limitsOf(rate), otherwiseLimits: limitsOf(otherwise), appToken: rate.application?.appToken as string }
        : { credential: credential as CredentialLookup, budget: 'fixed', limits: limitsOf(rate) }
    }
    let pending: Awaitable<RequestLookupResult>
    try {
      pending = lookupRequest(lookup)
    } catch (error) {
      return failed(state, error)
    }
    if (!isPromiseLike(pending)) return found(state, rate, otherwise, pending)
    return Promise.resolve(pending).then(
      (settled) => found(state, rate, otherwise, settled),
      (error: unknown) => failed(state, error),
    )
  }

  /** The verdict on the step the store took, and the records it read for verification. */
  const found = (state: RequestState, rate: ThrottlePlan, otherwise: ThrottlePlan, result: RequestLookupResult): Awaitable<GateOutcome | undefined> | undefined => {
    if (state.budgetFromToken) {
      tokens.learned(state.tokenHash as string, result.accessToken)
      // No step: a live token of another application than the one sent (a 403), or one
      // this process placed on the wrong budget. Its budget is decided from the token read.
      if (result.stepped === null) return after(tokens.decided(state, result.accessToken), () => step(state))
      state.budgetFromToken = false
      state.application = result.stepped === 'rate' ? rate.application : otherwise.application
    }
    // What verification reads: the records the lookup read, beside a token read before it.
    const before = state.read
    const read: { record?: RequestLookupResult['accessToken']; apiKey?: RequestLookupResult['apiKey']; user?: RequestLookupResult['user'] } = {}
    if (before !== undefined && 'record' in before) read.record = before.record
    if ('accessToken' in result) read.record = result.accessToken
    if ('apiKey' in result) read.apiKey = result.apiKey
    if ('user' in result) read.user = result.user
    state.read = read
    const plan = result.stepped === 'otherwise' ? otherwise : rate
    return passed(state, throttle.settle(plan, state.client, result.result as NonNullable<RequestLookupResult['result']>, result.results, state))
  }

  /** The lookup failed: the store-failure mode's verdict, without a second step. */
  const failed = (state: RequestState, error: unknown): Awaitable<undefined> => {
    const verdict = (): Awaitable<undefined> => passed(state, throttle.checkFailed(state.application, state.client, error, state))
    return state.budgetFromToken ? after(tokens.readToken(state), verdict) : verdict()
  }

  return step
}

/** A plan's steps as `consumeLimits` takes them: its limits, or its one rate step. */
function limitsOf(plan: ThrottlePlan): readonly LimitStep[] {
  return plan.limits?.steps ?? [{ kind: 'rate', key: plan.key, limit: plan.limit, windowMs: plan.windowMs, cost: plan.cost }]
}

/** `next()` once `first` settled: a step that has to wait on a read first. */
function after<S>(first: Awaitable<undefined>, next: () => S): S | Promise<Awaited<S>> {
  if (!isPromiseLike(first)) return next()
  return Promise.resolve(first).then(next) as Promise<Awaited<S>>
}

/** Keeps the throttle's verdict on the state; a promise only when the verdict is one (the lease step's too). */
export function passed(state: RequestState, pass: Awaitable<ThrottlePass | null>): Awaitable<undefined> {
  if (!isPromiseLike(pass)) {
    state.pass = pass
    return undefined
  }
  return Promise.resolve(pass).then((settled) => {
    state.pass = settled
    return undefined
  })
}
