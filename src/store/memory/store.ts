/**
 * The embedded store: everything in this process. Records live in maps; rate keys live
 * in a bounded LRU (lru-cache) whose bound is an option, and each one expires when its
 * throttling state has fully drained.
 *
 * Right for one process, tests and the demo. Several instances behind a load balancer
 * each count on their own here: give them a shared store instead.
 */
import { LRUCache } from 'lru-cache'
import { gcraStep, type RateResult } from '../../limits/gcra.js'
import { invalidLimitSteps, limitsStep, type LimitResult, type LimitState, type LimitStep, type QuotaCounter } from '../../limits/limit-steps.js'
import { optionsObject } from '../../util/validate.js'
import { compareApiKeys, matchesApiKeyQuery } from '../api-key-query.js'
import type {
  AccessTokenFilter,
  ApiKeyInsertResult,
  ApiKeyLimits,
  ApiKeyQuery,
  GrantRecord,
  AccessTokenRecord,
  AuthorizationCodeRecord,
  ApiKeyPatch,
  ApiKeyRecord,
  ApplicationFilter,
  ApplicationInsertResult,
  ApplicationLimits,
  ApplicationPatch,
  ApplicationRecord,
  GateStore,
  SessionRecord,
  StoreEventSink,
  UserPatch,
  UserRecord,
} from '../store.js'
import type { UsageBatch, UsageBucket, UsageGranularity, UsageStore, UsageTopQuery, UsageTotal } from '../usage-contract.js'
import { isLiveAccessToken } from '../contract/oauth.js'
import { MemoryUsage } from './usage.js'

/**
 * A rate key's state: a GCRA arrival time in µs, or, for a quota (`counter`), its counter,
 * with `tat` the time it may be forgotten.
 */
interface RateBox {
  tat: number
  counter?: QuotaCounter
}

/** Expired records (and API keys past their purge time) are swept out every this many inserts, so memory follows live records only. */
const SWEEP_EVERY = 1000

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * How many rate keys (applications, anonymous clients, login names) are tracked at
   * once. When full, the least recently seen key is dropped and the gate emits
   * `rateKeyEvicted`. Default 100 000 (about 10 MB).
   */
  maxRateKeys?: number
  /** The clock, in epoch milliseconds. Default `Date.now`. */
  clock?: () => number
}

/**
 * The in-memory {@link GateStore}, and the gate's default.
 * @example
 * const gate = createGate({ store: new MemoryStore({ maxRateKeys: 50_000 }) })
 */
export class MemoryStore implements GateStore, UsageStore {
  readonly #applications = new Map<string, ApplicationRecord>()
  /** App tokens by owner: an owner's list and cap read that owner's applications only. */
  readonly #applicationsByOwner = new Map<string, Set<string>>()
  readonly #users = new Map<string, UserRecord>()
  readonly #userIdByUsername = new Map<string, string>()
  /** Users by the skeleton of their username (several legacy users may share one). */
  readonly #userIdsBySkeleton = new Map<string, Set<string>>()
  readonly #apiKeys = new Map<string, ApiKeyRecord>()
  /** Each user's keys by id: listing, counting and purging read one user's keys, never every user's. */
  readonly #apiKeysByUser = new Map<string, Map<string, ApiKeyRecord>>()
  /** When a revoked key may be forgotten, by key id. */
  readonly #purgeAt = new Map<string, number>()
  readonly #tokens = new Map<string, AccessTokenRecord>()
  readonly #codes = new Map<string, AuthorizationCodeRecord>()
  readonly #sessions = new Map<string, SessionRecord>()
  /** Grants by user id, then app token. */
  readonly #grants = new Map<string, Map<string, GrantRecord>>()
  #inserts = 0
  /** The arrival time per key, in a box updated in place: one LRU operation per request. */
  readonly #rates: LRUCache<string, RateBox>
  readonly #clock: () => number
  readonly #sinks: StoreEventSink[] = []
  #usage: MemoryUsage | undefined

