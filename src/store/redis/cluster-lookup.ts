/**
 * `lookupRequest` on Redis Cluster: the store work of one authenticated request in one
 * round trip of latency, although its keys live on several nodes.
 *
 * One script cannot read keys of several slots, but commands sent to several nodes at the
 * same moment cost one wait. What a request needs is known up front once the store has seen
 * its credential, because these facts never change: an access token's hash names its
 * application, its user and its expiry (and a revoked token stays revoked); an API key id
 * names its user. Each store keeps the facts of the tokens and keys it saw last (a bounded
 * LRU, facts only of records that exist), and sends at once the rate step, the token or
 * key record and the user record. The records themselves are read on every request, so a
 * revocation, a deleted user or a changed password is seen on the next request, on every
 * instance, as on a single server.
 *
 * What a request costs (ioredis pipelines the commands of one node together):
 * - a password verified earlier: the step and the user, one round trip;
 * - an API key seen before: the step, the key and its user, one round trip (first sight:
 *   the step and the key's owner, then the key and the user, two);
 * - an access token seen before: the step, the token and its user, one round trip (first
 *   sight: two, the user read once the token named it).
 * - a made-up token or key id: the step and one read of a missing key, one round trip;
 *   nothing is remembered of it, so a flood of them evicts nothing.
 *
 * The one case where the answer is not known up front: with the token's budget
 * (`budget: 'token'`), a token last seen live that has been revoked since (or whose record
 * Redis dropped early). Its step (`rate`) was sent with the token read; the second round
 * trip gives it back ({@link GCRA_UNDO}) and takes the step `otherwise`, as the contract
 * says. For that one round trip the application's budget held one count more; when `rate`
 * and `otherwise` are the same step (an app token was sent) the step taken is the one the
 * contract wants, and nothing is given back.
 *
 * A command that fails fails the lookup, and the gate reads the records by the separate calls
 * without sending the step again (see src/pipeline/steps/throttle.ts): with the
 * user's node failing while the rate key's node took the step, the request counts once
 * (tested in test/redis-cluster.test.ts).
 */
import { LRUCache } from 'lru-cache'
import type { RateResult } from '../../limits/gcra.js'
import type { LimitStep } from '../../limits/limit-steps.js'
import { lookupBudgets, withLimitResults, type LookupBudget, type RequestLookup, type RequestLookupResult, type TakenStep } from '../contract/request-lookup.js'
import type { AccessTokenRecord, ApiKeyRecord, UserRecord } from '../store.js'
import { isLiveAccessToken } from '../contract/oauth.js'

/** The Redis reads and steps the lookup is made of, each one command on its key's node. */
export interface ClusterLookupCommands {
  /** One rate step, or several limits all or nothing (one script in their subject's slot). */
  step(step: LookupBudget): Promise<TakenStep>
  /** Gives back a step `step` took and allowed. */
  undo(step: LookupBudget): Promise<unknown>
  accessToken(tokenHash: string): Promise<AccessTokenRecord | undefined>
  user(userId: string): Promise<UserRecord | undefined>
  /** The user id `keyowner:{keyId}` names, or `null`. */
  keyOwner(keyId: string): Promise<string | null>
  /** The key's hash in its owner's slot. */
  apiKey(ownerId: string, keyId: string): Promise<ApiKeyRecord | undefined>
}

/** What never changes about an access token. */
interface TokenFacts {
  readonly appToken: string
  readonly userId: string
  readonly expiresAt: number
  /** Revoked when last read: a revocation is never undone. */
  readonly revoked: boolean
}

type Step = 'rate' | 'otherwise' | null
type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/** How many tokens, and how many key ids, each store remembers the facts of. */
export const CLUSTER_LOOKUP_FACTS = 10_000

const NO_USER: Promise<undefined> = Promise.resolve(undefined)

export class ClusterLookup {
  readonly #redis: ClusterLookupCommands
  readonly #tokens = new LRUCache<string, TokenFacts>({ max: CLUSTER_LOOKUP_FACTS })
  readonly #keyOwners = new LRUCache<string, string>({ max: CLUSTER_LOOKUP_FACTS })

  constructor(commands: ClusterLookupCommands) {
    this.#redis = commands
  }

  lookup(lookup: RequestLookup): Promise<RequestLookupResult> {
    const answer = this.#lookup(lookup)
    return lookup.limits === undefined ? answer : answer.then(withLimitResults)
  }

