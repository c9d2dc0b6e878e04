/**
 * `lookupRequest` for a store that has none of its own (or whose rate counters live in a
 * separate `rateStore`): the same work from the store's separate calls, so that the gate
 * takes one path per credential whatever the store (src/pipeline/steps/throttle.ts).
 *
 * What it does is what the contract says (./contract/request-lookup.ts), in as few waits as
 * the calls allow: with `budget: 'fixed'`, the records are read while the step is on its
 * way (and left out of the answer when the step is refused); with `budget: 'token'`, the
 * token is read first (it decides the step), and its user while the step is on its way.
 *
 * Only the rate step's failure fails the lookup: the records' reads that fail are left out
 * of the answer (not read), so that verification reads them again and meets the store's
 * failure handling (a 503), while the step the store took stands, counted once.
 */
import type { ApiKeyRecord } from './contract/api-keys.js'
import { isLiveAccessToken, type AccessTokenRecord } from './contract/oauth.js'
import { lookupBudgets, summaryResult, withLimitResults, type CredentialLookup, type LookupBudget, type RequestLookup, type RequestLookupResult, type TakenStep } from './contract/request-lookup.js'
import type { UserRecord } from './contract/users.js'
import type { Awaitable, GateStore, RateStore } from './store.js'
import { isPromiseLike } from '../util/awaitable.js'

type Records = Pick<GateStore, 'getAccessToken' | 'getApiKey' | 'getUser'>
type Mutable<T> = { -readonly [K in keyof T]: T[K] }
/** A read that failed: left out of the answer. */
const UNREAD = Symbol('unread')
type Read<T> = T | typeof UNREAD

type Take = (budget: LookupBudget) => Awaitable<TakenStep>

/** The lookup of `records` and `rates` (the same store, or a separate rate store). */
export function composedLookup(records: Records, rates: Pick<RateStore, 'consumeRate' | 'consumeLimits'>): (lookup: RequestLookup) => Awaitable<RequestLookupResult> {
  const take: Take = (budget) => {
    if (!Array.isArray(budget)) {
      const rate = budget as Exclude<LookupBudget, readonly unknown[]>
      return rates.consumeRate(rate.key, rate.limit, rate.windowMs, rate.cost)
    }
    if (rates.consumeLimits === undefined) throw new TypeError('open-data-gate: a lookup of several limits needs a rate store with consumeLimits')
    return then(rates.consumeLimits(budget), (results) => ({ ...summaryResult(results), results }))
  }
  return (lookup) => {
    const answer = lookup.budget === 'token' ? tokenBudget(records, take, lookup) : fixedBudget(records, take, lookup)
    return lookup.limits === undefined ? answer : then(answer, withLimitResults)
  }
}

/** The step, with the credential's records read meanwhile. */
function fixedBudget(records: Records, take: Take, lookup: RequestLookup): Awaitable<RequestLookupResult> {
  const taken = take(lookupBudgets(lookup).rate)
  const read = readCredential(records, lookup.credential)
  return both(taken, read, (result, fields) => {
    if (!result.allowed) return { stepped: 'rate', result }
    fields.stepped = 'rate'
    fields.result = result
    return fields as RequestLookupResult
  })
}

/** The token first, then the step it decides, with its user read meanwhile. */
function tokenBudget(records: Records, step: Take, lookup: RequestLookup): Awaitable<RequestLookupResult> {
  const credential = lookup.credential as Extract<CredentialLookup, { kind: 'accessToken' }>
  const budgets = lookupBudgets(lookup)
  return then(records.getAccessToken(credential.tokenHash), (token): Awaitable<RequestLookupResult> => {
    const live = isLiveAccessToken(token, credential.now)
    if (live && lookup.appToken !== undefined && token.appToken !== lookup.appToken) return { stepped: null, result: null, accessToken: token }
    const rate = live ? budgets.rate : budgets.otherwise
    if (rate === null) return { stepped: null, result: null, accessToken: token }
    const stepped = live ? 'rate' : 'otherwise'
    if (!live) return then(step(rate), (result) => ({ stepped, result, accessToken: token }))
    return both(step(rate), guarded(records.getUser, records, token.userId), (result, user) => {
      const out: Mutable<RequestLookupResult> = { stepped, result, accessToken: token }
      if (result.allowed && user !== UNREAD) out.user = user
      return out
    })
  })
}

/** The records a credential needs: what the separate calls would read, a failed read left out. */
function readCredential(records: Records, credential: CredentialLookup): Awaitable<Partial<Mutable<RequestLookupResult>>> {
  switch (credential.kind) {
    case 'user':
      return then(guarded(records.getUser, records, credential.userId), (user) => (user === UNREAD ? {} : { user }))
    case 'apiKey':
      return then(guarded(records.getApiKey, records, credential.keyId), (apiKey: Read<ApiKeyRecord | undefined>) => {
        if (apiKey === UNREAD) return {}
        if (apiKey === undefined || apiKey.revokedAt !== null) return { apiKey }
        return then(guarded(records.getUser, records, apiKey.userId), (user) => (user === UNREAD ? { apiKey } : { apiKey, user }))
      })
    case 'accessToken':
      return then(guarded(records.getAccessToken, records, credential.tokenHash), (token: Read<AccessTokenRecord | undefined>) => {
        if (token === UNREAD) return {}
        if (!isLiveAccessToken(token, credential.now)) return { accessToken: token }
        return then(guarded(records.getUser, records, token.userId), (user: Read<UserRecord | undefined>) => (user === UNREAD ? { accessToken: token } : { accessToken: token, user }))
      })
  }
}

/** `read.call(records, key)`, its failure, thrown or rejected, {@link UNREAD} (and never an unhandled rejection). No closure per call. */
function guarded<T>(read: (this: Records, key: string) => Awaitable<T>, records: Records, key: string): Awaitable<Read<T>> {
  let value: Awaitable<T>
  try {
    value = read.call(records, key)
  } catch {
    return UNREAD
  }
  if (!isPromiseLike(value)) return value
  return Promise.resolve(value).then(
    (settled) => settled,
    () => UNREAD,
  )
}

function then<T, U>(value: Awaitable<T>, fn: (value: T) => Awaitable<U>): Awaitable<U> {
  return isPromiseLike(value) ? Promise.resolve(value).then(fn) : fn(value)
}

/** `fn(a, b)` once both are here; `a`'s failure fails it (`b` cannot fail: it is guarded). */
function both<A, B, U>(a: Awaitable<A>, b: Awaitable<B>, fn: (a: A, b: B) => U): Awaitable<U> {
  if (!isPromiseLike(a) && !isPromiseLike(b)) return fn(a, b)
  return Promise.all([a, b]).then(([x, y]) => fn(x, y))
}
