/**
 * The PostgreSQL store: durable records where the platform keeps its data, and (if no
 * other store takes them) the rate steps, all on one database shared by every instance.
 *
 * Every operation the contract calls atomic is one SQL statement: a GCRA step is one
 * `INSERT ... ON CONFLICT ... DO UPDATE ... RETURNING` on the database's clock, consuming a
 * code is `UPDATE ... WHERE used_at IS NULL RETURNING`, a patch is an `UPDATE` of the
 * given columns, a revocation is one `UPDATE`. Request-path statements are prepared
 * (named) per connection. Expired rows are swept in bounded batches by an unref'd timer.
 * Changes to applications are announced with LISTEN/NOTIFY to every instance.
 *
 * @see docs/guides/postgresql.md
 * @module open-data-gate/postgres
 */
import pg from 'pg'
import { gcraStep, emissionInterval, type RateResult } from '../../limits/gcra.js'
import { invalidLimitSteps, limitsStep, QUOTA_KEEP_MS, type LimitResult, type LimitStep } from '../../limits/limit-steps.js'
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
import { ApplicationChangeListener, changeChannel } from './listener.js'
import { migrateSchema, schemaVersionOf, SCHEMA_VERSION, type MigrationResult } from './migrate.js'
import { PreparedStatements, type PostgresPool, type PostgresPoolOptions, type PostgresResult, type Row } from './pool.js'
import {
  API_KEY_COLUMNS,
  API_KEY_PATCH,
  API_KEY_SORT,
  APPLICATION_COLUMNS,
  APPLICATION_PATCH,
  CODE_COLUMNS,
  GRANT_COLUMNS,
  joinedUser,
  optionalNumber,
  prefixed,
  SESSION_COLUMNS,
  sortOf,
  toAccessToken,
  toApiKey,
  toApplication,
  toCode,
  toGrant,
  toSession,
  toUser,
  TOKEN_COLUMNS,
  USER_COLUMNS,
  USER_PATCH,
} from './rows.js'
import { Sweeper, type SweepResult } from './sweeper.js'
import type { UsageBatch, UsageBucket, UsageGranularity, UsageStore, UsageTopQuery, UsageTotal } from '../usage-contract.js'
import { PostgresUsage } from './usage.js'

export type { PostgresQuery, PostgresResult, PostgresPoolClient, PostgresPool, PostgresPoolOptions } from './pool.js'
export type { MigrationResult } from './migrate.js'
export type { SweepResult } from './sweeper.js'

/** Options of {@link PostgresStore}: a connection string (the store owns its pool) or your pool. */
export type PostgresStoreOptions = PostgresStoreCommonOptions &
  (
    | {
        /** `postgres://user@host:5432/db`: the store makes its own pool and ends it on `close()`. */
        connectionString: string
        /** More options for the store's own `pg.Pool` (`max`, `ssl`, ...). Default: 10 connections, a 5 s connection timeout. */
        poolOptions?: PostgresPoolOptions
        pool?: never
      }
    | {
        /** Your `pg.Pool`: the store never ends it. Change notifications hold one of its connections while a gate is attached. */
        pool: PostgresPool
        connectionString?: never
        poolOptions?: never
      }
  )


/** Options of {@link PostgresStore} whichever way it connects. */
export interface PostgresStoreCommonOptions {
  /** The schema of the store's tables, created by {@link PostgresStore.migrate}. Default `open_data_gate`. */
  schema?: string
  /** How often expired rows are swept, in ms; 0 turns the timer off (call {@link PostgresStore.sweep} yourself). Default 60 000. */
  sweepIntervalMs?: number
  /** Rows deleted per statement by a sweep, so that no sweep holds many locks or a long transaction. Default 1000. */
  sweepBatchSize?: number
  /**
   * Called with failures nobody is waiting for: a background sweep, the change-notification
   * connection. Default: ignored (the gate sees an outage on the request path anyway).
   */
  onError?: (error: unknown) => void
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,39}$/
/** How long a user row read along with a token or key may answer the `getUser` that follows. */
const PREFETCH_MS = 100
const PREFETCH_MAX = 1000
/** Advisory lock class of a user's API keys while one is created (the second key is a hash of the schema and user). */
const API_KEY_LOCK_CLASS = 0x0d6a7f
/** Advisory lock class for an owner's application registrations (the second key is the schema and owner). */
const APPLICATION_LOCK_CLASS = 0x0d6a80

