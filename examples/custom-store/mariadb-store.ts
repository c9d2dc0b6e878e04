/**
 * A GateStore of your own: MariaDB (or MySQL) with mysql2, written from the README's
 * "Storage" section (now docs/reference/store-contract.md) and the GateStore TSDoc alone. It passes the project's conformance
 * suite (test/custom-store.test.ts).
 *
 *   const store = new MariaDbStore({ pool: mysql.createPool(process.env.MARIADB_URL), prefix: 'gate_' })
 *   await store.createTables()
 *   const gate = createGate({ store })
 *
 * What the contract asks, and how this store does it:
 * - Atomic operations are one statement: `UPDATE ... WHERE used_at IS NULL`, a revocation
 *   `UPDATE ... WHERE revoked_at IS NULL`, the rate step `INSERT ... ON DUPLICATE KEY
 *   UPDATE ... RETURNING` on the database's clock, with the exported `gcraStep` for the
 *   answer.
 * - Patches `UPDATE` only the fields given.
 * - A user's API key is created under a named lock of that user (`GET_LOCK`): the count,
 *   the name check and the insert run one user's creates one after the other. A user's
 *   own application is registered the same way, under another lock of theirs.
 * - MariaDB has no change notifications: the gate's application cache expires on its own.
 * - Usage (the optional `UsageStore` slice): a batch is one transaction that claims the
 *   writer's sequence and upserts every bucket; a replayed batch claims nothing and adds
 *   nothing. Concurrent upserts of one new bucket can deadlock in InnoDB: the transaction
 *   is then rolled back whole and tried again.
 * - Several limits at once (the optional `consumeLimits`): one transaction. The upsert that
 *   makes a limit's row also locks it, every row in key order (rates, then quotas), so
 *   concurrent calls queue in one order; `limitsStep` (exported) decides from the rows, and
 *   the new states are written only when every step allows. Several round trips while the
 *   rows are locked (PostgresStore does the same in one, with a function): fine for an
 *   example, and the kit's 50 concurrent calls pass.
 */
import { randomUUID } from 'node:crypto'
import { addShadowCounts, emissionInterval, gcraStep, limitsStep, type LimitResult, type LimitStep, type UsageBatch, type UsageBucket, type UsageGranularity, type UsageStore, type UsageTopQuery, type UsageTotal, type AccessTokenFilter, type AccessTokenRecord, type ApiKeyInsertResult, type ApiKeyLimits, type ApiKeyPatch, type ApiKeyQuery, type ApiKeyRecord, type GrantRecord, type ApplicationFilter, type ApplicationInsertResult, type ApplicationLimits, type ApplicationPatch, type ApplicationRecord, type AuthorizationCodeRecord, type GateStore, type RateResult, type SessionRecord, type UserPatch, type UserRecord } from 'open-data-gate'
import type { Pool, RowDataPacket } from 'mysql2/promise'

type Row = RowDataPacket & Record<string, unknown>
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v))

export class MariaDbStore implements GateStore, UsageStore {
  readonly #db: Pool
  readonly #p: string