  #lookup(lookup: RequestLookup): Promise<RequestLookupResult> {
    const { credential } = lookup
    const rate = lookupBudgets(lookup).rate
    if (credential.kind === 'user') return this.#user(rate, credential.userId)
    if (credential.kind === 'apiKey') return this.#apiKey(rate, credential.keyId)
    if (lookup.budget === 'fixed') return this.#tokenFixed(rate, credential.tokenHash, credential.now)
    return this.#tokenBudget(lookup, credential.tokenHash, credential.now)
  }

  /** The step and the user, at once; the user is kept only when the step is allowed. */
  async #user(rate: LookupBudget, userId: string): Promise<RequestLookupResult> {
    const [result, user] = await Promise.all([this.#redis.step(rate), this.#redis.user(userId)])
    return result.allowed ? { stepped: 'rate', result, user } : { stepped: 'rate', result }
  }

  async #apiKey(rate: LookupBudget, keyId: string): Promise<RequestLookupResult> {
    const owner = this.#keyOwners.get(keyId)
    if (owner === undefined) {
      const [result, read] = await Promise.all([this.#redis.step(rate), this.#apiKeyRecords(keyId)])
      return result.allowed ? { stepped: 'rate', result, ...read } : { stepped: 'rate', result }
    }
    const [result, key, user] = await Promise.all([this.#redis.step(rate), this.#redis.apiKey(owner, keyId), this.#redis.user(owner)])
    if (!result.allowed) return { stepped: 'rate', result }
    if (key === undefined) {
      // Gone under the owner this store knew (purged): read it as the first time, in case
      // its id now names another user's key.
      this.#keyOwners.delete(keyId)
      return { stepped: 'rate', result, ...(await this.#apiKeyRecords(keyId)) }
    }
    if (key.revokedAt !== null) return { stepped: 'rate', result, apiKey: key }
    return { stepped: 'rate', result, apiKey: key, user: key.userId === owner ? user : await this.#redis.user(key.userId) }
  }

  /** A key read by its id as `getApiKey` reads it (its owner, then the key), with its user. */
  async #apiKeyRecords(keyId: string): Promise<{ apiKey: ApiKeyRecord | undefined; user?: UserRecord | undefined }> {
    const owner = await this.#redis.keyOwner(keyId)
    if (owner === null) return { apiKey: undefined }
    const [key, user] = await Promise.all([this.#redis.apiKey(owner, keyId), this.#redis.user(owner)])
    if (key === undefined) return { apiKey: undefined }
    this.#keyOwners.set(keyId, owner)
    if (key.revokedAt !== null) return { apiKey: key }
    return { apiKey: key, user: key.userId === owner ? user : await this.#redis.user(key.userId) }
  }

  /** A fixed budget: the step, the token and (when the token is known live) its user, at once. */
  async #tokenFixed(rate: LookupBudget, tokenHash: string, now: number): Promise<RequestLookupResult> {
    const facts = this.#tokens.get(tokenHash)
    const userId = facts !== undefined && !facts.revoked && facts.expiresAt > now ? facts.userId : undefined
    const [result, token, user] = await Promise.all([
      this.#redis.step(rate),
      this.#redis.accessToken(tokenHash),
      userId === undefined ? NO_USER : this.#redis.user(userId),
    ])
    this.#learn(tokenHash, facts, token)
    if (!result.allowed) return { stepped: 'rate', result }
    if (!isLiveAccessToken(token, now)) return { stepped: 'rate', result, accessToken: token }
    return { stepped: 'rate', result, accessToken: token, user: token.userId === userId ? user : await this.#redis.user(token.userId) }
  }

  /**
   * The token's budget: the step the token's facts predict, the token and (for the step
   * `rate`) its user, at once; then, if the token is not what its facts said (revoked
   * since), the step given back and the right one taken. A token this store has not seen is
   * read first, unless both steps are the same.
   */
  async #tokenBudget(lookup: RequestLookup, tokenHash: string, now: number): Promise<RequestLookupResult> {
    const { rate, otherwise } = lookupBudgets(lookup)
    const appToken = lookup.appToken ?? ''
    const same = otherwise !== null && sameStep(rate, otherwise)
    const facts = this.#tokens.get(tokenHash)
    let predicted: Step
    let userId: string | undefined
    if (facts !== undefined) {
      predicted = stepOf(!facts.revoked && facts.expiresAt > now, facts.appToken, appToken, otherwise)
      if (predicted === 'rate') userId = facts.userId
    } else if (same) {
      // Whatever the token, the step is this one, unless the token is live and of another application.
      predicted = 'rate'
    } else {
      // Not seen: read the token first, then take its step (and read its user) at once.
      const token = await this.#redis.accessToken(tokenHash)
      this.#learn(tokenHash, undefined, token)
      return this.#tokenStep(lookup, token, stepOfToken(token, now, appToken, otherwise), undefined, undefined, undefined, now)
    }
    const sent = stepFor(lookup, predicted)
    const [result, token, user] = await Promise.all([
      sent === null ? null : this.#redis.step(sent),
      this.#redis.accessToken(tokenHash),
      userId === undefined ? NO_USER : this.#redis.user(userId),
    ])
    this.#learn(tokenHash, facts, token)
    const actual = stepOfToken(token, now, appToken, otherwise)
    const read = userId === undefined ? undefined : { userId, user }
    // The step taken is the right one (`rate` and `otherwise` may be one step under two names).
    if (actual === predicted || (same && actual !== null && predicted !== null)) return this.#tokenStep(lookup, token, actual, result, undefined, read, now)
    return this.#tokenStep(lookup, token, actual, undefined, sent !== null && result?.allowed === true ? sent : undefined, read, now)
  }

  /**
   * Finishes a token's-budget lookup once the token is read: takes the step `actual` unless
   * `taken` is its result already, gives back the step `undo` at the same time, and reads
   * the token's user for an allowed step `rate` unless `read` has it.
   */
  async #tokenStep(
    lookup: RequestLookup,
    token: AccessTokenRecord | undefined,
    actual: Step,
    taken: RateResult | null | undefined,
    undo: LookupBudget | undefined,
    read: { userId: string; user: UserRecord | undefined } | undefined,
    now: number,
  ): Promise<RequestLookupResult> {
    const step = stepFor(lookup, actual)
    const userId = actual === 'rate' && isLiveAccessToken(token, now) ? token.userId : undefined
    // Read with the step, as the step is not known yet to be allowed (the user is kept only if it is).
    const needUser = userId !== undefined && read?.userId !== userId && (taken === undefined || taken?.allowed === true)
    const [result, user] = await Promise.all([
      taken !== undefined || step === null ? (taken ?? null) : this.#redis.step(step),
      needUser ? this.#redis.user(userId) : NO_USER,
      undo === undefined ? undefined : this.#redis.undo(undo),
    ])
    const out: Mutable<RequestLookupResult> = { stepped: actual, result: actual === null ? null : result, accessToken: token }
    if (userId !== undefined && result?.allowed === true) out.user = needUser ? user : read?.user
    return out
  }

  /** What a token read outside a lookup (`getAccessToken`) says: its next lookup is then one round trip. */
  sawToken(tokenHash: string, token: AccessTokenRecord | undefined): void {
    this.#learn(tokenHash, this.#tokens.peek(tokenHash), token)
  }

  /** The owner of a key read outside a lookup (`getApiKey`). */
  sawKey(keyId: string, key: ApiKeyRecord | undefined): void {
    if (key !== undefined) this.#keyOwners.set(keyId, key.userId)
  }

  /** Remembers what never changes about a token read; forgets a token that is gone. */
  #learn(tokenHash: string, known: TokenFacts | undefined, token: AccessTokenRecord | undefined): void {
    if (token === undefined) {
      if (known !== undefined) this.#tokens.delete(tokenHash)
      return
    }
    const revoked = token.revokedAt !== null
    if (known !== undefined && known.revoked === revoked && known.userId === token.userId && known.appToken === token.appToken && known.expiresAt === token.expiresAt) return
    this.#tokens.set(tokenHash, { appToken: token.appToken, userId: token.userId, expiresAt: token.expiresAt, revoked })
  }
}

/** The step the contract gives a token with the token's budget. */
function stepOf(live: boolean, tokenApp: string, appToken: string, otherwise: LookupBudget | null): Step {
  if (live) return appToken === '' || tokenApp === appToken ? 'rate' : null
  return otherwise === null ? null : 'otherwise'
}

function stepOfToken(token: AccessTokenRecord | undefined, now: number, appToken: string, otherwise: LookupBudget | null): Step {
  return stepOf(isLiveAccessToken(token, now), token?.appToken ?? '', appToken, otherwise)
}

function stepFor(lookup: RequestLookup, step: Step): LookupBudget | null {
  const budgets = lookupBudgets(lookup)
  return step === 'rate' ? budgets.rate : step === 'otherwise' ? budgets.otherwise : null
}

function sameStep(a: LookupBudget, b: LookupBudget): boolean {
  if (a === b) return true
  if (!Array.isArray(a) || !Array.isArray(b)) return !Array.isArray(a) && !Array.isArray(b) && sameLimit({ kind: 'rate', ...(a as Exclude<LookupBudget, readonly unknown[]>) }, { kind: 'rate', ...(b as Exclude<LookupBudget, readonly unknown[]>) })
  const [x, y] = [a as readonly LimitStep[], b as readonly LimitStep[]]
  return x.length === y.length && x.every((step, i) => sameLimit(step, y[i]!))
}

function sameLimit(a: LimitStep, b: LimitStep): boolean {
  if (a.kind !== b.kind || a.key !== b.key || a.limit !== b.limit || a.cost !== b.cost) return false
  return a.kind === 'rate' ? a.windowMs === (b as typeof a).windowMs : a.periodStart === (b as typeof a).periodStart && a.periodEnd === (b as typeof a).periodEnd
}