/**
 * The {@link GateStore} on PostgreSQL (with `pg`, an optional peer dependency).
 *
 * @example
 * import { PostgresStore } from 'open-data-gate/postgres'
 * const connectionString = process.env.DATABASE_URL
 * if (!connectionString) throw new Error('Set DATABASE_URL, e.g. postgres://user:password@host:5432/database')
 * const store = new PostgresStore({ connectionString, schema: 'open_data_gate' })
 * await store.migrate()
 * const gate = createGate({ store })
 */
export class PostgresStore implements GateStore, UsageStore {
  /** The schema version this code reads and writes; {@link migrate} brings a database to it. */
  static readonly schemaVersion = SCHEMA_VERSION

  /** The schema name, as given. */
  readonly schema: string
  readonly #pool: PostgresPool
  readonly #ownsPool: boolean
  readonly #q: string
  readonly #statements: PreparedStatements
  readonly #changes: ApplicationChangeListener
  readonly #sweeper: Sweeper
  /** Users read along with a token or key (at most 100 ms ago), for the `getUser` that follows: one query per request. */
  readonly #prefetched = new Map<string, { user: UserRecord | undefined; at: number }>()
  #closed = false
  readonly #usage: PostgresUsage

  constructor(options: PostgresStoreOptions) {
    const schema = options.schema ?? 'open_data_gate'
    if (!SCHEMA_NAME.test(schema)) {
      throw new TypeError(`open-data-gate: PostgresStore schema must be 1-40 lower-case letters, digits or underscores, not starting with a digit; got ${JSON.stringify(schema)}`)
    }
    const sweepIntervalMs = options.sweepIntervalMs ?? 60_000
    const sweepBatchSize = options.sweepBatchSize ?? 1000
    if (!Number.isSafeInteger(sweepIntervalMs) || sweepIntervalMs < 0) throw new TypeError(`open-data-gate: PostgresStore sweepIntervalMs must be a non-negative integer, got ${String(sweepIntervalMs)}`)
    if (!Number.isSafeInteger(sweepBatchSize) || sweepBatchSize < 1) throw new TypeError(`open-data-gate: PostgresStore sweepBatchSize must be a positive integer, got ${String(sweepBatchSize)}`)
    if (options.pool !== undefined && options.connectionString !== undefined) throw new TypeError('open-data-gate: PostgresStore takes either a connectionString or a pool, not both')
    const onError = options.onError ?? (() => {})
    if (options.pool !== undefined) {
      this.#pool = options.pool
      this.#ownsPool = false
    } else if (typeof options.connectionString === 'string' && options.connectionString !== '') {
      const pool = new pg.Pool({ max: 10, connectionTimeoutMillis: 5000, ...options.poolOptions, connectionString: options.connectionString })
      // An idle connection dropped by the server (a restart) must not crash the process;
      // the next query gets a new connection.
      pool.on('error', (error) => onError(error))
      this.#pool = pool as unknown as PostgresPool
      this.#ownsPool = true
    } else {
      throw new TypeError('open-data-gate: PostgresStore needs a connectionString (postgres://...) or a pool')
    }
    this.schema = schema
    this.#q = pg.escapeIdentifier(schema)
    this.#statements = new PreparedStatements(this.#pool)
    this.#changes = new ApplicationChangeListener(this.#pool, changeChannel(schema), onError)
    this.#usage = new PostgresUsage((text, values) => this.#statements.run(text, values), this.#q)
    this.#sweeper = new Sweeper({ statements: this.#statements, q: this.#q, usage: this.#usage, intervalMs: sweepIntervalMs, batchSize: sweepBatchSize, onError })
  }

