/**
 * The shared store: every instance of the gate behind a load balancer counts against the
 * same budgets and sees the same applications, users, keys, tokens, codes and sessions,
 * through Redis (a single server, a replicated one, or Redis Cluster), on ioredis.
 *
 * What an authenticated request costs (`lookupRequest`): on a single server one `EVALSHA`
 * (`LOOKUP_REQUEST`) for every credential. On Cluster one round trip too, once this store
 * has seen the credential: the rate step, the token or key and its user are commands to
 * their own nodes, sent at once (an OAuth token or an API key 3 commands, a password
 * verified earlier 2, an app token 1); a credential's first sight costs one more round trip
 * (see `./cluster-lookup.ts`). What decides a request is read on every request on both, so
 * a revocation, a changed password or a deleted user is seen by every instance on its next
 * request. On a single server the script sends a token, key or user whole only when the
 * store's copy (`./record-copies.ts`) is not the record as it is now: every write of a
 * user's or an API key's hash sets a new random version `v`, which the script compares.
 *
 * - Records are hashes; tokens, codes and sessions carry a TTL so Redis drops them itself.
 *   They are read through scripts that answer in one string (JSON of the flat hash, see
 *   `READ_HASH` and `LOOKUP_REQUEST`): ioredis 6 decodes a reply element by element, and a
 *   record is some twenty of them. Applications, read mostly for made-up app tokens, are
 *   the one plain `HGETALL`.
 * - Each throttling step is one `EVALSHA` of a GCRA script computed on the server's clock
 *   (`TIME`), so instances with skewed clocks agree. `EVAL` is sent on `NOSCRIPT`.
 * - Every script touches keys of one hash slot only (hash tags), so it runs on Cluster,
 *   and nothing uses `KEYS` or `SCAN`.
 * - The client it makes never lets a request hang: no offline queue, a command timeout,
 *   no command replayed after a reconnect, a reconnect every quarter second at most.
 * - Application changes are published on a channel; every instance's gate drops its
 *   cached copy (see {@link StoreEventSink}).
 *
 * Key layout, under the prefix (default `odg:`), hash tag in braces:
 * `rate:{key}` (`rate:{subject}:name` for a key `{subject}:name` of a plan's limit, in its subject's slot; a quota's value is `periodStart periodEnd used`), `token:{hash}`, `{c:hash}:code`, `{c:hash}:tokens`, `{u:id}:tokens`,
 * `{a:token}:tokens`, `keyowner:{keyId}`, `{u:id}:key:keyId`, `{u:id}:keys:*` (a user's
 * API keys and their sorted sets, see `CREATE_API_KEY`), `{u:id}:grants`,
 * `{apps}:app:token`, `{apps}:index`, `{u:id}:apps` (the applications a user registered, see `./owned-applications.ts`), `{users}:user:id`, `{users}:names`, `{users}:skeletons`,
 * `{sessions}:s:hash`, `{sessions}:u:id`. Applications, users and sessions each live in one
 * slot (they are created rarely and read through caches or on sign-in); rate keys and
 * tokens, the request path, spread over the cluster. A user's API keys share the user's
 * slot, so that creating one (with the name and cap checks), revoking one and listing a
 * page are each one script; `keyowner:{keyId}` names the user of a key id.
 *
 * @module open-data-gate/redis
 */
import { Redis, type RedisOptions } from 'ioredis'
import type { RateResult } from '../../limits/gcra.js'
import { invalidLimitSteps, type LimitResult, type LimitStep } from '../../limits/limit-steps.js'
import {
  CREATE,
  CREATE_API_KEY,
  CREATE_INDEXED,
  CREATE_SESSION,
  CREATE_USER,
  DELETE_SESSION,
  DELETE_USER,
  GCRA,
  GCRA_UNDO,
  INDEX_ADD,
  LIMITS,
  LIMITS_UNDO,
  LIST_API_KEYS,
  INDEX_SKELETON,
  LIST_INDEXED,
  LOOKUP_REQUEST,
  LOOKUP_REQUEST_LIMITS,
  PATCH,
  PATCH_API_KEY,
  READ_HASH,
  RECORD_GRANT,
  REVOKE_API_KEY,
  TOUCH_GRANT,
  SET_ONCE,
  TRIM_SESSIONS,
  USER_BY_NAME,
  type RedisScript,
} from './scripts.js'
import { usernameSkeleton } from '../../rules/usernames.js'
import { duplicate, quit, readerConnection, redisClientDefaults, scriptSender, type RedisClient, type ScriptSender } from './client.js'
import { ACCESS_TOKEN, API_KEY, APPLICATION, CODE, decode, decodeJsonHash, encode, encodePatch, grant, searchFields, SESSION, USER, type Schema } from './codec.js'
import type {
  AccessTokenFilter,
  AccessTokenRecord,
  ApiKeyInsertResult,
  ApiKeyLimits,
  ApiKeyPatch,
  ApiKeyQuery,
  ApiKeyRecord,
  ApplicationFilter,
  ApplicationInsertResult,
  ApplicationLimits,
  ApplicationPatch,
  ApplicationRecord,
  AuthorizationCodeRecord,
  GateStore,
  GrantRecord,
  SessionRecord,
  StoreEventSink,
  UserPatch,
  UserRecord,
} from '../store.js'
import { summaryResult, type LookupBudget, type RateStep, type RequestLookup, type RequestLookupResult } from '../contract/request-lookup.js'
import { isLiveAccessToken } from '../contract/oauth.js'
import type { UsageBatch, UsageBucket, UsageGranularity, UsageStore, UsageTopQuery, UsageTotal } from '../usage-contract.js'
import { RedisUsage } from './usage.js'
import { CLAIM, DELETE_APPLICATION, ownerAppsKey, STALE_CLAIM_MS } from './owned-applications.js'
import { ClusterLookup } from './cluster-lookup.js'
import { newVersion, RecordCopies, type HeldCopies } from './record-copies.js'