  /** `prefix` names this store's tables (letters, digits, underscores). */
  constructor(options: { pool: Pool; prefix?: string }) {
    this.#db = options.pool
    this.#p = options.prefix ?? 'gate_'
    if (!/^\w+$/.test(this.#p)) throw new TypeError('prefix: letters, digits and underscores only')
  }

  /** Creates the tables if they are missing. */
  async createTables(): Promise<void> {
    const p = this.#p
    const opts = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    for (const ddl of [
      `applications (app_token VARCHAR(255) PRIMARY KEY, name TEXT NOT NULL, secret_hash VARCHAR(255) NOT NULL, callback_prefix TEXT NULL, rate_limit INT NULL, owner_id VARCHAR(255) NULL, previous_secret_hash VARCHAR(255) NULL, previous_secret_expires_at BIGINT NULL, suspended_at BIGINT NULL, suspension_reason TEXT NULL, plan VARCHAR(255) NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, INDEX (owner_id, created_at))`,
      `users (id VARCHAR(255) PRIMARY KEY, username VARCHAR(255) NOT NULL UNIQUE, username_skeleton VARCHAR(1024) NULL, screen_name TEXT NOT NULL, display_name TEXT NOT NULL, email TEXT NOT NULL, rights TEXT NOT NULL, password_hash TEXT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL)`,
      `api_keys (key_id VARCHAR(255) PRIMARY KEY, user_id VARCHAR(255) NOT NULL, name VARCHAR(255) NOT NULL, secret_hash VARCHAR(255) NOT NULL, created_at BIGINT NOT NULL, last_used_at BIGINT NULL, revoked_at BIGINT NULL, purge_at BIGINT NULL, INDEX (user_id, created_at), INDEX (purge_at))`,
      `access_tokens (token_hash VARCHAR(255) PRIMARY KEY, user_id VARCHAR(255) NOT NULL, app_token VARCHAR(255) NOT NULL, code_hash VARCHAR(255) NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, revoked_at BIGINT NULL, INDEX (user_id, app_token), INDEX (app_token), INDEX (code_hash))`,
      `codes (code_hash VARCHAR(255) PRIMARY KEY, app_token VARCHAR(255) NOT NULL, user_id VARCHAR(255) NOT NULL, redirect_uri TEXT NOT NULL, code_challenge VARCHAR(255) NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, used_at BIGINT NULL)`,
      `sessions (session_hash VARCHAR(255) PRIMARY KEY, user_id VARCHAR(255) NOT NULL, password_stamp VARCHAR(255) NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, INDEX (user_id, created_at))`,
      `grants (user_id VARCHAR(255) NOT NULL, app_token VARCHAR(255) NOT NULL, first_authorized_at BIGINT NOT NULL, last_used_at BIGINT NOT NULL, PRIMARY KEY (user_id, app_token))`,
      `rates (rate_key VARCHAR(255) PRIMARY KEY, tat_us BIGINT NOT NULL, seen_us BIGINT NOT NULL, allowed BOOLEAN NOT NULL, INDEX (tat_us))`,
      `quotas (rate_key VARCHAR(255) PRIMARY KEY, period_start BIGINT NOT NULL, period_end BIGINT NOT NULL, used BIGINT NOT NULL, expires_at BIGINT NOT NULL, INDEX (expires_at))`,
      `usage_buckets (app_token VARCHAR(255) NOT NULL, granularity CHAR(1) NOT NULL, start_at BIGINT NOT NULL, ${USAGE_COLUMNS.map((c) => `${c} BIGINT NOT NULL DEFAULT 0`).join(', ')}, shadow TEXT NOT NULL DEFAULT '{}', expires_at BIGINT NOT NULL, PRIMARY KEY (app_token, granularity, start_at), INDEX (expires_at), INDEX (granularity, start_at))`,
      `usage_writers (writer VARCHAR(255) PRIMARY KEY, sequence BIGINT NOT NULL, expires_at BIGINT NOT NULL, claimed_by CHAR(36) NOT NULL, INDEX (expires_at))`,
    ]) {
      await this.#db.query(`CREATE TABLE IF NOT EXISTS ${p}${ddl} ${opts}`)
    }
    // Tables made before usernames had skeletons get the column (their users have none, and
    // are not compared; the gate refuses look-alikes of the users it creates from now on).
    await this.#db.query(`ALTER TABLE ${p}users ADD COLUMN IF NOT EXISTS username_skeleton VARCHAR(1024) NULL`)
    await this.#db.query(`CREATE INDEX IF NOT EXISTS ${p}users_by_skeleton ON ${p}users (username_skeleton(191))`)
    // Tables made before applications had owners and a rotation grace get those columns.
    await this.#db.query(
      `ALTER TABLE ${p}applications ADD COLUMN IF NOT EXISTS owner_id VARCHAR(255) NULL, ADD COLUMN IF NOT EXISTS previous_secret_hash VARCHAR(255) NULL, ADD COLUMN IF NOT EXISTS previous_secret_expires_at BIGINT NULL`,
    )
    await this.#db.query(`CREATE INDEX IF NOT EXISTS ${p}applications_by_owner ON ${p}applications (owner_id, created_at)`)
    // And before applications could be suspended: their rows read as active.
    await this.#db.query(`ALTER TABLE ${p}applications ADD COLUMN IF NOT EXISTS suspended_at BIGINT NULL, ADD COLUMN IF NOT EXISTS suspension_reason TEXT NULL`)
    // And before applications had plans: their rows read as on the default plan.
    await this.#db.query(`ALTER TABLE ${p}applications ADD COLUMN IF NOT EXISTS plan VARCHAR(255) NULL`)
    // And before usage counted suspensions and shadow limits: old buckets read as 0 and {}.
    await this.#db.query(`ALTER TABLE ${p}usage_buckets ADD COLUMN IF NOT EXISTS suspended BIGINT NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS shadow TEXT NOT NULL DEFAULT '{}'`)
  }

  /** Drops this store's tables. */
  async dropTables(): Promise<void> {
    for (const t of ['applications', 'users', 'api_keys', 'access_tokens', 'codes', 'sessions', 'grants', 'rates', 'quotas', 'usage_buckets', 'usage_writers']) await this.#db.query(`DROP TABLE IF EXISTS ${this.#p}${t}`)
  }

  async #rows(sql: string, values: unknown[] = []): Promise<Row[]> {
    const [rows] = await this.#db.execute<Row[]>(sql, values as never[])
    return rows
  }