  /**
   * Creates the schema or brings it to {@link PostgresStore.schemaVersion}, in one
   * transaction under an advisory lock: several instances may run it at once, and one of
   * them does the work while the others wait and find nothing to do. Running it on an
   * up-to-date schema changes nothing.
   */
  migrate(): Promise<MigrationResult> {
    return migrateSchema(this.#pool, this.schema, this.#q)
  }

  /** The schema's version in the database (0 when {@link migrate} never ran). */
  version(): Promise<number> {
    return schemaVersionOf(this.#pool, this.#q)
  }

  /**
   * Deletes revoked API keys past their purge time, expired access tokens, sessions and drained rate rows, and authorization codes
   * an hour after they expired (a replay within that hour still revokes the tokens issued
   * from the code), in batches of `sweepBatchSize`. The timer calls it; an operator may too.
   * Concurrent calls share one run.
   */
  sweep(): Promise<SweepResult> {
    return this.#sweeper.sweep()
  }

  /** Starts listening for application changes with the first sink; every sink gets every change. */
  attach(sink: StoreEventSink): void {
    this.#changes.attach(sink)
  }

  /** Stops the timers and the listener, and ends the pool if the store made it. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#changes.close()
    await this.#sweeper.close()
    if (this.#ownsPool) await this.#pool.end()
  }

  async #one<T>(text: string, values: unknown[], map: (row: Row) => T): Promise<T | undefined> {
    const { rows } = await this.#statements.run(text, values)
    return rows[0] === undefined ? undefined : map(rows[0])
  }

  async #all<T>(text: string, values: unknown[], map: (row: Row) => T): Promise<T[]> {
    const { rows } = await this.#statements.run(text, values)
    return rows.map(map)
  }

  async #count(text: string, values: unknown[]): Promise<number> {
    return (await this.#statements.run(text, values)).rowCount ?? 0
  }

  /** `UPDATE ... SET` of the patch's fields only, returning the new row. */
  async #patch<T>(table: string, keyColumn: string, key: string, patch: object, columns: Record<string, string>, returning: string, map: (row: Row) => T): Promise<T | undefined> {
    const sets: string[] = []
    const values: unknown[] = [key]
    for (const [field, value] of Object.entries(patch)) {
      const column = columns[field]
      if (column === undefined || value === undefined) continue
      values.push(value)
      sets.push(`${column} = $${values.length}`)
    }
    if (sets.length === 0) return this.#one(`SELECT ${returning} FROM ${this.#q}.${table} WHERE ${keyColumn} = $1`, values, map)
    return this.#one(`UPDATE ${this.#q}.${table} SET ${sets.join(', ')} WHERE ${keyColumn} = $1 RETURNING ${returning}`, values, map)
  }

  // Applications

  /**
   * Without limits (or without an owner), one INSERT. With them, a transaction that takes a
   * per-owner advisory lock, then one statement that inserts only while the owner has fewer
   * than the cap: registrations of one owner run one after the other, each seeing the others'.
   */
  async insertApplication(record: ApplicationRecord, limits?: ApplicationLimits): Promise<ApplicationInsertResult> {
    await this.#changes.beforeWrite()
    const values = [
      record.appToken,
      record.name,
      record.secretHash,
      record.callbackPrefix,
      record.limit,
      record.ownerId,
      record.previousSecretHash,
      record.previousSecretExpiresAt,
      record.suspendedAt ?? null,
      record.suspensionReason ?? null,
      record.plan ?? null,
      record.createdAt,
      record.updatedAt,
    ]
    if (limits === undefined || record.ownerId === null) {
      await this.#statements.run(`INSERT INTO ${this.#q}.applications (${APPLICATION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`, values)
      return 'created'
    }
    const inserted = await this.#transaction(async (query) => {
      await query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [APPLICATION_LOCK_CLASS, `${this.schema}:${record.ownerId}`])
      const { rows } = await query(
        `INSERT INTO ${this.#q}.applications (${APPLICATION_COLUMNS}) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13
         WHERE (SELECT count(*) FROM ${this.#q}.applications WHERE owner_id = $6) < $14::bigint RETURNING app_token`,
        [...values, limits.maxPerOwner],
      )
      return rows.length === 1
    })
    return inserted ? 'created' : 'owner-limit'
  }

  getApplication(appToken: string): Promise<ApplicationRecord | undefined> {
    return this.#one(`SELECT ${APPLICATION_COLUMNS} FROM ${this.#q}.applications WHERE app_token = $1`, [appToken], toApplication)
  }

  listApplications(filter?: ApplicationFilter): Promise<ApplicationRecord[]> {
    if (filter !== undefined) {
      return this.#all(`SELECT ${APPLICATION_COLUMNS} FROM ${this.#q}.applications WHERE owner_id = $1 ORDER BY created_at, app_token`, [filter.ownerId], toApplication)
    }
    return this.#all(`SELECT ${APPLICATION_COLUMNS} FROM ${this.#q}.applications ORDER BY created_at, app_token`, [], toApplication)
  }

  async updateApplication(appToken: string, patch: ApplicationPatch): Promise<ApplicationRecord | undefined> {
    await this.#changes.beforeWrite()
    return this.#patch('applications', 'app_token', appToken, patch, APPLICATION_PATCH, APPLICATION_COLUMNS, toApplication)
  }

  async deleteApplication(appToken: string): Promise<boolean> {
    await this.#changes.beforeWrite()
    return (await this.#count(`DELETE FROM ${this.#q}.applications WHERE app_token = $1`, [appToken])) > 0
  }

  // Users

  async insertUser(record: UserRecord): Promise<void> {
    await this.#statements.run(`INSERT INTO ${this.#q}.users (${USER_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, [
      record.id,
      record.username,
      record.usernameSkeleton ?? null,
      record.screenName,
      record.displayName,
      record.email,
      [...record.rights],
      record.passwordHash,
      record.createdAt,
      record.updatedAt,
    ])
  }

  /**
   * Answered from the row read with a token or key of this user in the last 100 ms, if there
   * is one: concurrent requests of one user each find it, and none sees a row older than that.
   */
  getUser(id: string): Promise<UserRecord | undefined> {
    const prefetched = this.#prefetched.get(id)
    if (prefetched !== undefined) {
      if (Date.now() - prefetched.at <= PREFETCH_MS) return Promise.resolve(prefetched.user)
      this.#prefetched.delete(id)
    }
    return this.#one(`SELECT ${USER_COLUMNS} FROM ${this.#q}.users WHERE id = $1`, [id], toUser)
  }

  getUserByUsername(username: string): Promise<UserRecord | undefined> {
    return this.#one(`SELECT ${USER_COLUMNS} FROM ${this.#q}.users WHERE username = $1`, [username], toUser)
  }

  /** Any user whose username has this skeleton (index `users_by_skeleton`, migration 4). */
  getUserBySkeleton(skeleton: string): Promise<UserRecord | undefined> {
    return this.#one(`SELECT ${USER_COLUMNS} FROM ${this.#q}.users WHERE username_skeleton = $1 LIMIT 1`, [skeleton], toUser)
  }
  /** Every user, oldest first: for operators (the command's `users list`), never on the request path. */
  listUsers(): Promise<UserRecord[]> {
    return this.#all(`SELECT ${USER_COLUMNS} FROM ${this.#q}.users ORDER BY created_at, id`, [], toUser)
  }


  updateUser(id: string, patch: UserPatch): Promise<UserRecord | undefined> {
    this.#prefetched.delete(id)
    const values = patch.rights === undefined ? patch : { ...patch, rights: [...patch.rights] }
    return this.#patch('users', 'id', id, values, USER_PATCH, USER_COLUMNS, toUser)
  }

  async deleteUser(id: string): Promise<boolean> {
    this.#prefetched.delete(id)
    return (await this.#count(`DELETE FROM ${this.#q}.users WHERE id = $1`, [id])) > 0
  }

  /** Keeps the user row read with a token or key for the `getUser` the gate makes next. */
  #prefetch(userId: string, row: Row): void {
    if (this.#prefetched.size >= PREFETCH_MAX) {
      const oldest = this.#prefetched.keys().next()
      if (oldest.done !== true) this.#prefetched.delete(oldest.value)
    }
    this.#prefetched.set(userId, { user: row.u_id === null ? undefined : joinedUser(row), at: Date.now() })
  }

  // API keys

  /**
   * Without limits, one INSERT. With them, a transaction that first takes a per-user
   * advisory lock, then one statement that counts the user's keys, checks the name, inserts
   * only if there is room and deletes the user's keys past their purge time: creates of one
   * user run one after the other, so each sees the others' keys (the lock is taken before
   * the statement's snapshot), and creates of different users never wait for each other.
   */
  async insertApiKey(record: ApiKeyRecord, limits?: ApiKeyLimits): Promise<ApiKeyInsertResult> {
    const values = [record.keyId, record.userId, record.name, record.secretHash, record.createdAt, record.lastUsedAt, record.revokedAt]
    if (limits === undefined) {
      await this.#statements.run(`INSERT INTO ${this.#q}.api_keys (${API_KEY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, values)
      return 'created'
    }
    const row = await this.#transaction(async (query) => {
      await query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [API_KEY_LOCK_CLASS, `${this.schema}:${record.userId}`])
      const { rows } = await query(CREATE_API_KEY(this.#q), [...values, Date.now(), limits.maxActive, limits.maxTotal])
      return rows[0] as Row
    })
    if (row.taken === true) return 'name-taken'
    if (Number(row.active) >= limits.maxActive) return 'active-limit'
    if (Number(row.total) >= limits.maxTotal) return 'total-limit'
    return 'created'
  }

  /** Runs `work` in a transaction on one connection, with prepared statements. */
  async #transaction<T>(work: (query: (text: string, values: unknown[]) => Promise<PostgresResult>) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect()
    let failed: unknown
    try {
      await client.query({ text: 'BEGIN' })
      const result = await work((text, values) => client.query({ name: this.#statements.name(text), text, values }))
      await client.query({ text: 'COMMIT' })
      return result
    } catch (error) {
      failed = error
      await client.query({ text: 'ROLLBACK' }).catch(() => {})
      throw error
    } finally {
      client.release(failed instanceof Error ? failed : undefined)
    }
  }

  /** Reads the key's user in the same query (see {@link getUser}). */
  getApiKey(keyId: string): Promise<ApiKeyRecord | undefined> {
    return this.#one(
      `SELECT ${prefixed('k', API_KEY_COLUMNS)}, ${prefixed('u', USER_COLUMNS, 'u_')} FROM ${this.#q}.api_keys k LEFT JOIN ${this.#q}.users u ON u.id = k.user_id WHERE k.key_id = $1`,
      [keyId],
      (row) => {
        const key = toApiKey(row)
        this.#prefetch(key.userId, row)
        return key
      },
    )
  }

  /**
   * Without `query`, every key of the user, oldest first. With it, one page in the order
   * asked, found by an index range from the key named by `after` (a row comparison).
   */
  listApiKeys(userId: string, query?: ApiKeyQuery): Promise<ApiKeyRecord[]> {
    if (query === undefined) {
      return this.#all(`SELECT ${API_KEY_COLUMNS} FROM ${this.#q}.api_keys WHERE user_id = $1 ORDER BY created_at, key_id`, [userId], toApiKey)
    }
    const sort = API_KEY_SORT[query.sortBy]
    const direction = query.order === 'desc' ? 'DESC' : 'ASC'
    const values: unknown[] = [userId, query.limit]
    const where = ['k.user_id = $1']
    let from = `${this.#q}.api_keys k`
    if (!query.includeRevoked) where.push('k.revoked_at IS NULL')
    if (query.nameSearch !== undefined && query.nameSearch !== '') {
      values.push(query.nameSearch)
      where.push(`(strpos(lower(k.name), lower($${values.length})) > 0 OR k.key_id = $${values.length})`)
    }
    if (query.after !== undefined) {
      values.push(query.after)
      from += `, (SELECT ${sort} AS v, key_id FROM ${this.#q}.api_keys WHERE user_id = $1 AND key_id = $${values.length}) a`
      where.push(`(${sortOf('k', query.sortBy)}, k.key_id) ${direction === 'ASC' ? '>' : '<'} (a.v, a.key_id)`)
    }
    return this.#all(
      `SELECT ${prefixed('k', API_KEY_COLUMNS)} FROM ${from} WHERE ${where.join(' AND ')} ORDER BY ${sortOf('k', query.sortBy)} ${direction}, k.key_id ${direction} LIMIT $2`,
      values,
      toApiKey,
    )
  }

  updateApiKey(keyId: string, patch: ApiKeyPatch): Promise<ApiKeyRecord | undefined> {
    // A key made active again is no longer to be purged.
    const values = patch.revokedAt === null ? { ...patch, purgeAt: null } : patch
    return this.#patch('api_keys', 'key_id', keyId, values, { ...API_KEY_PATCH, purgeAt: 'purge_at' }, API_KEY_COLUMNS, toApiKey)
  }

  /** One `UPDATE ... WHERE revoked_at IS NULL RETURNING`: a compare-and-set. */
  revokeApiKey(keyId: string, at: number, purgeAt: number): Promise<ApiKeyRecord | undefined> {
    return this.#one(`UPDATE ${this.#q}.api_keys SET revoked_at = $2, purge_at = $3 WHERE key_id = $1 AND revoked_at IS NULL RETURNING ${API_KEY_COLUMNS}`, [keyId, at, purgeAt], toApiKey)
  }

  // Access tokens

  async insertAccessToken(record: AccessTokenRecord): Promise<void> {
    await this.#statements.run(`INSERT INTO ${this.#q}.access_tokens (${TOKEN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
      record.tokenHash,
      record.userId,
      record.appToken,
      record.codeHash,
      record.createdAt,
      record.expiresAt,
      record.revokedAt,
    ])
  }

  /** Reads the token's user in the same query (see {@link getUser}). */
  getAccessToken(tokenHash: string): Promise<AccessTokenRecord | undefined> {
    return this.#one(
      `SELECT ${prefixed('t', TOKEN_COLUMNS)}, ${prefixed('u', USER_COLUMNS, 'u_')} FROM ${this.#q}.access_tokens t LEFT JOIN ${this.#q}.users u ON u.id = t.user_id WHERE t.token_hash = $1`,
      [tokenHash],
      (row) => {
        const token = toAccessToken(row)
        this.#prefetch(token.userId, row)
        return token
      },
    )
  }

  async revokeAccessToken(tokenHash: string, at: number): Promise<boolean> {
    return (await this.#count(`UPDATE ${this.#q}.access_tokens SET revoked_at = $2 WHERE token_hash = $1 AND revoked_at IS NULL`, [tokenHash, at])) > 0
  }

  revokeAccessTokens(filter: AccessTokenFilter, at: number): Promise<number> {
    const table = `${this.#q}.access_tokens`
    if ('codeHash' in filter) return this.#count(`UPDATE ${table} SET revoked_at = $2 WHERE code_hash = $1 AND revoked_at IS NULL`, [filter.codeHash, at])
    if (filter.userId !== undefined && filter.appToken !== undefined) {
      return this.#count(`UPDATE ${table} SET revoked_at = $3 WHERE user_id = $1 AND app_token = $2 AND revoked_at IS NULL`, [filter.userId, filter.appToken, at])
    }
    if (filter.userId !== undefined) return this.#count(`UPDATE ${table} SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL`, [filter.userId, at])
    return this.#count(`UPDATE ${table} SET revoked_at = $2 WHERE app_token = $1 AND revoked_at IS NULL`, [filter.appToken, at])
  }

  /** The user's live tokens (not revoked, not expired), oldest first. */
  listAccessTokens(userId: string): Promise<AccessTokenRecord[]> {
    return this.#all(
      `SELECT ${TOKEN_COLUMNS} FROM ${this.#q}.access_tokens WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 ORDER BY created_at, token_hash`,
      [userId, Date.now()],
      toAccessToken,
    )
  }

  // Grants

  async recordGrant(userId: string, appToken: string, at: number): Promise<void> {
    await this.#statements.run(
      `INSERT INTO ${this.#q}.grants AS g (${GRANT_COLUMNS}) VALUES ($1, $2, $3, $3) ON CONFLICT (user_id, app_token) DO UPDATE SET last_used_at = GREATEST(g.last_used_at, EXCLUDED.last_used_at)`,
      [userId, appToken, at],
    )
  }

  async touchGrant(userId: string, appToken: string, at: number): Promise<void> {
    // One statement: a grant deleted meanwhile has no row to update, and none is inserted.
    await this.#count(`UPDATE ${this.#q}.grants SET last_used_at = GREATEST(last_used_at, $3) WHERE user_id = $1 AND app_token = $2`, [userId, appToken, at])
  }

  getGrant(userId: string, appToken: string): Promise<GrantRecord | undefined> {
    return this.#one(`SELECT ${GRANT_COLUMNS} FROM ${this.#q}.grants WHERE user_id = $1 AND app_token = $2`, [userId, appToken], toGrant)
  }

  listGrants(userId: string): Promise<GrantRecord[]> {
    return this.#all(`SELECT ${GRANT_COLUMNS} FROM ${this.#q}.grants WHERE user_id = $1 ORDER BY first_authorized_at, app_token`, [userId], toGrant)
  }

  async deleteGrant(userId: string, appToken: string): Promise<boolean> {
    return (await this.#count(`DELETE FROM ${this.#q}.grants WHERE user_id = $1 AND app_token = $2`, [userId, appToken])) > 0
  }

  // Authorization codes

  async insertAuthorizationCode(record: AuthorizationCodeRecord): Promise<void> {
    await this.#statements.run(`INSERT INTO ${this.#q}.authorization_codes (${CODE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
      record.codeHash,
      record.appToken,
      record.userId,
      record.redirectUri,
      record.codeChallenge,
      record.createdAt,
      record.expiresAt,
      record.usedAt,
    ])
  }

  getAuthorizationCode(codeHash: string): Promise<AuthorizationCodeRecord | undefined> {
    return this.#one(`SELECT ${CODE_COLUMNS} FROM ${this.#q}.authorization_codes WHERE code_hash = $1`, [codeHash], toCode)
  }

  async consumeAuthorizationCode(codeHash: string, at: number): Promise<boolean> {
    return (await this.#count(`UPDATE ${this.#q}.authorization_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL`, [codeHash, at])) > 0
  }

  // Sessions

  async insertSession(record: SessionRecord): Promise<void> {
    await this.#statements.run(`INSERT INTO ${this.#q}.sessions (${SESSION_COLUMNS}) VALUES ($1, $2, $3, $4, $5)`, [
      record.sessionHash,
      record.userId,
      record.passwordStamp,
      record.createdAt,
      record.expiresAt,
    ])
  }

  getSession(sessionHash: string): Promise<SessionRecord | undefined> {
    return this.#one(`SELECT ${SESSION_COLUMNS} FROM ${this.#q}.sessions WHERE session_hash = $1 AND expires_at > $2`, [sessionHash, Date.now()], toSession)
  }

  async deleteSession(sessionHash: string): Promise<boolean> {
    return (await this.#count(`DELETE FROM ${this.#q}.sessions WHERE session_hash = $1`, [sessionHash])) > 0
  }

  /** Deletes all but the newest `keep` sessions of the user, in one statement. */
  trimSessions(userId: string, keep: number): Promise<number> {
    return this.#count(
      `DELETE FROM ${this.#q}.sessions WHERE session_hash IN (SELECT session_hash FROM ${this.#q}.sessions WHERE user_id = $1 ORDER BY created_at DESC, session_hash DESC OFFSET $2)`,
      [userId, Math.max(0, Math.floor(keep))],
    )
  }

  // Rate steps

  /**
   * One GCRA step in one statement on the database's clock. A refused step writes the
   * arrival time back unchanged, so it costs nothing; a read (`cost` 0) is a plain SELECT.
   * The decision is then worked out by {@link gcraStep} from what the statement saw, so the
   * arithmetic is the same as every other store's.
   */
  async consumeRate(key: string, limit: number, windowMs: number, cost: number): Promise<RateResult> {
    const interval = emissionInterval(limit, windowMs)
    if (cost === 0) {
      const { rows } = await this.#statements.run(`SELECT ${NOW_US} AS now_us, (SELECT tat_us FROM ${this.#q}.rates WHERE key = $1) AS tat_us`, [key])
      const row = rows[0] as Row
      return rateResult(gcraStep(optionalNumber(row.tat_us) ?? undefined, Number(row.now_us), limit, windowMs, 0))
    }
    const increment = cost * interval
    const tolerance = interval * limit
    const { rows } = await this.#statements.run(RATE_STEP(this.#q), [key, increment, tolerance])
    const row = rows[0] as Row
    const now = Number(row.seen_us)
    const tat = Number(row.tat_us)
    // Allowed: the stored value is the new arrival time, so the one before was `tat - increment`
    // or anything up to now (which gcraStep treats alike). Refused: it is the old one.
    return rateResult(gcraStep(row.allowed === true ? tat - increment : tat, now, limit, windowMs, cost))
  }

  /**
   * Several limits all or nothing, in one round trip: the function `consume_limits`
   * (migration 8) locks the limits' rows in key order, decides, and writes only when every
   * step allows; it returns what each step found, and `limitsStep` computes the
   * answers from it, with the same arithmetic.
   */
  async consumeLimits(steps: readonly LimitStep[]): Promise<LimitResult[]> {
    const invalid = invalidLimitSteps(steps)
    if (invalid !== undefined) throw new TypeError(`open-data-gate: consumeLimits: ${invalid}`)
    if (steps.length === 0) return []
    const rate = (step: LimitStep) => step.kind === 'rate'
    const { rows } = await this.#statements.run(`SELECT * FROM ${this.#q}.consume_limits($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint)`, [
      steps.map((step) => step.key),
      steps.map((step) => (rate(step) ? 'r' : 'q')),
      steps.map((step) => step.limit),
      steps.map((step) => (step.kind === 'rate' ? step.windowMs : step.periodStart)),
      steps.map((step) => (step.kind === 'rate' ? 0 : step.periodEnd)),
      steps.map((step) => step.cost),
      QUOTA_KEEP_MS * 1000,
    ])
    const found = rows as Row[]
    const outcome = limitsStep(
      found.map((row, i) => (rate(steps[i]!) ? Number(row.o_tat) : { periodStart: Number(row.o_start), periodEnd: Number(row.o_end), used: Number(row.o_used) })),
      Number(found[0]!.o_now),
      steps,
    )
    if (outcome.taken !== (found[0]!.o_taken === true)) throw new Error('open-data-gate: consume_limits and limitsStep disagree: is the schema of another version?')
    return outcome.results
  }

  /** Forgets a rate key and a quota's counter under it, in one statement. */
  async resetRate(key: string): Promise<void> {
    await this.#statements.run(`WITH rate AS (DELETE FROM ${this.#q}.rates WHERE key = $1) DELETE FROM ${this.#q}.quotas WHERE key = $1`, [key])
  }

  // Usage (./usage.ts)

  addUsage(batch: UsageBatch): Promise<void> {
    return this.#usage.add(batch)
  }
  getUsage(appToken: string | null, granularity: UsageGranularity, from: number, to: number): Promise<UsageBucket[]> {
    return this.#usage.get(appToken, granularity, from, to)
  }
  topUsage(query: UsageTopQuery): Promise<UsageTotal[]> {
    return this.#usage.top(query)
  }
}
/** The database's clock in integer microseconds. */
const NOW_US = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`
/** This step's "now" in the update: never before the last step's on the same row. */
const MONOTONIC_NOW = 'GREATEST(EXCLUDED.seen_us, r.seen_us)'

/**
 * $1 key, $2 the increment (cost × emission interval, µs), $3 the tolerance (limit ×
 * interval, µs). A step is allowed when now ≥ max(tat, now) + increment − tolerance. Every
 * SET expression sees the row as it was, so `allowed` and `tat_us` agree.
 *
 * "Now" is the later of this statement's clock reading and the last step's on the row:
 * a statement reads the clock before it waits for the row lock, so concurrent steps may
 * take the lock in another order than they read the clock, and a step must never see time
 * go backwards (it would be refused, or count a remaining unit twice).
 */
const RATE_STEP = (q: string) => `WITH c AS (SELECT ${NOW_US} AS now_us)
INSERT INTO ${q}.rates AS r (key, tat_us, seen_us, allowed)
SELECT $1, CASE WHEN $2::bigint <= $3::bigint THEN c.now_us + $2::bigint ELSE c.now_us END, c.now_us, $2::bigint <= $3::bigint FROM c
ON CONFLICT (key) DO UPDATE SET
  tat_us = CASE WHEN ${MONOTONIC_NOW} >= GREATEST(r.tat_us, ${MONOTONIC_NOW}) + $2::bigint - $3::bigint
    THEN GREATEST(r.tat_us, ${MONOTONIC_NOW}) + $2::bigint ELSE r.tat_us END,
  seen_us = ${MONOTONIC_NOW},
  allowed = ${MONOTONIC_NOW} >= GREATEST(r.tat_us, ${MONOTONIC_NOW}) + $2::bigint - $3::bigint