export { redisClientDefaults, type RedisClient } from './client.js'

/** Options every form of {@link RedisStoreOptions} takes. */
interface CommonOptions {
  /**
   * Put before every key and the change channel, so that several gates (or other
   * software) share one Redis without meeting. Default `odg:`. Must not contain `{` or
   * `}`: the store places its own hash tags.
   */
  prefix?: string
  /**
   * How long a used authorization code is kept after it expires, so that a late replay is
   * still recognised and revokes the tokens issued from it. Default 1 hour.
   */
  usedCodeRetentionMs?: number
}

/** The store makes and owns its client; {@link RedisStore.close} quits it. */
export interface RedisStoreUrlOptions extends CommonOptions {
  /** `redis://[[user]:password@]host[:port][/db]`, or `rediss://` for TLS. */
  url: string
  /**
   * How long one Redis command may take before it fails. Default 500 ms. Keep it at or
   * under the gate's `storeTimeoutMs`.
   */
  commandTimeoutMs?: number
  /** More ioredis options (TLS, a connection name, ...). They override the store's defaults. */
  redisOptions?: Omit<RedisOptions, 'replyMapping'>
}

/** The store uses a client you made; it never closes it. */
export interface RedisStoreClientOptions extends CommonOptions {
  /**
   * An ioredis `Redis` or `Cluster`. Give it `enableOfflineQueue: false`, a
   * `commandTimeout` and `maxRetriesPerRequest: 0`, as {@link redisClientDefaults} does,
   * or requests wait while it reconnects.
   */
  client: RedisClient
}

/** Options of {@link RedisStore}: a URL (the store owns its client) or a client (you own it). */
export type RedisStoreOptions = RedisStoreUrlOptions | RedisStoreClientOptions

/**
 * A {@link GateStore} on Redis or Redis Cluster, for several instances of the gate.
 *
 * @example
 * import { RedisStore } from 'open-data-gate/redis'
 * // The store makes its client and owns it: gate.close() quits it.
 * const gate = createGate({ store: new RedisStore({ url: 'redis://127.0.0.1:6379', prefix: 'odg:' }), storeTimeoutMs: 250 })
 * // Or a client (Redis or Cluster) you own; the store never closes it.
 * const store = new RedisStore({ client: new Cluster(nodes, { enableOfflineQueue: false, enableAutoPipelining: true, redisOptions: redisClientDefaults() }) })
 */
export class RedisStore implements GateStore, UsageStore {
  readonly #client: RedisClient
  readonly #send: ScriptSender
  readonly #owned: boolean
  readonly #p: string
  /**
   * What ioredis puts before the keys a script is given (your client's `keyPrefix`, or ''): the
   * keys a script builds from its arguments need it too.
   */
  readonly #argKeyPrefix: string
  readonly #codeRetentionMs: number
  readonly #channel: string
  readonly #sinks = new Set<StoreEventSink>()
  #subscriber: RedisClient | undefined
  /** The usage reads' own connection, made at the first read (`./usage.ts`). */
  #reader: RedisClient | undefined
  /** Until the client has been ready once, calls wait for it (bounded); never after. */
  #everReady: boolean
  #firstReady: Promise<void> | undefined
  readonly #readyWaitMs: number
  #closed = false
  #usage: RedisUsage | undefined
  /**
   * A request's rate step and records in one round trip: one `EVALSHA` (`LOOKUP_REQUEST`)
   * on a single Redis server; on Cluster, where the token, its user and the application's
   * rate key are in three slots, commands sent to their nodes at once (`./cluster-lookup.ts`).
   */
  readonly lookupRequest?: (lookup: RequestLookup) => Promise<RequestLookupResult>
  /** On Cluster: what never changes about the tokens and keys this store read (see `./cluster-lookup.ts`). */
  readonly #cluster: ClusterLookup | undefined
  /** On a single server: the records the lookups read, so that the script sends only what changed (`./record-copies.ts`). */
  #copies: RecordCopies | undefined

  constructor(options: RedisStoreOptions) {
    if (options === null || typeof options !== 'object') throw new TypeError('open-data-gate: RedisStore needs { url } or { client }')
    const prefix = options.prefix ?? 'odg:'
    if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
      throw new TypeError(`open-data-gate: RedisStore prefix must be a string without { or }, got ${JSON.stringify(prefix)}`)
    }
    const retention = options.usedCodeRetentionMs ?? 3_600_000
    if (!Number.isSafeInteger(retention) || retention < 0) {
      throw new TypeError(`open-data-gate: RedisStore usedCodeRetentionMs must be a non-negative integer, got ${String(retention)}`)
    }
    this.#p = prefix
    this.#codeRetentionMs = retention
    this.#channel = `${prefix}application-changed`
    if ('client' in options && options.client !== undefined) {
      this.#client = options.client
      this.#owned = false
      this.#readyWaitMs = 1000
    } else if ('url' in options && typeof options.url === 'string') {
      const timeout = options.commandTimeoutMs ?? 500
      if (!Number.isSafeInteger(timeout) || timeout < 1) {
        throw new TypeError(`open-data-gate: RedisStore commandTimeoutMs must be a positive integer, got ${String(timeout)}`)
      }
      this.#client = new Redis(options.url, { ...redisClientDefaults(timeout), ...options.redisOptions } as RedisOptions & { replyMapping?: never })
      this.#owned = true
      this.#readyWaitMs = Math.max(timeout, 1000)
      // The gate learns of an outage from the failed calls; an unhandled 'error' event
      // would only print ioredis' own complaint on every reconnect attempt.
      this.#client.on('error', () => {})
    } else {
      throw new TypeError('open-data-gate: RedisStore needs { url } or { client }')
    }
    this.#argKeyPrefix = this.#client.options.keyPrefix ?? ''
    this.#send = scriptSender(this.#client)
    if (!('isCluster' in this.#client && this.#client.isCluster)) this.lookupRequest = (lookup) => this.#lookupRequest(lookup)
    else {
      const cluster = (this.#cluster = new ClusterLookup({
        step: (budget) => (isRateStep(budget) ? this.consumeRate(budget.key, budget.limit, budget.windowMs, budget.cost) : this.consumeLimits(budget).then((results) => ({ ...summaryResult(results), results }))),
        undo: (budget) =>
          isRateStep(budget)
            ? this.#run(GCRA_UNDO, [this.#rateKey(budget.key)], [budget.limit, budget.windowMs, budget.cost])
            : this.#run(LIMITS_UNDO, budget.map((step) => this.#rateKey(step.key)), limitArgs(budget)),
        accessToken: (tokenHash) => this.#readAccessToken(tokenHash),
        user: (userId) => this.getUser(userId),
        keyOwner: (keyId) => this.#call((c) => c.get(this.#keyOwner(keyId))),
        apiKey: async (ownerId, keyId) => this.#readHash(API_KEY, `${this.#userKeys(ownerId)}key:${keyId}`),
      }))
      this.lookupRequest = (lookup) => cluster.lookup(lookup)
    }
    this.#everReady = this.#client.status === 'ready'
    if (!this.#everReady) this.#client.once('ready', () => (this.#everReady = true))
  }