  async #changed(sql: string, values: unknown[]): Promise<number> {
    const [result] = await this.#db.execute(sql, values as never[])
    return (result as { affectedRows: number }).affectedRows
  }

  /** Saves a record; the table's primary and unique keys refuse a duplicate. */
  async #insert(table: string, row: Record<string, unknown>): Promise<void> {
    const columns = Object.keys(row)
    await this.#changed(`INSERT INTO ${this.#p}${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`, Object.values(row))
  }

  /** `UPDATE ... SET` of the given fields only, then the row. */
  async #patch<T>(table: string, keyColumn: string, key: string, patch: object, columns: Record<string, string>, read: () => Promise<T | undefined>): Promise<T | undefined> {
    const entries = Object.entries(patch).filter(([field, value]) => columns[field] !== undefined && value !== undefined)
    if (entries.length > 0) {
      const sets = entries.map(([field]) => `${columns[field]} = ?`).join(', ')
      const values = entries.map(([field, value]) => (field === 'rights' ? JSON.stringify(value) : value))
      await this.#changed(`UPDATE ${this.#p}${table} SET ${sets} WHERE ${keyColumn} = ?`, [...values, key])
    }
    return read()
  }

  /** With limits and an owner: under the owner's named lock, count the owner's applications, insert. */
  async insertApplication(r: ApplicationRecord, limits?: ApplicationLimits): Promise<ApplicationInsertResult> {
    const row = { app_token: r.appToken, name: r.name, secret_hash: r.secretHash, callback_prefix: r.callbackPrefix, rate_limit: r.limit, owner_id: r.ownerId, previous_secret_hash: r.previousSecretHash, previous_secret_expires_at: r.previousSecretExpiresAt, suspended_at: r.suspendedAt, suspension_reason: r.suspensionReason, plan: r.plan ?? null, created_at: r.createdAt, updated_at: r.updatedAt }
    if (limits === undefined || r.ownerId === null) {
      await this.#insert('applications', row)
      return 'created'
    }
    const db = await this.#db.getConnection()
    const lock = `SHA1(CONCAT(?, ':apps:', ?))`
    try {
      const [[locked]] = await db.query<Row[]>(`SELECT GET_LOCK(${lock}, 10) AS got`, [this.#p, r.ownerId])
      if (Number(locked?.got) !== 1) throw new Error(`could not lock the applications of user ${r.ownerId}`)
      try {
        const [[mine]] = await db.execute<Row[]>(`SELECT COUNT(*) AS n FROM ${this.#p}applications WHERE owner_id = ?`, [r.ownerId])
        if (Number(mine?.n) >= limits.maxPerOwner) return 'owner-limit'
        const columns = Object.keys(row)
        await db.execute(`INSERT INTO ${this.#p}applications (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`, Object.values(row) as never[])
        return 'created'
      } finally {
        await db.query(`SELECT RELEASE_LOCK(${lock})`, [this.#p, r.ownerId])
      }
    } finally {
      db.release()
    }
  }
  async getApplication(appToken: string) {
    return (await this.#rows(`SELECT * FROM ${this.#p}applications WHERE app_token = ?`, [appToken])).map(toApplication)[0]
  }
  async listApplications(filter?: ApplicationFilter) {
    if (filter !== undefined) return (await this.#rows(`SELECT * FROM ${this.#p}applications WHERE owner_id = ? ORDER BY created_at, app_token`, [filter.ownerId])).map(toApplication)
    return (await this.#rows(`SELECT * FROM ${this.#p}applications ORDER BY created_at, app_token`)).map(toApplication)
  }
  updateApplication(appToken: string, patch: ApplicationPatch) {
    const columns = { name: 'name', secretHash: 'secret_hash', previousSecretHash: 'previous_secret_hash', previousSecretExpiresAt: 'previous_secret_expires_at', suspendedAt: 'suspended_at', suspensionReason: 'suspension_reason', plan: 'plan', callbackPrefix: 'callback_prefix', limit: 'rate_limit', updatedAt: 'updated_at' }
    return this.#patch('applications', 'app_token', appToken, patch, columns, () => this.getApplication(appToken))
  }
  async deleteApplication(appToken: string) {
    return (await this.#changed(`DELETE FROM ${this.#p}applications WHERE app_token = ?`, [appToken])) > 0
  }

  insertUser(r: UserRecord) {
    return this.#insert('users', { id: r.id, username: r.username, username_skeleton: r.usernameSkeleton ?? null, screen_name: r.screenName, display_name: r.displayName, email: r.email, rights: JSON.stringify(r.rights), password_hash: r.passwordHash, created_at: r.createdAt, updated_at: r.updatedAt })
  }
  async getUser(id: string) {
    return (await this.#rows(`SELECT * FROM ${this.#p}users WHERE id = ?`, [id])).map(toUser)[0]
  }
  async getUserByUsername(username: string) {
    return (await this.#rows(`SELECT * FROM ${this.#p}users WHERE username = ?`, [username])).map(toUser)[0]
  }
  async getUserBySkeleton(skeleton: string) {
    return (await this.#rows(`SELECT * FROM ${this.#p}users WHERE username_skeleton = ? LIMIT 1`, [skeleton])).map(toUser)[0]
  }
  updateUser(id: string, patch: UserPatch) {
    const columns = { screenName: 'screen_name', displayName: 'display_name', email: 'email', rights: 'rights', passwordHash: 'password_hash', updatedAt: 'updated_at' }
    return this.#patch('users', 'id', id, patch, columns, () => this.getUser(id))
  }
  async deleteUser(id: string) {
    return (await this.#changed(`DELETE FROM ${this.#p}users WHERE id = ?`, [id])) > 0
  }

  /** With limits: under the user's named lock, purge, count, check the name, insert. */
  async insertApiKey(r: ApiKeyRecord, limits?: ApiKeyLimits): Promise<ApiKeyInsertResult> {
    const row = { key_id: r.keyId, user_id: r.userId, name: r.name, secret_hash: r.secretHash, created_at: r.createdAt, last_used_at: r.lastUsedAt, revoked_at: r.revokedAt }
    if (limits === undefined) {
      await this.#insert('api_keys', row)
      return 'created'
    }
    const db = await this.#db.getConnection()
    const lock = `SHA1(CONCAT(?, ':', ?))`
    try {
      const [[locked]] = await db.query<Row[]>(`SELECT GET_LOCK(${lock}, 10) AS got`, [this.#p, r.userId])
      if (Number(locked?.got) !== 1) throw new Error(`could not lock the API keys of user ${r.userId}`)
      try {
        const now = Date.now()
        await db.execute(`DELETE FROM ${this.#p}api_keys WHERE user_id = ? AND purge_at <= ?`, [r.userId, now])
        const [[mine]] = await db.execute<Row[]>(
          `SELECT COUNT(*) AS total, COALESCE(SUM(revoked_at IS NULL), 0) AS active, COALESCE(MAX(revoked_at IS NULL AND name = ?), 0) AS taken FROM ${this.#p}api_keys WHERE user_id = ?`,
          [r.name, r.userId],
        )
        if (Number(mine?.taken) === 1) return 'name-taken'
        if (Number(mine?.active) >= limits.maxActive) return 'active-limit'
        if (Number(mine?.total) >= limits.maxTotal) return 'total-limit'
        const columns = Object.keys(row)
        await db.execute(`INSERT INTO ${this.#p}api_keys (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`, Object.values(row) as never[])
        return 'created'
      } finally {
        await db.query(`SELECT RELEASE_LOCK(${lock})`, [this.#p, r.userId])
      }
    } finally {
      db.release()
    }
  }
  async getApiKey(keyId: string) {
    return (await this.#rows(`SELECT * FROM ${this.#p}api_keys WHERE key_id = ?`, [keyId])).map(toApiKey)[0]
  }
  /** All of a user's keys, or one page: sorted in SQL, the page found from the `after` key by a row comparison. */
  async listApiKeys(userId: string, query?: ApiKeyQuery) {
    if (query === undefined) return (await this.#rows(`SELECT * FROM ${this.#p}api_keys WHERE user_id = ? ORDER BY created_at, key_id`, [userId])).map(toApiKey)
    const sort = { createdAt: 'created_at', lastUsedAt: 'COALESCE(last_used_at, 0)', revokedAt: 'COALESCE(revoked_at, 0)', name: 'name' }[query.sortBy]
    const [dir, cmp] = query.order === 'asc' ? ['ASC', '>'] : ['DESC', '<']
    const where = ['user_id = ?']
    const values: unknown[] = [userId]
    if (!query.includeRevoked) where.push('revoked_at IS NULL')
    if (query.nameSearch) {
      where.push('(LOCATE(LOWER(?), LOWER(name)) > 0 OR key_id = ?)')
      values.push(query.nameSearch, query.nameSearch)
    }
    if (query.after !== undefined) {
      where.push(`(${sort}, key_id) ${cmp} (SELECT ${sort}, key_id FROM ${this.#p}api_keys WHERE key_id = ? AND user_id = ?)`)
      values.push(query.after, userId)
    }
    const limit = Math.max(1, Math.min(100, Math.floor(query.limit)))
    return (await this.#rows(`SELECT * FROM ${this.#p}api_keys WHERE ${where.join(' AND ')} ORDER BY ${sort} ${dir}, key_id ${dir} LIMIT ${limit}`, values)).map(toApiKey)
  }
  updateApiKey(keyId: string, patch: ApiKeyPatch) {
    const columns = { name: 'name', secretHash: 'secret_hash', lastUsedAt: 'last_used_at', revokedAt: 'revoked_at', purgeAt: 'purge_at' }
    // A key made active again is no longer to be purged.
    return this.#patch('api_keys', 'key_id', keyId, patch.revokedAt === null ? { ...patch, purgeAt: null } : patch, columns, () => this.getApiKey(keyId))
  }
  /** A compare-and-set: `UPDATE ... WHERE revoked_at IS NULL`, then the row if this call changed it. */
  async revokeApiKey(keyId: string, at: number, purgeAt: number) {
    const changed = await this.#changed(`UPDATE ${this.#p}api_keys SET revoked_at = ?, purge_at = ? WHERE key_id = ? AND revoked_at IS NULL`, [at, purgeAt, keyId])
    return changed > 0 ? this.getApiKey(keyId) : undefined
  }

  insertAccessToken(r: AccessTokenRecord) {
    return this.#insert('access_tokens', { token_hash: r.tokenHash, user_id: r.userId, app_token: r.appToken, code_hash: r.codeHash, created_at: r.createdAt, expires_at: r.expiresAt, revoked_at: r.revokedAt })
  }
  async getAccessToken(tokenHash: string) {
    return (await this.#rows(`SELECT * FROM ${this.#p}access_tokens WHERE token_hash = ?`, [tokenHash])).map(toAccessToken)[0]
  }
  async revokeAccessToken(tokenHash: string, at: number) {
    return (await this.#changed(`UPDATE ${this.#p}access_tokens SET revoked_at = ? WHERE token_hash = ? AND revoked_at IS NULL`, [at, tokenHash])) > 0
  }
  revokeAccessTokens(filter: AccessTokenFilter, at: number) {
    const fields = 'codeHash' in filter ? { code_hash: filter.codeHash } : { user_id: filter.userId, app_token: filter.appToken }
    const given = Object.entries(fields).filter(([, value]) => value !== undefined)
    const where = given.map(([column]) => `${column} = ?`).join(' AND ')
    return this.#changed(`UPDATE ${this.#p}access_tokens SET revoked_at = ? WHERE ${where} AND revoked_at IS NULL`, [at, ...given.map(([, value]) => value)])
  }
  async listAccessTokens(userId: string) {
    const sql = `SELECT * FROM ${this.#p}access_tokens WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? ORDER BY created_at, token_hash`
    return (await this.#rows(sql, [userId, Date.now()])).map(toAccessToken)
  }

  async recordGrant(userId: string, appToken: string, at: number) {
    const sql = `INSERT INTO ${this.#p}grants (user_id, app_token, first_authorized_at, last_used_at) VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE last_used_at = GREATEST(last_used_at, VALUES(last_used_at))`
    await this.#changed(sql, [userId, appToken, at, at])
  }
  async touchGrant(userId: string, appToken: string, at: number) {
    // One statement: it updates a grant that is there and never inserts one, so a revoke stays a revoke.
    await this.#changed(`UPDATE ${this.#p}grants SET last_used_at = GREATEST(last_used_at, ?) WHERE user_id = ? AND app_token = ?`, [at, userId, appToken])
  }
  async getGrant(userId: string, appToken: string) {
    return (await this.#rows(`SELECT * FROM ${this.#p}grants WHERE user_id = ? AND app_token = ?`, [userId, appToken])).map(toGrant)[0]
  }
  async listGrants(userId: string) {
    return (await this.#rows(`SELECT * FROM ${this.#p}grants WHERE user_id = ? ORDER BY first_authorized_at, app_token`, [userId])).map(toGrant)
  }
  async deleteGrant(userId: string, appToken: string) {
    return (await this.#changed(`DELETE FROM ${this.#p}grants WHERE user_id = ? AND app_token = ?`, [userId, appToken])) > 0
  }

  insertAuthorizationCode(r: AuthorizationCodeRecord) {
    return this.#insert('codes', { code_hash: r.codeHash, app_token: r.appToken, user_id: r.userId, redirect_uri: r.redirectUri, code_challenge: r.codeChallenge, created_at: r.createdAt, expires_at: r.expiresAt, used_at: r.usedAt })
  }
  async getAuthorizationCode(codeHash: string) {
    return (await this.#rows(`SELECT * FROM ${this.#p}codes WHERE code_hash = ?`, [codeHash])).map(toCode)[0]
  }
  async consumeAuthorizationCode(codeHash: string, at: number) {
    return (await this.#changed(`UPDATE ${this.#p}codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL`, [at, codeHash])) > 0
  }

  insertSession(r: SessionRecord) {
    return this.#insert('sessions', { session_hash: r.sessionHash, user_id: r.userId, password_stamp: r.passwordStamp, created_at: r.createdAt, expires_at: r.expiresAt })
  }
  async getSession(sessionHash: string) {
    return (await this.#rows(`SELECT * FROM ${this.#p}sessions WHERE session_hash = ? AND expires_at > ?`, [sessionHash, Date.now()])).map(toSession)[0]
  }
  async deleteSession(sessionHash: string) {
    return (await this.#changed(`DELETE FROM ${this.#p}sessions WHERE session_hash = ?`, [sessionHash])) > 0
  }
  /**
   * One DELETE joined to the user's sessions past the newest `keep` (a derived table, so
   * MariaDB may read the table it deletes from). Two trims of one user at once can deadlock
   * in InnoDB, which then rolls one statement back whole: it is sent again, and counts only
   * what it deletes then.
   */
  async trimSessions(userId: string, keep: number) {
    const skip = Math.max(0, Math.floor(keep))
    const older = `SELECT session_hash FROM ${this.#p}sessions WHERE user_id = ? ORDER BY created_at DESC, session_hash DESC LIMIT ${skip}, 18446744073709551615`
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#changed(`DELETE s FROM ${this.#p}sessions s JOIN (${older}) doomed USING (session_hash)`, [userId])
      } catch (error) {
        // ER_LOCK_DEADLOCK: nothing of the statement was applied.
        if ((error as { errno?: number }).errno !== 1213 || attempt >= 10) throw error
      }
    }
  }

  /**
   * One GCRA step in one statement on the database's clock (MariaDB 10.5+ for `RETURNING`).
   * MariaDB applies `ON DUPLICATE KEY UPDATE` assignments left to right: "now" becomes
   * the later of this statement's clock and the last step's on the row (the clock is read
   * before the row lock is granted, and time must not run backwards between steps),
   * `allowed` is decided from the old arrival time, and `tat_us` moves only when it is
   * true: a refused request costs nothing. `gcraStep` turns what the statement saw into the answer.
   */
  async consumeRate(key: string, limit: number, windowMs: number, cost: number): Promise<RateResult> {
    const interval = emissionInterval(limit, windowMs)
    const now = 'CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)'
    if (cost === 0) {
      const [row] = await this.#rows(`SELECT ${now} AS now_us, (SELECT tat_us FROM ${this.#p}rates WHERE rate_key = ?) AS tat_us`, [key])
      return result(gcraStep(num(row?.tat_us) ?? undefined, Number(row?.now_us), limit, windowMs, 0))
    }
    const [inc, tol] = [cost * interval, limit * interval]
    const [row] = await this.#rows(
      `INSERT INTO ${this.#p}rates (rate_key, tat_us, seen_us, allowed) VALUES (?, ${now} + IF(? <= ?, ?, 0), ${now}, ? <= ?)
       ON DUPLICATE KEY UPDATE
         seen_us = GREATEST(seen_us, VALUES(seen_us)),
         allowed = seen_us >= GREATEST(tat_us, seen_us) + ? - ?,
         tat_us = IF(allowed, GREATEST(tat_us, seen_us) + ?, tat_us)
       RETURNING tat_us, seen_us, allowed`,
      [key, inc, tol, inc, inc, tol, inc, tol, inc],
    )
    const [tat, seen, allowed] = [Number(row?.tat_us), Number(row?.seen_us), Number(row?.allowed) === 1]
    return result(gcraStep(allowed ? tat - inc : tat, seen, limit, windowMs, cost))
  }
  async resetRate(key: string) {
    await this.#changed(`DELETE FROM ${this.#p}rates WHERE rate_key = ?`, [key])
    await this.#changed(`DELETE FROM ${this.#p}quotas WHERE rate_key = ?`, [key])
  }

  /** Several limits all or nothing: one transaction over rows locked in key order (see the top of the file). */
  async consumeLimits(steps: readonly LimitStep[]): Promise<LimitResult[]> {
    if (steps.length === 0) return []
    const byKey = (a: LimitStep, b: LimitStep) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
    const rates = steps.filter((step) => step.kind === 'rate').sort(byKey)
    const quotas = steps.filter((step) => step.kind === 'quota').sort(byKey)
    const rows = (n: number, row: string) => Array(n).fill(row).join(', ')
    // `IN (?)` of no key matches nothing ('' is no limit's key).
    const keysOf = (list: LimitStep[]) => (list.length === 0 ? [''] : list.map((step) => step.key))
    for (let attempt = 1; ; attempt++) {
      const connection = await this.#db.getConnection()
      try {
        await connection.beginTransaction()
        if (rates.length > 0) await connection.execute(`INSERT INTO ${this.#p}rates (rate_key, tat_us, seen_us, allowed) VALUES ${rows(rates.length, '(?, 0, 0, 0)')} ON DUPLICATE KEY UPDATE rate_key = rate_key`, rates.map((step) => step.key))
        if (quotas.length > 0) await connection.execute(`INSERT INTO ${this.#p}quotas (rate_key, period_start, period_end, used, expires_at) VALUES ${rows(quotas.length, '(?, 0, 0, 0, 0)')} ON DUPLICATE KEY UPDATE rate_key = rate_key`, quotas.map((step) => step.key))
        // Every row is locked now: this first read of the transaction sees each as the last holder left it.
        const [found] = await connection.query<Row[]>(
          `SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) AS now_us, (SELECT MAX(seen_us) FROM ${this.#p}rates WHERE rate_key IN (?)) AS seen_us, 'n' AS kind, '' AS rate_key, 0 AS a, 0 AS b, 0 AS c
           UNION ALL SELECT 0, 0, 'r', rate_key, tat_us, 0, 0 FROM ${this.#p}rates WHERE rate_key IN (?)
           UNION ALL SELECT 0, 0, 'q', rate_key, period_start, period_end, used FROM ${this.#p}quotas WHERE rate_key IN (?)`,
          [keysOf(rates), keysOf(rates), keysOf(quotas)],
        )
        const state = new Map(found.map((r) => [`${r.kind as string}:${r.rate_key as string}`, r]))
        const head = state.get('n:')
        // Time never runs backwards on a rate between steps, as in consumeRate.
        const now = Math.max(Number(head?.now_us), num(head?.seen_us) ?? 0)
        const outcome = limitsStep(
          steps.map((step) => {
            const r = state.get(`${step.kind === 'rate' ? 'r' : 'q'}:${step.key}`)
            return step.kind === 'rate' ? Number(r?.a ?? 0) : { periodStart: Number(r?.a ?? 0), periodEnd: Number(r?.b ?? 0), used: Number(r?.c ?? 0) }
          }),
          now,
          steps,
        )
        for (const [i, write] of outcome.writes.entries()) {
          if (write === undefined) continue
          const key = steps[i]!.key
          if (typeof write.state === 'number') await connection.execute(`UPDATE ${this.#p}rates SET tat_us = ?, seen_us = ?, allowed = 1 WHERE rate_key = ?`, [write.state, now, key])
          else await connection.execute(`UPDATE ${this.#p}quotas SET period_start = ?, period_end = ?, used = ?, expires_at = ? WHERE rate_key = ?`, [write.state.periodStart, write.state.periodEnd, write.state.used, Math.floor(now / 1000) + write.ttlMs, key])
        }
        await connection.commit()
        return outcome.results
      } catch (error) {
        await connection.rollback().catch(() => {})
        if ((error as { errno?: number }).errno !== 1213 || attempt >= 10) throw error
      } finally {
        connection.release()
      }
    }
  }

  /** Deletes expired tokens, codes, sessions, drained rate rows and API keys past their purge time; call it from a timer. */
  async sweep(): Promise<void> {
    const now = Date.now()
    await this.#changed(`DELETE FROM ${this.#p}api_keys WHERE purge_at <= ? LIMIT 1000`, [now])
    for (const table of ['access_tokens', 'codes', 'sessions']) await this.#changed(`DELETE FROM ${this.#p}${table} WHERE expires_at < ? LIMIT 1000`, [now])
    await this.#changed(`DELETE FROM ${this.#p}rates WHERE tat_us < CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) LIMIT 1000`, [])
    await this.#changed(`DELETE FROM ${this.#p}quotas WHERE expires_at < ? LIMIT 1000`, [now])
    for (const table of ['usage_buckets', 'usage_writers']) await this.#changed(`DELETE FROM ${this.#p}${table} WHERE expires_at <= ? LIMIT 1000`, [now])
  }

  /**
   * One transaction: the writer's row moves to this sequence only if it is new (`claimed_by`
   * says whether this call moved it), then every bucket is upserted, rows sorted by key. A
   * bucket found expired starts again from zero (MariaDB applies the assignments left to
   * right: the counts read the old `expires_at`, which is set last). The rows with shadow
   * counts then merge them into their buckets' JSON (`addShadowCounts`: at most
   * `MAX_SHADOW_NAMES` names), read and written under the rows' locks in the same transaction.
   */
  async addUsage(batch: UsageBatch): Promise<void> {
    const now = Date.now()
    const key = (r: UsageBatch['rows'][number]) => `${r.appToken ?? ''}\u0000${r.granularity}\u0000${String(r.start).padStart(16, '0')}`
    const rows = [...batch.rows].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
    for (let attempt = 1; ; attempt++) {
      const connection = await this.#db.getConnection()
      try {
        await connection.beginTransaction()
        const claim = randomUUID()
        await connection.execute(
          `INSERT INTO ${this.#p}usage_writers (writer, sequence, expires_at, claimed_by) VALUES (?, ?, ?, ?)
           ON DUPLICATE KEY UPDATE claimed_by = IF(sequence < VALUES(sequence) OR expires_at <= ?, VALUES(claimed_by), claimed_by),
             sequence = IF(claimed_by = VALUES(claimed_by), VALUES(sequence), sequence), expires_at = IF(claimed_by = VALUES(claimed_by), VALUES(expires_at), expires_at)`,
          [batch.writer, batch.sequence, batch.idExpiresAt, claim, now],
        )
        const [claimed] = await connection.execute<Row[]>(`SELECT claimed_by FROM ${this.#p}usage_writers WHERE writer = ?`, [batch.writer])
        // 1,000 rows per statement: a prepared statement takes at most 65,535 placeholders.
        for (let i = 0; claimed[0]?.claimed_by === claim && i < rows.length; i += 1000) {
          const part = rows.slice(i, i + 1000)
          const values = part.flatMap((r) => [r.appToken ?? '', LETTER[r.granularity], r.start, r.requests, r.throttled, r.refused, r.statuses['2xx'], r.statuses['3xx'], r.statuses['4xx'], r.statuses['5xx'], r.unknownAppToken, r.suspended ?? 0, r.expiresAt])
          const fresh = (c: string) => `${c} = IF(expires_at <= ${Number(now)}, 0, ${c}) + VALUES(${c})`
          await connection.execute(
            `INSERT INTO ${this.#p}usage_buckets (app_token, granularity, start_at, ${USAGE_COLUMNS.join(', ')}, expires_at) VALUES ${part.map(() => `(${Array(13).fill('?').join(', ')})`).join(', ')}
             ON DUPLICATE KEY UPDATE ${USAGE_COLUMNS.map(fresh).join(', ')}, shadow = IF(expires_at <= ${Number(now)}, '{}', shadow), expires_at = IF(expires_at <= ${Number(now)}, VALUES(expires_at), GREATEST(expires_at, VALUES(expires_at)))`,
            values,
          )
        }
        for (const r of claimed[0]?.claimed_by === claim ? rows : []) {
          if (r.shadow === undefined || Object.keys(r.shadow).length === 0) continue
          const where = `WHERE app_token = ? AND granularity = ? AND start_at = ?`
          const at = [r.appToken ?? '', LETTER[r.granularity], r.start]
          const [found] = await connection.execute<Row[]>(`SELECT shadow FROM ${this.#p}usage_buckets ${where} FOR UPDATE`, at)
          const shadow = JSON.parse(String(found[0]?.shadow ?? '{}')) as Record<string, number>
          addShadowCounts(shadow, r.shadow)
          await connection.execute(`UPDATE ${this.#p}usage_buckets SET shadow = ? ${where}`, [JSON.stringify(shadow), ...at])
        }
        await connection.commit()
        return
      } catch (error) {
        await connection.rollback().catch(() => {})
        // ER_LOCK_DEADLOCK: InnoDB rolled the transaction back; nothing of it was applied.
        if ((error as { errno?: number }).errno !== 1213 || attempt >= 10) throw error
      } finally {
        connection.release()
      }
    }
  }
  async getUsage(appToken: string | null, granularity: UsageGranularity, from: number, to: number): Promise<UsageBucket[]> {
    const rows = await this.#rows(
      `SELECT * FROM ${this.#p}usage_buckets WHERE app_token = ? AND granularity = ? AND start_at >= ? AND start_at < ? AND expires_at > ? ORDER BY start_at`,
      [appToken ?? '', LETTER[granularity], from, to, Date.now()],
    )
    return rows.map((r) => ({ start: Number(r.start_at), requests: Number(r.requests), throttled: Number(r.throttled), refused: Number(r.refused), suspended: Number(r.suspended ?? 0), shadow: JSON.parse(String(r.shadow ?? '{}')) as Record<string, number>, statuses: { '2xx': Number(r.s2xx), '3xx': Number(r.s3xx), '4xx': Number(r.s4xx), '5xx': Number(r.s5xx) }, unknownAppToken: Number(r.unknown_app_token) }))
  }
  async topUsage(query: UsageTopQuery): Promise<UsageTotal[]> {
    const by = query.by === 'requests' ? 'requests' : 'throttled'
    const rows = await this.#rows(
      `SELECT app_token, SUM(requests) AS requests, SUM(throttled) AS throttled FROM ${this.#p}usage_buckets
       WHERE granularity = ? AND start_at >= ? AND start_at < ? AND app_token <> '' AND expires_at > ?
       GROUP BY app_token HAVING SUM(${by}) > 0 ORDER BY SUM(${by}) DESC, app_token LIMIT ${Math.max(1, Math.floor(query.limit))}`,
      [LETTER[query.granularity], query.from, query.to, Date.now()],
    )
    return rows.map((r) => ({ appToken: r.app_token as string, requests: Number(r.requests), throttled: Number(r.throttled) }))
  }

  /** The pool is yours: end it yourself. */
  close() {}
}

const USAGE_COLUMNS = ['requests', 'throttled', 'refused', 's2xx', 's3xx', 's4xx', 's5xx', 'unknown_app_token', 'suspended']
const LETTER: Record<UsageGranularity, string> = { minute: 'm', hour: 'h', day: 'd' }

function result(step: RateResult): RateResult {
  return { allowed: step.allowed, remaining: step.remaining, resetMs: step.resetMs, retryAfterMs: step.retryAfterMs }
}

// Rows to records: BIGINT columns come back as numbers or strings depending on the driver's settings.

function toApplication(r: Row): ApplicationRecord {
  return { appToken: r.app_token as string, name: r.name as string, secretHash: r.secret_hash as string, callbackPrefix: r.callback_prefix as string | null, limit: num(r.rate_limit), ownerId: r.owner_id as string | null, previousSecretHash: r.previous_secret_hash as string | null, previousSecretExpiresAt: num(r.previous_secret_expires_at), suspendedAt: num(r.suspended_at), suspensionReason: (r.suspension_reason as string | null | undefined) ?? null, plan: (r.plan as string | null | undefined) ?? null, createdAt: Number(r.created_at), updatedAt: Number(r.updated_at) }
}
function toUser(r: Row): UserRecord {
  return { id: r.id as string, username: r.username as string, usernameSkeleton: r.username_skeleton as string | null, screenName: r.screen_name as string, displayName: r.display_name as string, email: r.email as string, rights: JSON.parse(r.rights as string) as string[], passwordHash: r.password_hash as string | null, createdAt: Number(r.created_at), updatedAt: Number(r.updated_at) }
}
function toApiKey(r: Row): ApiKeyRecord {
  return { keyId: r.key_id as string, userId: r.user_id as string, name: r.name as string, secretHash: r.secret_hash as string, createdAt: Number(r.created_at), lastUsedAt: num(r.last_used_at), revokedAt: num(r.revoked_at) }
}
function toAccessToken(r: Row): AccessTokenRecord {
  return { tokenHash: r.token_hash as string, userId: r.user_id as string, appToken: r.app_token as string, codeHash: r.code_hash as string | null, createdAt: Number(r.created_at), expiresAt: Number(r.expires_at), revokedAt: num(r.revoked_at) }
}
function toCode(r: Row): AuthorizationCodeRecord {
  return { codeHash: r.code_hash as string, appToken: r.app_token as string, userId: r.user_id as string, redirectUri: r.redirect_uri as string, codeChallenge: r.code_challenge as string | null, createdAt: Number(r.created_at), expiresAt: Number(r.expires_at), usedAt: num(r.used_at) }
}
function toGrant(r: Row): GrantRecord {
  return { userId: r.user_id as string, appToken: r.app_token as string, firstAuthorizedAt: Number(r.first_authorized_at), lastUsedAt: Number(r.last_used_at) }
}
function toSession(r: Row): SessionRecord {
  return { sessionHash: r.session_hash as string, userId: r.user_id as string, passwordStamp: r.password_stamp as string, createdAt: Number(r.created_at), expiresAt: Number(r.expires_at) }
}