RETURNING tat_us, seen_us, allowed`

/**
 * $1-$7 the key's columns, $8 now, $9 the active cap, $10 the cap on all keys. Counts the
 * user's keys (those past their purge time not at all), inserts only when the name is free
 * among the active keys and both counts are under their caps, and deletes the user's keys
 * past their purge time. Returns the counts and whether the name was taken, as they were
 * before the insert.
 */
const CREATE_API_KEY = (q: string) => `WITH mine AS (
  SELECT count(*) FILTER (WHERE revoked_at IS NULL) AS active,
    count(*) FILTER (WHERE purge_at IS NULL OR purge_at > $8::bigint) AS total,
    COALESCE(bool_or(revoked_at IS NULL AND name = $3), false) AS taken
  FROM ${q}.api_keys WHERE user_id = $2
), added AS (
  INSERT INTO ${q}.api_keys (${API_KEY_COLUMNS})
  SELECT $1, $2, $3, $4, $5, $6, $7 FROM mine WHERE NOT mine.taken AND mine.active < $9::bigint AND mine.total < $10::bigint
  RETURNING key_id
), purged AS (
  DELETE FROM ${q}.api_keys WHERE user_id = $2 AND purge_at <= $8::bigint
)
SELECT active, total, taken FROM mine`

function rateResult(step: RateResult): RateResult {
  return { allowed: step.allowed, remaining: step.remaining, resetMs: step.resetMs, retryAfterMs: step.retryAfterMs }
}