  /** The client the store talks through (yours, or the one it made from `url`). */
  get client(): RedisClient {
    return this.#client
  }

  // ---- plumbing ----

  /**
   * Right after the store is made, the connection may not be up yet and a client without
   * an offline queue would refuse every call: wait for it once, for a bounded time.
   */
  #whenReady(): Promise<void> {
    this.#firstReady ??= new Promise<void>((resolve) => {
      const timer = setTimeout(done, this.#readyWaitMs)
      function done(): void {
        clearTimeout(timer)
        resolve()
      }
      this.#client.once('ready', done)
    })
    return this.#firstReady
  }

  /** `EVALSHA`, and `EVAL` when the server does not know the script; the reply through `decode`, when given. */
  #run<T = unknown>(script: RedisScript, keys: string[], args: Array<string | number>, decode?: (reply: unknown) => T): Promise<T> {
    if (!this.#everReady) return this.#whenReady().then(() => this.#send(script, keys, args, decode))
    return this.#send(script, keys, args, decode)
  }

  /** A record's hash, through {@link READ_HASH}: one string for the client to decode. */
  #readHash<T>(schema: Schema, key: string): Promise<T | undefined> {
    return this.#run(READ_HASH, [key], [], (reply) => decodeJsonHash<T>(schema, reply))
  }

  /** A key, or the start of keys, that a script is given as an argument: as ioredis prefixes the keys it is given. */
  #argKey(key: string): string {
    return this.#argKeyPrefix + key
  }

  /** A plain command, with the same first-connection wait as scripts. */
  #call<T>(send: (client: RedisClient) => Promise<T>): Promise<T> {
    if (!this.#everReady) return this.#whenReady().then(() => send(this.#client))
    return send(this.#client)
  }

  /** Tells every attached gate on this instance, and every other instance, that an application changed. */
  async #changed(appToken: string): Promise<void> {
    for (const sink of this.#sinks) sink.applicationChanged(appToken)
    // Best effort: the other instances' caches also expire by themselves.
    await this.#call((c) => c.publish(this.#channel, appToken)).catch(() => {})
  }

  /**
   * Keeps `sink` for change notifications. The first call subscribes to the change
   * channel on a duplicate of the client (a subscribed connection can send nothing else).
   */
  attach(sink: StoreEventSink): void {
    this.#sinks.add(sink)
    if (this.#subscriber !== undefined || this.#closed) return
    const subscriber = duplicate(this.#client)
    this.#subscriber = subscriber
    subscriber.on('error', () => {})
    subscriber.on('message', (channel: string, appToken: string) => {
      if (channel !== this.#channel) return
      for (const each of this.#sinks) each.applicationChanged(appToken)
    })
    // ioredis subscribes again by itself after every reconnect.
    subscriber.subscribe(this.#channel).catch(() => {})
  }

  /** Quits the subscriber, and the client when the store made it; a client you gave stays open. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    const quits: Array<Promise<void>> = []
    if (this.#subscriber !== undefined) quits.push(quit(this.#subscriber))
    if (this.#reader !== undefined) quits.push(quit(this.#reader))
    if (this.#owned) quits.push(quit(this.#client))
    await Promise.all(quits)
  }

  // ---- keys ----

  #appKey(appToken: string): string {
    return `${this.#p}{apps}:app:${appToken}`
  }
  #userKey(id: string): string {
    return `${this.#p}{users}:user:${id}`
  }
  #tokenKey(hash: string): string {
    return `${this.#p}token:{${hash}}`
  }
  #codeKey(hash: string): string {
    return `${this.#p}{c:${hash}}:code`
  }
  #sessionKey(hash: string): string {
    return `${this.#p}{sessions}:s:${hash}`
  }
  /** The index a filter reads, and the condition each of its tokens must meet. */
  #tokenIndex(filter: AccessTokenFilter): { index: string; condition: string[] } {
    if ('codeHash' in filter) return { index: `${this.#p}{c:${filter.codeHash}}:tokens`, condition: [] }
    if (filter.userId !== undefined) {
      // One user's tokens for one application: the user's index, each token checked for the app.
      const condition = filter.appToken === undefined ? [] : ['appToken', filter.appToken]
      return { index: `${this.#p}{u:${filter.userId}}:tokens`, condition }
    }
    return { index: `${this.#p}{a:${filter.appToken}}:tokens`, condition: [] }
  }

  // ---- applications ----

  /**
   * An owner's application claims its place in the owner's set first (the cap, atomically),
   * then is saved; see `./owned-applications.ts`.
   */
  async insertApplication(record: ApplicationRecord, limits?: ApplicationLimits): Promise<ApplicationInsertResult> {
    const owner = record.ownerId
    if (owner !== null) {
      const claim = () => this.#run(CLAIM, [ownerAppsKey(this.#p, owner)], [Date.now(), record.appToken, limits?.maxPerOwner ?? ''])
      if ((await claim()) !== 1 && ((await this.#dropStaleClaims(owner)) === 0 || (await claim()) !== 1)) return 'owner-limit'
    }
    let created: unknown
    try {
      created = await this.#run(CREATE_INDEXED, [this.#appKey(record.appToken), `${this.#p}{apps}:index`], [record.createdAt, record.appToken, ...encode(APPLICATION, record)])
    } finally {
      if (owner !== null && created !== 1) await this.#call((c) => c.zrem(ownerAppsKey(this.#p, owner), record.appToken)).catch(() => {})
    }
    if (created !== 1) throw new Error('an application with this app token exists')
    await this.#changed(record.appToken)
    return 'created'
  }

  /** Drops the places in an owner's set that a crash left without an application; how many. */
  async #dropStaleClaims(ownerId: string): Promise<number> {
    const key = ownerAppsKey(this.#p, ownerId)
    const old = await this.#call((c) => c.zrangebyscore(key, '-inf', String(Date.now() - STALE_CLAIM_MS)))
    const found = await Promise.all(old.map((token) => this.getApplication(token)))
    const stale = old.filter((_, i) => found[i] === undefined)
    if (stale.length > 0) await this.#call((c) => c.zrem(key, ...stale))
    return stale.length
  }

  async getApplication(appToken: string): Promise<ApplicationRecord | undefined> {
    // A plain HGETALL, not READ_HASH: the gate keeps the applications it found, so what reaches
    // Redis is mostly made-up app tokens (a flood of them): a command costs Redis less than a
    // script (1.9 against 6.3 µs for a user's hash), and an empty reply costs the client next
    // to nothing either way.
    return decode(APPLICATION, await this.#call((c) => c.hgetall(this.#appKey(appToken))))
  }

  async listApplications(filter?: ApplicationFilter): Promise<ApplicationRecord[]> {
    if (filter !== undefined) {
      // At most the owner's cap of reads, in the {apps} slot; a place without its application is skipped.
      const tokens = await this.#call((c) => c.zrange(ownerAppsKey(this.#p, filter.ownerId), '0', '-1'))
      const found = await Promise.all(tokens.map((token) => this.getApplication(token)))
      return found
        .filter((r): r is ApplicationRecord => r !== undefined && r.ownerId === filter.ownerId)
        .sort((a, b) => a.createdAt - b.createdAt || (a.appToken < b.appToken ? -1 : a.appToken > b.appToken ? 1 : 0))
    }
    const rows = (await this.#run(LIST_INDEXED, [`${this.#p}{apps}:index`], [this.#argKey(`${this.#p}{apps}:app:`)])) as string[][]
    return rows.map((row) => decode<ApplicationRecord>(APPLICATION, row)).filter((r) => r !== undefined)
  }

  async updateApplication(appToken: string, patch: ApplicationPatch): Promise<ApplicationRecord | undefined> {
    const updated = decode<ApplicationRecord>(APPLICATION, (await this.#run(PATCH, [this.#appKey(appToken)], encodePatch(APPLICATION, patch))) as string[] | null)
    if (updated !== undefined) await this.#changed(appToken)
    return updated
  }

  async deleteApplication(appToken: string): Promise<boolean> {
    const [n, owner] = (await this.#run(DELETE_APPLICATION, [this.#appKey(appToken), `${this.#p}{apps}:index`], [appToken])) as [number, string]
    const deleted = n === 1
    if (owner !== '') await this.#call((c) => c.zrem(ownerAppsKey(this.#p, owner), appToken))
    if (deleted) await this.#changed(appToken)
    return deleted
  }

  // ---- users ----

  async insertUser(record: UserRecord): Promise<void> {
    const keys = [this.#userKey(record.id), `${this.#p}{users}:names`, `${this.#p}{users}:skeletons`]
    const created = await this.#run(CREATE_USER, keys, [record.username, record.id, record.usernameSkeleton ?? '', 'v', newVersion(), ...encode(USER, record)])
    if (created === 0) throw new Error('a user with this id exists')
    if (created !== 1) throw new Error('a user with this username exists')
  }

  async getUser(id: string): Promise<UserRecord | undefined> {
    return this.#readHash(USER, this.#userKey(id))
  }

  /** A user by a name in `index` (the usernames or their skeletons), through {@link USER_BY_NAME}. */
  #userByName(index: string, name: string): Promise<UserRecord | undefined> {
    return this.#run(USER_BY_NAME, [index], [name, this.#argKey(`${this.#p}{users}:user:`)]).then((reply) => decodeJsonHash<UserRecord>(USER, reply))
  }

  async getUserByUsername(username: string): Promise<UserRecord | undefined> {
    return this.#userByName(`${this.#p}{users}:names`, username)
  }

  /**
   * A user by the skeleton of the username (`{users}:skeletons`, skeleton → id). The first
   * call on a store whose users were saved before skeletons existed gives each of them its
   * skeleton first (once per store: `{users}:skeletons:complete` remembers it).
   */
  async getUserBySkeleton(skeleton: string): Promise<UserRecord | undefined> {
    await this.#indexSkeletons()
    return this.#userByName(`${this.#p}{users}:skeletons`, skeleton)
  }

  async #indexSkeletons(): Promise<void> {
    const done = `${this.#p}{users}:skeletons:complete`
    if ((await this.#call((c) => c.exists(done))) === 1) return
    for (const user of await this.listUsers()) {
      if (typeof user.usernameSkeleton === 'string') continue
      await this.#run(INDEX_SKELETON, [this.#userKey(user.id), `${this.#p}{users}:skeletons`], [await usernameSkeleton(user.username), user.id, newVersion()])
    }
    await this.#call((c) => c.set(done, '1'))
  }

  /** Every user, oldest first: for operators (the command's `users list`), never on the request path. */
  async listUsers(): Promise<UserRecord[]> {
    const ids = await this.#call((c) => c.hvals(`${this.#p}{users}:names`))
    const found = await Promise.all(ids.map((id) => this.getUser(id)))
    return found.filter((u): u is UserRecord => u !== undefined).sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
  }

  /** With a new version `v` in the same script: the request lookups' copies of the user are then not it (`./record-copies.ts`). */
  async updateUser(id: string, patch: UserPatch): Promise<UserRecord | undefined> {
    return decode(USER, (await this.#run(PATCH, [this.#userKey(id)], encodePatch(USER, patch, ['v', newVersion()]))) as string[] | null)
  }

  async deleteUser(id: string): Promise<boolean> {
    return (await this.#run(DELETE_USER, [this.#userKey(id), `${this.#p}{users}:names`, `${this.#p}{users}:skeletons`], [id])) === 1
  }

  // ---- API keys ----

  /** Where a key's owner is recorded, in the key id's own slot: what makes key ids unique. */
  #keyOwner(keyId: string): string {
    return `${this.#p}keyowner:{${keyId}}`
  }
  /** The prefix of everything of one user's keys, in the user's slot (see `CREATE_API_KEY`). */
  #userKeys(userId: string): string {
    return `${this.#p}{u:${userId}}:`
  }

  /**
   * Claims the key id (`SET NX` in its own slot), then saves the key in its user's slot
   * with one script that checks the name and the caps and indexes it, atomically.
   */
  async insertApiKey(record: ApiKeyRecord, limits?: ApiKeyLimits): Promise<ApiKeyInsertResult> {
    const owner = this.#keyOwner(record.keyId)
    if ((await this.#call((c) => c.set(owner, record.userId, 'NX'))) !== 'OK') throw new Error('an API key with this id exists')
    let result: unknown
    try {
      const P = this.#userKeys(record.userId)
      const caps = limits === undefined ? ['', ''] : [limits.maxActive, limits.maxTotal]
      result = await this.#run(CREATE_API_KEY, [`${P}keys:c`], [this.#argKey(P), Date.now(), ...caps, record.keyId, ...encode(API_KEY, record), ...searchFields(record.name), 'v', newVersion()])
    } catch (error) {
      await this.#call((c) => c.del(owner)).catch(() => {})
      throw error
    }
    if (result === 'created') return 'created'
    await this.#call((c) => c.del(owner))
    if (result === 'exists') throw new Error('an API key with this id exists')
    return result as ApiKeyInsertResult
  }

  /** Two commands: the key id's owner, then the key in the owner's slot. */
  async getApiKey(keyId: string): Promise<ApiKeyRecord | undefined> {
    const userId = await this.#call((c) => c.get(this.#keyOwner(keyId)))
    if (userId === null) return undefined
    const key = await this.#readHash<ApiKeyRecord>(API_KEY, `${this.#userKeys(userId)}key:${keyId}`)
    this.#cluster?.sawKey(keyId, key)
    return key
  }

  /**
   * One script in the user's slot: a rank range of the sorted set of the query's order,
   * each key of the page read (see `LIST_API_KEYS`). About `limit` commands inside, however
   * many keys the user has; a `nameSearch` looks at up to {@link NAME_SEARCH_SCAN} keys.
   * Without a query, every key of the user, oldest first (operators only).
   */
  async listApiKeys(userId: string, query?: ApiKeyQuery): Promise<ApiKeyRecord[]> {
    const P = this.#userKeys(userId)
    const q = query ?? { limit: 1_000_000_000, sortBy: 'createdAt', order: 'asc', includeRevoked: true }
    const set = SORT_SETS[q.sortBy] + (q.includeRevoked ? '' : 'a')
    const search = q.nameSearch ?? ''
    const rows = (await this.#run(LIST_API_KEYS, [`${P}keys:c`], [this.#argKey(P), Date.now(), set, q.order, q.limit, q.after ?? '', q.sortBy, search.toLowerCase(), search, NAME_SEARCH_SCAN])) as string[][]
    return rows.map((row) => decode<ApiKeyRecord>(API_KEY, row)).filter((r): r is ApiKeyRecord => r !== undefined)
  }

  async updateApiKey(keyId: string, patch: ApiKeyPatch): Promise<ApiKeyRecord | undefined> {
    const userId = await this.#call((c) => c.get(this.#keyOwner(keyId)))
    if (userId === null) return undefined
    const P = this.#userKeys(userId)
    // A new version with every write: the request lookups' copies of the key are then not it
    // (`./record-copies.ts`). A key made active again is no longer to be purged.
    const set = patch.name === undefined ? ['v', newVersion()] : [...searchFields(patch.name), 'v', newVersion()]
    const encoded = encodePatch(API_KEY, patch, set, patch.revokedAt === null ? ['purgeAt'] : [])
    return decode(API_KEY, (await this.#run(PATCH_API_KEY, [`${P}keys:c`], [this.#argKey(P), keyId, ...encoded])) as string[] | null)
  }

  /**
   * A compare-and-set in the key's user's slot; the key's hash and its owner record expire
   * a day after `purgeAt`, should the user never list or create keys again.
   */
  async revokeApiKey(keyId: string, at: number, purgeAt: number): Promise<ApiKeyRecord | undefined> {
    const owner = this.#keyOwner(keyId)
    const userId = await this.#call((c) => c.get(owner))
    if (userId === null) return undefined
    const P = this.#userKeys(userId)
    const expireAt = purgeAt + PURGED_KEY_EXPIRY_MS
    const revoked = decode<ApiKeyRecord>(API_KEY, (await this.#run(REVOKE_API_KEY, [`${P}keys:c`], [this.#argKey(P), keyId, at, purgeAt, expireAt, newVersion()])) as string[] | null)
    if (revoked !== undefined) await this.#call((c) => c.pexpireat(owner, expireAt)).catch(() => {})
    return revoked
  }

  // ---- access tokens ----

  async insertAccessToken(record: AccessTokenRecord): Promise<void> {
    // Indexes first, so that a revocation that starts once this call has returned finds
    // the token; an index entry whose token never came to be is dropped when met.
    const filters: AccessTokenFilter[] = [{ userId: record.userId }, { appToken: record.appToken }]
    if (record.codeHash !== null) filters.push({ codeHash: record.codeHash })
    await Promise.all(filters.map((f) => this.#run(INDEX_ADD, [this.#tokenIndex(f).index], [record.createdAt, record.tokenHash, record.expiresAt])))
    const created = await this.#run(CREATE, [this.#tokenKey(record.tokenHash)], [record.expiresAt, ...encode(ACCESS_TOKEN, record)])
    if (created !== 1) throw new Error('an access token with this hash exists')
  }

  async getAccessToken(tokenHash: string): Promise<AccessTokenRecord | undefined> {
    const token = await this.#readAccessToken(tokenHash)
    this.#cluster?.sawToken(tokenHash, token)
    return token
  }

  async #readAccessToken(tokenHash: string): Promise<AccessTokenRecord | undefined> {
    return this.#readHash(ACCESS_TOKEN, this.#tokenKey(tokenHash))
  }

  async revokeAccessToken(tokenHash: string, at: number): Promise<boolean> {
    return (await this.#run(SET_ONCE, [this.#tokenKey(tokenHash)], ['revokedAt', at])) === 1
  }

  /**
   * Each token is revoked by its own compare-and-set, so concurrent revocations count
   * each token once, and every token inserted before this call is in the index it reads.
   */
  async revokeAccessTokens(filter: AccessTokenFilter, at: number): Promise<number> {
    const { index, condition } = this.#tokenIndex(filter)
    const hashes = await this.#call((c) => c.zrange(index, '0', '-1'))
    const results = await Promise.all(hashes.map((hash) => this.#run(SET_ONCE, [this.#tokenKey(hash)], ['revokedAt', at, ...condition])))
    const gone = hashes.filter((_, i) => results[i] === -1)
    if (gone.length > 0) await this.#call((c) => c.zrem(index, ...gone))
    return results.filter((r) => r === 1).length
  }

  /** A user's live tokens, oldest first: the user's index, each token read in its own slot. */
  async listAccessTokens(userId: string): Promise<AccessTokenRecord[]> {
    const hashes = await this.#call((c) => c.zrange(this.#tokenIndex({ userId }).index, '0', '-1'))
    const now = Date.now()
    const tokens = await Promise.all(hashes.map((hash) => this.#readAccessToken(hash)))
    return tokens
      .filter((t): t is AccessTokenRecord => isLiveAccessToken(t, now) && t.userId === userId)
      .sort((a, b) => a.createdAt - b.createdAt || (a.tokenHash < b.tokenHash ? -1 : a.tokenHash > b.tokenHash ? 1 : 0))
  }

  // ---- grants ----

  #grantsKey(userId: string): string {
    return `${this.#p}{u:${userId}}:grants`
  }

  async recordGrant(userId: string, appToken: string, at: number): Promise<void> {
    await this.#run(RECORD_GRANT, [this.#grantsKey(userId)], [appToken, at])
  }

  async touchGrant(userId: string, appToken: string, at: number): Promise<void> {
    await this.#run(TOUCH_GRANT, [this.#grantsKey(userId)], [appToken, at])
  }

  async getGrant(userId: string, appToken: string): Promise<GrantRecord | undefined> {
    const value = await this.#call((c) => c.hget(this.#grantsKey(userId), appToken))
    return value === null ? undefined : grant(userId, appToken, value)
  }

  async listGrants(userId: string): Promise<GrantRecord[]> {
    const all = await this.#call((c) => c.hgetall(this.#grantsKey(userId)))
    return Object.entries(all)
      .map(([appToken, value]) => grant(userId, appToken, value))
      .sort((a, b) => a.firstAuthorizedAt - b.firstAuthorizedAt || (a.appToken < b.appToken ? -1 : a.appToken > b.appToken ? 1 : 0))
  }

  async deleteGrant(userId: string, appToken: string): Promise<boolean> {
    return (await this.#call((c) => c.hdel(this.#grantsKey(userId), appToken))) === 1
  }

  // ---- authorization codes ----

  async insertAuthorizationCode(record: AuthorizationCodeRecord): Promise<void> {
    const created = await this.#run(CREATE, [this.#codeKey(record.codeHash)], [record.expiresAt + this.#codeRetentionMs, ...encode(CODE, record)])
    if (created !== 1) throw new Error('an authorization code with this hash exists')
  }

  async getAuthorizationCode(codeHash: string): Promise<AuthorizationCodeRecord | undefined> {
    return this.#readHash(CODE, this.#codeKey(codeHash))
  }

  async consumeAuthorizationCode(codeHash: string, at: number): Promise<boolean> {
    return (await this.#run(SET_ONCE, [this.#codeKey(codeHash)], ['usedAt', at])) === 1
  }

  // ---- sessions ----

  async insertSession(record: SessionRecord): Promise<void> {
    const created = await this.#run(
      CREATE_SESSION,
      [this.#sessionKey(record.sessionHash), `${this.#p}{sessions}:u:${record.userId}`],
      [record.createdAt, record.sessionHash, record.expiresAt, ...encode(SESSION, record)],
    )
    if (created !== 1) throw new Error('a session with this hash exists')
  }

  async getSession(sessionHash: string): Promise<SessionRecord | undefined> {
    const session = await this.#readHash<SessionRecord>(SESSION, this.#sessionKey(sessionHash))
    // Redis drops it at expiresAt; this covers the last millisecond.
    return session !== undefined && session.expiresAt > Date.now() ? session : undefined
  }

  async deleteSession(sessionHash: string): Promise<boolean> {
    return (await this.#run(DELETE_SESSION, [this.#sessionKey(sessionHash)], [sessionHash, this.#argKey(`${this.#p}{sessions}:u:`)])) === 1
  }

  /** Deletes all but the newest `keep` sessions of a user; returns how many it deleted. */
  async trimSessions(userId: string, keep: number): Promise<number> {
    return Number(await this.#run(TRIM_SESSIONS, [`${this.#p}{sessions}:u:${userId}`], [keep, this.#argKey(`${this.#p}{sessions}:s:`)]))
  }

  // ---- rate steps ----

  consumeRate(key: string, limit: number, windowMs: number, cost: number): Promise<RateResult> {
    return this.#run(GCRA, [this.#rateKey(key)], [limit, windowMs, cost], gcraResult)
  }

  /**
   * Several limits all or nothing: one `EVALSHA` of the script `LIMITS`. On Cluster every key
   * must hash to one slot: the keys of one subject do (`limitRateKey`); others are refused
   * with a `TypeError` before anything is sent.
   */
  consumeLimits(steps: readonly LimitStep[]): Promise<LimitResult[]> {
    const invalid = invalidLimitSteps(steps)
    if (invalid !== undefined) return Promise.reject(new TypeError(`open-data-gate: consumeLimits: ${invalid}`))
    if (steps.length === 0) return Promise.resolve([])
    const keys = steps.map((step) => this.#rateKey(step.key))
    if (this.#cluster !== undefined && keys.some((key) => hashTag(key) !== hashTag(keys[0]!))) {
      return Promise.reject(new TypeError(`open-data-gate: consumeLimits on Redis Cluster needs every key in one hash slot (keys of one subject, made by limitRateKey), got ${steps.map((step) => JSON.stringify(step.key)).join(', ')}`))
    }
    return this.#run(LIMITS, keys, limitArgs(steps), (reply) => limitResults(reply as string))
  }

  /**
   * A rate key's Redis key: `rate:{key}`, hashed by the whole key; or, for a key that starts
   * with a hash tag (`{app:abc}:day`, see `limitRateKey`), `rate:{app:abc}:day`, hashed by the
   * tag, so that a subject's limits share its slot. No key of the gate's own starts with `{`,
   * so every key made before limits is where it was.
   */
  #rateKey(key: string): string {
    return key.startsWith('{') ? `${this.#p}rate:${key}` : `${this.#p}rate:{${key}}`
  }

  #lookupRequest(lookup: RequestLookup): Promise<RequestLookupResult> {
    const { credential } = lookup
    const copies = (this.#copies ??= new RecordCopies())
    const held: HeldCopies = {}
    let kind: 't' | 'k' | 'u'
    let id: string
    let recordKey: string
    // The script's arguments: see LOOKUP_REQUEST (few, as each costs the server).
    let args: Array<string | number>
    if (credential.kind === 'accessToken') {
      kind = 't'
      id = credential.tokenHash
      recordKey = this.#tokenKey(id)
      const [, copy, userV, userAt] = copies.hold(kind, id, credential.now, held)
      args = [lookup.budget === 'token' ? 'T' : 't', this.#argKey(this.#p), credential.now, lookup.budget === 'token' ? (lookup.appToken ?? '') : '', copy, userV, userAt]
    } else if (credential.kind === 'apiKey') {
      kind = 'k'
      id = credential.keyId
      recordKey = this.#keyOwner(id)
      const [secret, copy, userV, userAt] = copies.hold(kind, id, 0, held)
      args = ['k', this.#argKey(this.#p), id, secret, copy, userV, userAt]
    } else {
      kind = 'u'
      id = credential.userId
      recordKey = this.#userKey(id)
      const [, , userV, userAt] = copies.hold(kind, id, 0, held)
      args = ['u', '', '', '', '', userV, userAt]
    }
    // The step `otherwise` is taken only for a token with the token's budget.
    const byToken = lookup.budget === 'token' && kind === 't'
    if (lookup.limits !== undefined) {
      const other = byToken ? (lookup.otherwiseLimits ?? null) : null
      const steps = other === null ? lookup.limits : [...lookup.limits, ...other]
      const invalid = invalidLimitSteps(lookup.limits) ?? (other === null ? undefined : invalidLimitSteps(other))
      if (invalid !== undefined) return Promise.reject(new TypeError(`open-data-gate: lookupRequest: ${invalid}`))
      args.push('L', lookup.limits.length, other === null ? '' : other.length, ...limitArgs(steps))
      const keys = [recordKey, ...steps.map((step) => this.#rateKey(step.key))]
      return this.#run(LOOKUP_REQUEST_LIMITS, keys, args, (reply) => lookedUp(copies, kind, id, held, reply as string, true))
    }
    const { rate } = lookup
    const other = byToken ? (lookup.otherwise ?? null) : null
    const keys = [recordKey, this.#rateKey(rate.key)]
    args.push(rate.limit, rate.windowMs, rate.cost)
    if (other !== null) {
      keys.push(this.#rateKey(other.key))
      args.push(other.limit, other.windowMs, other.cost)
    }
    return this.#run(LOOKUP_REQUEST, keys, args, (reply) => lookedUp(copies, kind, id, held, reply as string, false))
  }

  async resetRate(key: string): Promise<void> {
    await this.#call((c) => c.del(this.#rateKey(key)))
  }

  // ---- usage (./usage.ts) ----

  #usageSlice(): RedisUsage {
    return (this.#usage ??= new RedisUsage((send) => this.#call(send), this.#p, (send) => this.#callReader(send)))
  }

  /**
   * A usage read, on its own connection (made at the first read). While that connection is
   * not up (the first read, a reconnect after an outage), and once the store is closed, on
   * the store's client: a read goes in bounded scripts, so it holds that connection little,
   * and a read must not fail because a second connection lags behind the first.
   */
  #callReader<T>(send: (client: RedisClient) => Promise<T>): Promise<T> {
    if (this.#closed) return this.#call(send)
    if (this.#reader === undefined) {
      this.#reader = readerConnection(this.#client)
      this.#reader.on('error', () => {})
    }
    return this.#reader.status === 'ready' ? send(this.#reader) : this.#call(send)
  }
  addUsage(batch: UsageBatch): Promise<void> {
    return this.#usageSlice().add(batch)
  }
  getUsage(appToken: string | null, granularity: UsageGranularity, from: number, to: number): Promise<UsageBucket[]> {
    return this.#usageSlice().get(appToken, granularity, from, to)
  }
  topUsage(query: UsageTopQuery): Promise<UsageTotal[]> {
    return this.#usageSlice().top(query)
  }
}

/** The {@link GCRA} script's reply, 'allowed remaining resetMs retryAfterMs', as a result. */
function gcraResult(reply: unknown): RateResult {
  const step = (reply as string).split(' ')
  return { allowed: step[0] === '1', remaining: Number(step[1]), resetMs: Number(step[2]), retryAfterMs: Number(step[3]) }
}

/** {@link LIMITS}'s arguments: five per step. */
function limitArgs(steps: readonly LimitStep[]): Array<string | number> {
  const args: Array<string | number> = []
  for (const step of steps) {
    if (step.kind === 'rate') args.push('r', step.limit, step.windowMs, '', step.cost)
    else args.push('q', step.limit, step.periodStart, step.periodEnd, step.cost)
  }
  return args
}

/** {@link LIMITS}'s reply, 'taken' then four numbers per step, as results. */
function limitResults(reply: string): LimitResult[] {
  const n = reply.split(' ')
  const out: LimitResult[] = []
  for (let i = 1; i + 3 < n.length; i += 4) out.push({ allowed: n[i] === '1', remaining: Number(n[i + 1]), resetMs: Number(n[i + 2]), retryAfterMs: Number(n[i + 3]) })
  return out
}

function isRateStep(budget: LookupBudget): budget is RateStep {
  return !Array.isArray(budget)
}

/** What Redis Cluster hashes a key by: the first `{…}` that holds something, else the whole key. */
function hashTag(key: string): string {
  const open = key.indexOf('{')
  const close = open === -1 ? -1 : key.indexOf('}', open + 1)
  return close > open + 1 ? key.slice(open + 1, close) : key
}

/**
 * {@link LOOKUP_REQUEST}'s reply as a result: flags, a token's revokedAt, the step's reply,
 * and after a newline the JSON of the hashes sent whole; a record the script did not send
 * is the client's copy `held`.
 * @param several whether the step was several limits ({@link LIMITS}'s reply) rather than one rate step ({@link GCRA}'s)
 */
function lookedUp(copies: RecordCopies, kind: 't' | 'k' | 'u', id: string, held: HeldCopies, reply: string, several: boolean): RequestLookupResult {
  const stepped = reply.charCodeAt(0) - 48
  const recordFlag = reply[1]!
  const userFlag = reply[2]!
  const space = reply.indexOf(' ', 4)
  const newline = reply.indexOf('\n', space)
  const revokedAt = reply.slice(4, space)
  const step = reply.slice(space + 1, newline === -1 ? undefined : newline)
  const whole = newline === -1 ? undefined : (JSON.parse(reply.slice(newline + 1)) as string[][])
  let sent = 0
  const out: { -readonly [K in keyof RequestLookupResult]: RequestLookupResult[K] } = { stepped: stepped === 0 ? null : stepped === 1 ? 'rate' : 'otherwise', result: null }
  if (stepped !== 0) {
    if (!several) out.result = gcraResult(step)
    else {
      const results = limitResults(step)
      out.result = summaryResult(results)
      out.results = results
    }
  }
  let userId: string | undefined
  if (recordFlag !== '0') {
    const record = recordFlag === '+' ? whole![sent++] : undefined
    if (kind === 't') userId = (out.accessToken = copies.token(id, recordFlag, held.token, revokedAt, record))?.userId
    else userId = (out.apiKey = copies.apiKey(id, recordFlag, held.key, record))?.userId
  } else if (kind === 'u') userId = id
  if (userFlag !== '0') out.user = copies.user(userId, userFlag, held.user, userFlag === '+' ? whole![sent] : undefined)
  return out
}

/** The sorted set of each order; with `a` appended, the active keys' one. */
const SORT_SETS: Record<ApiKeyQuery['sortBy'], string> = { createdAt: 'c', lastUsedAt: 'l', revokedAt: 'r', name: 'n' }

/** How many keys a `nameSearch` looks at, at most, past the seek key: a page may end early after that many. */
export const NAME_SEARCH_SCAN = 2000

/** A revoked key's hash and owner record expire this long after its purge time, in case no listing purged it. */
const PURGED_KEY_EXPIRY_MS = 86_400_000