  constructor(options: MemoryStoreOptions = {}) {
    optionsObject('MemoryStore options', options, ['maxRateKeys', 'clock'])
    const maxRateKeys = options.maxRateKeys ?? 100_000
    if (!Number.isSafeInteger(maxRateKeys) || maxRateKeys < 1) {
      throw new TypeError(`open-data-gate: MemoryStore maxRateKeys must be a positive integer, got ${String(maxRateKeys)}`)
    }
    this.#clock = options.clock ?? Date.now
    // No TTL per key: a drained key is harmless (GCRA treats a past arrival time as fresh)
    // and the bound evicts it in time; TTL bookkeeping would cost every request.
    this.#rates = new LRUCache<string, RateBox>({
      max: maxRateKeys,
      dispose: (box, key, reason) => {
        // Only a key dropped while it still held state is news; a drained one cost nothing.
        if (reason === 'evict' && box.tat > this.#clock() * 1000) for (const sink of this.#sinks) sink.rateKeyEvicted(key)
      },
    })
  }

  /** Several gates may share one store: each is told about changes the others make. */
  attach(sink: StoreEventSink): void {
    this.#sinks.push(sink)
  }

  #applicationChanged(appToken: string): void {
    for (const sink of this.#sinks) sink.applicationChanged(appToken)
  }

  /** Checks the owner's count and inserts in one synchronous step: nothing can run in between. */
  insertApplication(record: ApplicationRecord, limits?: ApplicationLimits): ApplicationInsertResult {
    if (this.#applications.has(record.appToken)) throw new Error(`an application with this app token exists`)
    const owner = record.ownerId
    const mine = owner === null ? undefined : this.#applicationsByOwner.get(owner)
    if (limits !== undefined && owner !== null && (mine?.size ?? 0) >= limits.maxPerOwner) return 'owner-limit'
    this.#applications.set(record.appToken, record)
    if (owner !== null) {
      if (mine === undefined) this.#applicationsByOwner.set(owner, new Set([record.appToken]))
      else mine.add(record.appToken)
    }
    this.#applicationChanged(record.appToken)
    return 'created'
  }

  getApplication(appToken: string): ApplicationRecord | undefined {
    return this.#applications.get(appToken)
  }

  listApplications(filter?: ApplicationFilter): ApplicationRecord[] {
    const all = filter === undefined ? [...this.#applications.values()] : [...(this.#applicationsByOwner.get(filter.ownerId) ?? [])].map((token) => this.#applications.get(token)!)
    // A stable sort: applications made in the same millisecond stay in the order they were saved.
    return all.sort((a, b) => a.createdAt - b.createdAt)
  }

  updateApplication(appToken: string, patch: ApplicationPatch): ApplicationRecord | undefined {
    const updated = patchRecord(this.#applications, appToken, patch)
    if (updated !== undefined) this.#applicationChanged(appToken)
    return updated
  }

  deleteApplication(appToken: string): boolean {
    const current = this.#applications.get(appToken)
    if (current === undefined) return false
    this.#applications.delete(appToken)
    if (current.ownerId !== null) {
      const mine = this.#applicationsByOwner.get(current.ownerId)
      mine?.delete(appToken)
      if (mine?.size === 0) this.#applicationsByOwner.delete(current.ownerId)
    }
    this.#applicationChanged(appToken)
    return true
  }

  insertUser(record: UserRecord): void {
    if (this.#users.has(record.id)) throw new Error('a user with this id exists')
    if (this.#userIdByUsername.has(record.username)) throw new Error('a user with this username exists')
    this.#users.set(record.id, record)
    this.#userIdByUsername.set(record.username, record.id)
    if (typeof record.usernameSkeleton === 'string') {
      const ids = this.#userIdsBySkeleton.get(record.usernameSkeleton) ?? new Set<string>()
      this.#userIdsBySkeleton.set(record.usernameSkeleton, ids.add(record.id))
    }
  }

  getUser(id: string): UserRecord | undefined {
    return this.#users.get(id)
  }

  getUserByUsername(username: string): UserRecord | undefined {
    const id = this.#userIdByUsername.get(username)
    return id === undefined ? undefined : this.#users.get(id)
  }

  getUserBySkeleton(skeleton: string): UserRecord | undefined {
    const [id] = this.#userIdsBySkeleton.get(skeleton) ?? []
    return id === undefined ? undefined : this.#users.get(id)
  }

  updateUser(id: string, patch: UserPatch): UserRecord | undefined {
    return patchRecord(this.#users, id, patch)
  }

  deleteUser(id: string): boolean {
    const current = this.#users.get(id)
    if (current === undefined) return false
    this.#users.delete(id)
    this.#userIdByUsername.delete(current.username)
    if (typeof current.usernameSkeleton === 'string') {
      const ids = this.#userIdsBySkeleton.get(current.usernameSkeleton)
      ids?.delete(id)
      if (ids?.size === 0) this.#userIdsBySkeleton.delete(current.usernameSkeleton)
    }
    return true
  }

  listUsers(): UserRecord[] {
    return [...this.#users.values()]
  }

  /** Checks and inserts in one synchronous step: nothing can run in between. */
  insertApiKey(record: ApiKeyRecord, limits?: ApiKeyLimits): ApiKeyInsertResult {
    if (this.#apiKeys.has(record.keyId)) throw new Error('an API key with this id exists')
    const mine = this.#keysOf(record.userId)
    if (limits !== undefined) {
      let active = 0
      for (const key of mine.values()) {
        if (key.revokedAt !== null) continue
        if (key.name === record.name) return 'name-taken'
        active++
      }
      if (active >= limits.maxActive) return 'active-limit'
      if (mine.size >= limits.maxTotal) return 'total-limit'
    }
    this.#apiKeys.set(record.keyId, record)
    let byUser = this.#apiKeysByUser.get(record.userId)
    if (byUser === undefined) this.#apiKeysByUser.set(record.userId, (byUser = new Map()))
    byUser.set(record.keyId, record)
    this.#countInsert()
    return 'created'
  }

  getApiKey(keyId: string): ApiKeyRecord | undefined {
    return this.#apiKeys.get(keyId)
  }

  /** One user's keys only (purged ones dropped first): the cost follows that user's keys, bounded by the total cap. */
  listApiKeys(userId: string, query?: ApiKeyQuery): ApiKeyRecord[] {
    const keys = [...this.#keysOf(userId).values()]
    if (query === undefined) return keys
    return pageOfKeys(keys, query)
  }

  updateApiKey(keyId: string, patch: ApiKeyPatch): ApiKeyRecord | undefined {
    const updated = patchRecord(this.#apiKeys, keyId, patch)
    if (updated !== undefined) {
      this.#apiKeysByUser.get(updated.userId)?.set(keyId, updated)
      if (updated.revokedAt === null) this.#purgeAt.delete(keyId)
    }
    return updated
  }

  revokeApiKey(keyId: string, at: number, purgeAt: number): ApiKeyRecord | undefined {
    const current = this.#apiKeys.get(keyId)
    if (current === undefined || current.revokedAt !== null) return undefined
    const revoked = this.updateApiKey(keyId, { revokedAt: at })
    this.#purgeAt.set(keyId, purgeAt)
    return revoked
  }

  /** A user's keys, once those whose purge time has passed are deleted. */
  #keysOf(userId: string): Map<string, ApiKeyRecord> {
    const mine = this.#apiKeysByUser.get(userId)
    if (mine === undefined) return new Map()
    const now = this.#clock()
    for (const keyId of mine.keys()) {
      const purgeAt = this.#purgeAt.get(keyId)
      if (purgeAt !== undefined && purgeAt <= now) this.#forgetApiKey(keyId)
    }
    return mine
  }

  #forgetApiKey(keyId: string): void {
    const key = this.#apiKeys.get(keyId)
    this.#apiKeys.delete(keyId)
    this.#purgeAt.delete(keyId)
    if (key === undefined) return
    const mine = this.#apiKeysByUser.get(key.userId)
    mine?.delete(keyId)
    if (mine?.size === 0) this.#apiKeysByUser.delete(key.userId)
  }

  insertAccessToken(record: AccessTokenRecord): void {
    if (this.#tokens.has(record.tokenHash)) throw new Error('an access token with this hash exists')
    this.#countInsert()
    this.#tokens.set(record.tokenHash, record)
  }

  getAccessToken(tokenHash: string): AccessTokenRecord | undefined {
    return this.#tokens.get(tokenHash)
  }

  revokeAccessToken(tokenHash: string, at: number): boolean {
    const current = this.#tokens.get(tokenHash)
    if (current === undefined || current.revokedAt !== null) return false
    this.#tokens.set(tokenHash, { ...current, revokedAt: at })
    return true
  }

  revokeAccessTokens(filter: AccessTokenFilter, at: number): number {
    let revoked = 0
    for (const token of this.#tokens.values()) {
      if (token.revokedAt !== null) continue
      const match =
        'codeHash' in filter
          ? token.codeHash === filter.codeHash
          : (filter.userId === undefined || token.userId === filter.userId) && (filter.appToken === undefined || token.appToken === filter.appToken)
      if (match) {
        this.#tokens.set(token.tokenHash, { ...token, revokedAt: at })
        revoked++
      }
    }
    return revoked
  }

  listAccessTokens(userId: string): AccessTokenRecord[] {
    const now = this.#clock()
    return [...this.#tokens.values()]
      .filter((t) => t.userId === userId && isLiveAccessToken(t, now))
      .sort((a, b) => a.createdAt - b.createdAt)
  }

  recordGrant(userId: string, appToken: string, at: number): void {
    let byApp = this.#grants.get(userId)
    if (byApp === undefined) this.#grants.set(userId, (byApp = new Map()))
    const current = byApp.get(appToken)
    if (current === undefined) byApp.set(appToken, { userId, appToken, firstAuthorizedAt: at, lastUsedAt: at })
    else if (at > current.lastUsedAt) byApp.set(appToken, { ...current, lastUsedAt: at })
  }

  touchGrant(userId: string, appToken: string, at: number): void {
    // One synchronous step: no deleteGrant can come between the read and the write.
    const byApp = this.#grants.get(userId)
    const current = byApp?.get(appToken)
    if (byApp !== undefined && current !== undefined && at > current.lastUsedAt) byApp.set(appToken, { ...current, lastUsedAt: at })
  }

  getGrant(userId: string, appToken: string): GrantRecord | undefined {
    return this.#grants.get(userId)?.get(appToken)
  }

  listGrants(userId: string): GrantRecord[] {
    return [...(this.#grants.get(userId)?.values() ?? [])].sort((a, b) => a.firstAuthorizedAt - b.firstAuthorizedAt)
  }

  deleteGrant(userId: string, appToken: string): boolean {
    const byApp = this.#grants.get(userId)
    if (byApp === undefined || !byApp.delete(appToken)) return false
    if (byApp.size === 0) this.#grants.delete(userId)
    return true
  }

  insertAuthorizationCode(record: AuthorizationCodeRecord): void {
    if (this.#codes.has(record.codeHash)) throw new Error('an authorization code with this hash exists')
    this.#countInsert()
    this.#codes.set(record.codeHash, record)
  }

  getAuthorizationCode(codeHash: string): AuthorizationCodeRecord | undefined {
    return this.#codes.get(codeHash)
  }

  consumeAuthorizationCode(codeHash: string, at: number): boolean {
    const current = this.#codes.get(codeHash)
    if (current === undefined || current.usedAt !== null) return false
    this.#codes.set(codeHash, { ...current, usedAt: at })
    return true
  }

  insertSession(record: SessionRecord): void {
    if (this.#sessions.has(record.sessionHash)) throw new Error('a session with this hash exists')
    this.#countInsert()
    this.#sessions.set(record.sessionHash, record)
  }

  getSession(sessionHash: string): SessionRecord | undefined {
    const session = this.#sessions.get(sessionHash)
    return session !== undefined && session.expiresAt > this.#clock() ? session : undefined
  }

  deleteSession(sessionHash: string): boolean {
    return this.#sessions.delete(sessionHash)
  }

  trimSessions(userId: string, keep: number): number {
    const mine = [...this.#sessions.values()].filter((s) => s.userId === userId)
    if (mine.length <= keep) return 0
    // Newest first; the ones past `keep` go.
    mine.sort((a, b) => b.createdAt - a.createdAt || (a.sessionHash < b.sessionHash ? 1 : a.sessionHash > b.sessionHash ? -1 : 0))
    const doomed = mine.slice(Math.max(0, keep))
    for (const session of doomed) this.#sessions.delete(session.sessionHash)
    return doomed.length
  }

  /** Every SWEEP_EVERY inserts, drops expired tokens, codes and sessions. */
  #countInsert(): void {
    if (++this.#inserts % SWEEP_EVERY !== 0) return
    const now = this.#clock()
    for (const map of [this.#tokens, this.#codes, this.#sessions] as Map<string, { expiresAt: number }>[]) {
      for (const [key, record] of map) if (record.expiresAt <= now) map.delete(key)
    }
    for (const [keyId, purgeAt] of this.#purgeAt) if (purgeAt <= now) this.#forgetApiKey(keyId)
  }

  consumeRate(key: string, limit: number, windowMs: number, cost: number): RateResult {
    const box = this.#rates.get(key)
    const step = gcraStep(box?.tat, this.#clock() * 1000, limit, windowMs, cost)
    if (step.tat !== undefined) {
      if (box === undefined) this.#rates.set(key, { tat: step.tat })
      else box.tat = step.tat
    }
    return step
  }

  /** Several limits all or nothing, in one synchronous step: nothing runs in between. */
  consumeLimits(steps: readonly LimitStep[]): LimitResult[] {
    const invalid = invalidLimitSteps(steps)
    if (invalid !== undefined) throw new TypeError(`open-data-gate: consumeLimits: ${invalid}`)
    const boxes = steps.map((step) => this.#rates.get(step.key))
    const now = this.#clock()
    const outcome = limitsStep(
      boxes.map((box): LimitState => box?.counter ?? box?.tat),
      now * 1000,
      steps,
    )
    outcome.writes.forEach((write, i) => {
      if (write === undefined) return
      const box = boxes[i]
      if (typeof write.state === 'number') {
        if (box === undefined) this.#rates.set(steps[i]!.key, { tat: write.state })
        else box.tat = write.state
        return
      }
      // A quota's box holds state until the counter may go: its `tat` says when, for the eviction notice.
      const tat = (now + write.ttlMs) * 1000
      if (box === undefined) this.#rates.set(steps[i]!.key, { tat, counter: write.state })
      else {
        box.tat = tat
        box.counter = write.state
      }
    })
    return outcome.results
  }

  resetRate(key: string): void {
    this.#rates.delete(key)
  }

  // Usage buckets (./usage.ts).
  addUsage(batch: UsageBatch): void {
    ;(this.#usage ??= new MemoryUsage(this.#clock)).add(batch)
  }
  getUsage(appToken: string | null, granularity: UsageGranularity, from: number, to: number): UsageBucket[] {
    return this.#usage?.get(appToken, granularity, from, to) ?? []
  }
  topUsage(query: UsageTopQuery): UsageTotal[] {
    return this.#usage?.top(query) ?? []
  }
}

/** One page of keys, sorted and sought as {@link ApiKeyQuery} says. */
function pageOfKeys(keys: ApiKeyRecord[], query: ApiKeyQuery): ApiKeyRecord[] {
  let page = keys.filter((key) => matchesApiKeyQuery(key, query)).sort((a, b) => compareApiKeys(a, b, query))
  if (query.after !== undefined) {
    const index = page.findIndex((key) => key.keyId === query.after)
    if (index === -1) {
      // The seek key may be filtered out (revoked since, or not matching): seek by its values.
      const anchor = keys.find((key) => key.keyId === query.after)
      if (anchor === undefined) return []
      page = page.filter((key) => compareApiKeys(key, anchor, query) > 0)
    } else {
      page = page.slice(index + 1)
    }
  }
  return page.slice(0, query.limit)
}

/** A new record with the patch's fields, in one step; records are never changed in place. */
function patchRecord<T extends object>(records: Map<string, T>, key: string, patch: NoInfer<Partial<T>>): T | undefined {
  const current = records.get(key)
  if (current === undefined) return undefined
  const next = { ...current, ...patch }
  records.set(key, next)
  return next
}
