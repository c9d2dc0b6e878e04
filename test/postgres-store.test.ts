/**
 * PostgresStore on the real PostgreSQL (DATABASE_URL, default 127.0.0.1:5432/test), in a
 * schema of its own, dropped afterwards: the conformance suite, migrations, the indexes
 * every lookup and the sweep use, the sweep itself, and change notifications between
 * instances. Processes and a restarted server have their own files.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGate, MemoryStore } from '../src/index.js'
import { hashPassword } from '../src/secrets/passwords.js'
import { PostgresStore } from '../src/store/postgres/store.js'
import { describeStore } from '../src/testing/index.js'
import { describeAgreementWithMemoryStore } from './support/store-agreement.js'
import { DATABASE_URL, dropSchema, freshSchema, postgresAvailable } from './support/postgres.js'
import { coreRequest } from './support/requests.js'

const available = await postgresAvailable()
const run = promisify(execFile)

describe.skipIf(!available)('PostgresStore', () => {
  const schema = freshSchema('store')
  let pool: pg.Pool

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: DATABASE_URL, max: 8 })
    await new PostgresStore({ pool, schema, sweepIntervalMs: 0 }).migrate()
  })

  afterAll(async () => {
    await pool?.end()
    await dropSchema(schema)
  })

  /** The schema `q` (quoted) exactly as a release with migrations 1 to `version` left it. */
  async function schemaAtVersion(q: string, version: number): Promise<void> {
    const { MIGRATIONS } = await import('../src/store/postgres/migrations/index.js')
    await pool.query(`CREATE SCHEMA ${q}; CREATE TABLE ${q}.schema_version (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
    for (const m of MIGRATIONS.slice(0, version)) {
      await pool.query(m.sql(q))
      await pool.query(`INSERT INTO ${q}.schema_version (version, description) VALUES ($1, 'old')`, [m.version])
    }
  }

  // The conformance kit, on the shared pool (never ended by the store) in this run's schema.
  describeStore('PostgresStore', () => new PostgresStore({ pool, schema, sweepIntervalMs: 0 }), {
    describe,
    it,
    after: afterAll,
    cleanup: (store) => store.close(),
  })

  // No timer and no listener, and the pool is the test's: nothing to close.
  describeAgreementWithMemoryStore('PostgresStore', () => new PostgresStore({ pool, schema, sweepIntervalMs: 0 }))

  describe('migrations', () => {
    /** Every object in a schema, with the transaction that last wrote its catalog row. */
    async function catalog(name: string): Promise<string[]> {
      const { rows } = await pool.query<{ entry: string }>(
        `SELECT c.relname || ':' || c.relkind::text || ':' || c.xmin::text AS entry FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1
         UNION ALL SELECT 'proc:' || p.proname || ':' || p.xmin::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1
         UNION ALL SELECT 'trigger:' || t.tgname || ':' || t.xmin::text FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1
         ORDER BY 1`,
        [name],
      )
      return rows.map((r) => r.entry)
    }

    it('creates a new schema at the current version and records each version applied', async () => {
      const fresh = freshSchema('mig')
      const store = new PostgresStore({ pool, schema: fresh, sweepIntervalMs: 0 })
      try {
        expect(await store.version()).toBe(0)
        expect(await store.migrate()).toEqual({ from: 0, to: PostgresStore.schemaVersion, applied: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] })
        expect(await store.version()).toBe(10)
        const { rows } = await pool.query(`SELECT version, description FROM ${pg.escapeIdentifier(fresh)}.schema_version ORDER BY version`)
        expect(rows.map((r) => r.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
      } finally {
        await store.close()
        await dropSchema(fresh)
      }
    })

    it('changes nothing when the schema is up to date', async () => {
      const before = await catalog(schema)
      expect(before.length).toBeGreaterThan(10)
      const store = new PostgresStore({ pool, schema, sweepIntervalMs: 0 })
      expect(await store.migrate()).toEqual({ from: 10, to: 10, applied: [] })
      expect(await catalog(schema)).toEqual(before)
      await store.close()
    })

    it('brings a version 1 schema to the current version and keeps its records', async () => {
      const old = freshSchema('v1')
      const q = pg.escapeIdentifier(old)
      try {
        // Version 1 exactly as a release with only migration 1 left it.
        await schemaAtVersion(q, 1)
        await pool.query(`INSERT INTO ${q}.sessions VALUES ('s1', 'u1', 'stamp', 1, ${Date.now() + 60_000})`)
        const store = new PostgresStore({ pool, schema: old, sweepIntervalMs: 0 })
        expect(await store.migrate()).toEqual({ from: 1, to: 10, applied: [2, 3, 4, 5, 6, 7, 8, 9, 10] })
        expect(await store.getSession('s1')).toMatchObject({ userId: 'u1' })
        await store.recordGrant('u1', 'app', 5)
        expect(await store.listGrants('u1')).toEqual([{ userId: 'u1', appToken: 'app', firstAuthorizedAt: 5, lastUsedAt: 5 }])
        await store.close()
      } finally {
        await dropSchema(old)
      }
    })

    it('gives users saved before version 4 their skeleton: a look-alike of one is refused, and each still signs in', async () => {
      const old = freshSchema('v3')
      const q = pg.escapeIdentifier(old)
      try {
        // Version 3 exactly as a release with migrations 1 to 3 left it, with two users of that time.
        await schemaAtVersion(q, 3)
        const scrypt = { logN: 10, blockSize: 8, parallelization: 1 }
        const hash = await hashPassword('correct horse battery', scrypt)
        for (const [id, username] of [['aaaa-0001', 'ada'], ['aaaa-0002', 'ada\u200b']]) {
          await pool.query(`INSERT INTO ${q}.users (id, username, screen_name, display_name, email, rights, password_hash, created_at, updated_at) VALUES ($1, $2, 'Ada', 'Ada', 'a@example.org', '{}', $3, 1, 1)`, [id, username, hash])
        }
        const store = new PostgresStore({ pool, schema: old, sweepIntervalMs: 0 })
        expect(await store.migrate()).toEqual({ from: 3, to: 10, applied: [4, 5, 6, 7, 8, 9, 10] })
        const { rows } = await pool.query(`SELECT id, username_skeleton FROM ${q}.users ORDER BY id`)
        expect(rows).toEqual([
          { id: 'aaaa-0001', username_skeleton: 'ada' },
          { id: 'aaaa-0002', username_skeleton: 'ada' },
        ])
        const gate = createGate({ store, basic: { scrypt } })
        await expect(gate.users.create({ username: '\u0430da', displayName: 'Mallory', email: 'm@example.org' })).rejects.toMatchObject({ code: 'conflict' })
        const app = await gate.applications.register({ name: 'probe' })
        for (const username of ['ada', 'ada\u200b']) {
          const outcome = await gate.handle(coreRequest({ headers: { authorization: `Basic ${Buffer.from(`${username}:correct horse battery`).toString('base64')}`, 'x-app-token': app.appToken } }))
          expect(outcome).toMatchObject({ type: 'next', context: { user: { username } } })
        }
        await gate.close()
      } finally {
        await dropSchema(old)
      }
    })

    it('reads an application saved before version 7 as active, and keeps a suspension whole', async () => {
      const old = freshSchema('v6')
      const q = pg.escapeIdentifier(old)
      try {
        await schemaAtVersion(q, 6)
        await pool.query(`INSERT INTO ${q}.applications (app_token, name, secret_hash, created_at, updated_at) VALUES ('old-app', 'Old', 'h', 1, 1)`)
        const store = new PostgresStore({ pool, schema: old, sweepIntervalMs: 0 })
        expect(await store.migrate()).toEqual({ from: 6, to: 10, applied: [7, 8, 9, 10] })
        expect(await store.getApplication('old-app')).toMatchObject({ appToken: 'old-app', suspendedAt: null, suspensionReason: null })
        expect(await store.updateApplication('old-app', { suspendedAt: 5, suspensionReason: 'Abuse' })).toMatchObject({ suspendedAt: 5, suspensionReason: 'Abuse' })
        // Half a suspension is refused by the schema: a reader never sees a reason without its time.
        await expect(store.updateApplication('old-app', { suspendedAt: null })).rejects.toMatchObject({ code: '23514' })
        expect(await store.getApplication('old-app')).toMatchObject({ suspendedAt: 5, suspensionReason: 'Abuse' })
        await store.close()
      } finally {
        await dropSchema(old)
      }
    })

    it('reads an application saved before version 9 as on the default plan, and keeps a plan put on it', async () => {
      const old = freshSchema('v7')
      const q = pg.escapeIdentifier(old)
      try {
        await schemaAtVersion(q, 7)
        await pool.query(`INSERT INTO ${q}.applications (app_token, name, secret_hash, rate_limit, created_at, updated_at) VALUES ('old-app', 'Old', 'h', 40, 1, 1)`)
        const store = new PostgresStore({ pool, schema: old, sweepIntervalMs: 0 })
        expect(await store.migrate()).toEqual({ from: 7, to: 10, applied: [8, 9, 10] })
        expect(await store.getApplication('old-app')).toMatchObject({ appToken: 'old-app', limit: 40, plan: null })
        expect(await store.updateApplication('old-app', { plan: 'partner' })).toMatchObject({ limit: 40, plan: 'partner' })
        // What an instance of version 7 still running during the rollout does: an insert without the column.
        await pool.query(`INSERT INTO ${q}.applications (app_token, name, secret_hash, created_at, updated_at) VALUES ('v7-app', 'V7', 'h', 2, 2)`)
        expect(await store.getApplication('v7-app')).toMatchObject({ plan: null })
        await store.close()
      } finally {
        await dropSchema(old)
      }
    })

    it('lets several processes migrate one new schema at once: one applies it, none fails', async () => {
      const fresh = freshSchema('race')
      try {
        const script = new URL('./fixtures/postgres-migrate.ts', import.meta.url).pathname
        const results = await Promise.all(
          [1, 2, 3].map(() => run(process.execPath, ['--import', 'tsx', script], { env: { ...process.env, DATABASE_URL, SCHEMA: fresh } })),
        )
        const outcomes = results.map((r) => JSON.parse(r.stdout) as { from: number; applied: number[] })
        expect(outcomes.filter((o) => o.applied.length > 0)).toEqual([{ from: 0, to: 10, applied: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] }])
        expect(outcomes.filter((o) => o.applied.length === 0)).toHaveLength(2)
        const { rows } = await pool.query(`SELECT version FROM ${pg.escapeIdentifier(fresh)}.schema_version ORDER BY version`)
        expect(rows.map((r) => r.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
      } finally {
        await dropSchema(fresh)
      }
    })

    it('refuses a schema newer than it knows', async () => {
      const fresh = freshSchema('newer')
      const store = new PostgresStore({ pool, schema: fresh, sweepIntervalMs: 0 })
      try {
        await store.migrate()
        await pool.query(`INSERT INTO ${pg.escapeIdentifier(fresh)}.schema_version (version, description) VALUES (99, 'from the future')`)
        await expect(store.migrate()).rejects.toThrow(/version 99, newer than this release knows/)
      } finally {
        await store.close()
        await dropSchema(fresh)
      }
    })
  })

  describe('indexes', () => {
    /**
     * The plan of a statement with sequential scans, bitmap scans and sorts priced out: on
     * these small tables the planner would pick them anyway, so only a plan that needs
     * none of them proves an index serves both the lookup and the order.
     */
    async function plan(sql: string, values: unknown[] = []): Promise<string> {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        await client.query('SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off')
        const { rows } = await client.query(`EXPLAIN ${sql}`, values)
        return rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n')
      } finally {
        await client.query('ROLLBACK')
        client.release()
      }
    }

    it('runs every request-path statement on an index, ordered by it, without a sort or a sequential scan', async () => {
      const recorded = new Map<string, unknown[]>()
      const recording = {
        query: (config: { name?: string; text: string; values?: unknown[] }) => {
          recorded.set(config.text, config.values ?? [])
          return pool.query(config)
        },
        connect: () => pool.connect(),
        end: async () => {},
      }
      const store = new PostgresStore({ pool: recording, schema, sweepIntervalMs: 0 })
      const now = Date.now()
      await store.getApplication('a')
      await store.updateApplication('a', { limit: 5 })
      await store.deleteApplication('a')
      await store.getUser('u')
      await store.getUserByUsername('ada')
      await store.updateUser('u', { email: 'x' })
      await store.getApiKey('k')
      await store.updateApiKey('k', { lastUsedAt: now })
      await store.listApiKeys('u')
      for (const sortBy of ['createdAt', 'lastUsedAt', 'revokedAt', 'name'] as const) {
        for (const order of ['asc', 'desc'] as const) {
          await store.listApiKeys('u', { limit: 10, sortBy, order, includeRevoked: true })
          await store.listApiKeys('u', { limit: 10, sortBy, order, includeRevoked: false, after: 'k', nameSearch: 'etl' })
        }
      }
      await store.getAccessToken('t')
      await store.revokeAccessToken('t', now)
      await store.revokeAccessTokens({ userId: 'u' }, now)
      await store.revokeAccessTokens({ appToken: 'a' }, now)
      await store.revokeAccessTokens({ codeHash: 'c' }, now)
      await store.revokeAccessTokens({ userId: 'u', appToken: 'a' }, now)
      await store.listAccessTokens('u')
      await store.getAuthorizationCode('c')
      await store.consumeAuthorizationCode('c', now)
      await store.getSession('s')
      await store.deleteSession('s')
      await store.trimSessions('u', 3)
      await store.recordGrant('u', 'a', now)
      await store.touchGrant('u', 'a', now)
      await store.getGrant('u', 'a')
      await store.listGrants('u')
      await store.deleteGrant('u', 'a')
      await store.consumeRate('r', 10, 1000, 1)
      await store.consumeRate('r', 10, 1000, 0)
      await store.resetRate('r')
      await store.addUsage({ writer: 'w', sequence: 1, createdAt: now, idExpiresAt: now + 1000, rows: [{ appToken: 'a', granularity: 'minute', start: 0, expiresAt: now + 1000, requests: 1, throttled: 0, refused: 0, suspended: 0, shadow: {}, statuses: { '2xx': 1, '3xx': 0, '4xx': 0, '5xx': 0 }, unknownAppToken: 0 }] })
      await store.getUsage('a', 'minute', 0, 3_600_000)
      await store.sweep()
      await store.close()

      expect(recorded.size).toBeGreaterThan(40)
      const unindexed: string[] = []
      for (const [text, values] of recorded) {
        const shown = await plan(text, values)
        if (/Seq Scan|Sort\b/.test(shown)) unindexed.push(`${text}\n${shown}`)
      }
      expect(unindexed).toEqual([])
    })

    it('finds the user of a token or key in the same query, on the primary keys', async () => {
      const q = pg.escapeIdentifier(schema)
      const text = await plan(`SELECT * FROM ${q}.access_tokens t LEFT JOIN ${q}.users u ON u.id = t.user_id WHERE t.token_hash = $1`, ['x'])
      expect(text).toMatch(/Index Scan using access_tokens_pkey/)
      expect(text).toMatch(/Index Scan using users_pkey/)
    })
  })

  describe('sweep', () => {
    it('deletes expired tokens, sessions, drained rate cells and API keys past their purge time in batches, and keeps live ones and recent codes', async () => {
      const sweepSchema = freshSchema('sweep')
      const store = new PostgresStore({ pool, schema: sweepSchema, sweepIntervalMs: 0, sweepBatchSize: 3 })
      try {
        await store.migrate()
        const now = Date.now()
        const token = (hash: string, expiresAt: number) =>
          store.insertAccessToken({ tokenHash: hash, userId: 'u', appToken: 'a', codeHash: null, createdAt: now - 10_000, expiresAt, revokedAt: null })
        for (let i = 0; i < 7; i++) await token(`old${i}`, now - 1000)
        await token('live', now + 60_000)
        const code = (hash: string, expiresAt: number) =>
          store.insertAuthorizationCode({ codeHash: hash, appToken: 'a', userId: 'u', redirectUri: 'https://a/cb', codeChallenge: null, createdAt: expiresAt - 60_000, expiresAt, usedAt: now - 5000 })
        await code('recent', now - 1000)
        await code('ancient', now - 7_200_000)
        const session = (hash: string, expiresAt: number) => store.insertSession({ sessionHash: hash, userId: 'u', passwordStamp: 'p', createdAt: now - 10_000, expiresAt })
        await session('gone', now - 1)
        await session('here', now + 60_000)
        const key = (keyId: string) => store.insertApiKey({ keyId, userId: 'u', name: keyId, secretHash: 'b'.repeat(64), createdAt: now - 10_000, lastUsedAt: null, revokedAt: null })
        for (const keyId of ['purged1', 'purged2', 'kept', 'active']) await key(keyId)
        await store.revokeApiKey('purged1', now - 5000, now - 1)
        await store.revokeApiKey('purged2', now - 5000, now - 1)
        await store.revokeApiKey('kept', now - 5000, now + 60_000)
        await store.consumeRate('drains', 1000, 50, 1)
        await store.consumeRate('stays', 1, 3_600_000, 1)
        const quota = (key: string) => ({ kind: 'quota', key, limit: 5, periodStart: now - 1000, periodEnd: now + 3_600_000, cost: 1 }) as const
        await store.consumeLimits([quota('counted')])
        // A refused call leaves the row it made for a key never seen, holding nothing: swept.
        expect((await store.consumeLimits([{ kind: 'rate', key: 'stays', limit: 1, windowMs: 3_600_000, cost: 1 }, quota('never-counted')])).map((r) => r.allowed)).toEqual([false, true])
        await sleep(60)

        expect(await store.sweep()).toEqual({ apiKeys: 2, accessTokens: 7, authorizationCodes: 1, sessions: 1, rates: 2, usage: 0 })
        expect((await store.consumeLimits([{ ...quota('counted'), cost: 0 }, { ...quota('never-counted'), cost: 0 }])).map((r) => r.remaining)).toEqual([4, 5])
        expect(await store.getAccessToken('live')).toBeDefined()
        expect(await store.getAccessToken('old0')).toBeUndefined()
        expect(await store.getAuthorizationCode('recent')).toBeDefined()
        expect(await store.getAuthorizationCode('ancient')).toBeUndefined()
        expect(await store.getSession('here')).toBeDefined()
        expect(await store.getApiKey('purged1')).toBeUndefined()
        expect((await store.listApiKeys('u')).map((k) => k.keyId)).toEqual(['active', 'kept'])
        expect((await store.consumeRate('stays', 1, 3_600_000, 0)).remaining).toBe(0)
        expect(await store.sweep()).toEqual({ apiKeys: 0, accessTokens: 0, authorizationCodes: 0, sessions: 0, rates: 0, usage: 0 })
      } finally {
        await store.close()
        await dropSchema(sweepSchema)
      }
    })

    it('sweeps on its own timer', async () => {
      const sweepSchema = freshSchema('timer')
      const setup = new PostgresStore({ pool, schema: sweepSchema, sweepIntervalMs: 0 })
      await setup.migrate()
      const store = new PostgresStore({ pool, schema: sweepSchema, sweepIntervalMs: 50 })
      try {
        await setup.insertSession({ sessionHash: 'expired', userId: 'u', passwordStamp: 'p', createdAt: 1, expiresAt: 2 })
        await expect.poll(async () => (await pool.query(`SELECT count(*)::int AS n FROM ${pg.escapeIdentifier(sweepSchema)}.sessions`)).rows[0].n, { timeout: 3000 }).toBe(0)
      } finally {
        await store.close()
        await setup.close()
        await dropSchema(sweepSchema)
      }
    })
  })

  describe('change notifications', () => {
    it('tells every attached gate of every instance when any instance changes an application', async () => {
      const a = new PostgresStore({ pool, schema, sweepIntervalMs: 0 })
      const b = new PostgresStore({ connectionString: DATABASE_URL, schema, sweepIntervalMs: 0 })
      const seen: string[] = []
      const sink = (who: string) => ({ rateKeyEvicted: () => {}, applicationChanged: (token: string) => seen.push(`${who}:${token}`) })
      a.attach(sink('a1'))
      a.attach(sink('a2'))
      b.attach(sink('b'))
      try {
        // The listeners connect in the background; a change before they listen is not news to them.
        await expect
          .poll(async () => (await pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'LISTEN %open_data_gate:${schema}%'`)).rows[0].n, { timeout: 5000 })
          .toBe(2)
        const token = `notify${Date.now()}`
        await a.insertApplication({ appToken: token, name: 'n', secretHash: 'x', callbackPrefix: null, limit: null, ownerId: null, previousSecretHash: null, previousSecretExpiresAt: null, suspendedAt: null, suspensionReason: null, plan: null, createdAt: 1, updatedAt: 1 })
        await expect.poll(() => [...seen].sort(), { timeout: 3000 }).toEqual([`a1:${token}`, `a2:${token}`, `b:${token}`])
        seen.length = 0
        await b.updateApplication(token, { limit: 7 })
        await pool.query(`DELETE FROM ${pg.escapeIdentifier(schema)}.applications WHERE app_token = $1`, [token])
        await expect.poll(() => seen.length, { timeout: 3000 }).toBe(6)
        // Rates and other tables say nothing.
        seen.length = 0
        await a.consumeRate(token, 10, 1000, 1)
        await sleep(200)
        expect(seen).toEqual([])
      } finally {
        await a.close()
        await b.close()
      }
    })
    it('hears its own change made right after a gate attached', async () => {
      const store = new PostgresStore({ pool, schema, sweepIntervalMs: 0 })
      const heard: string[] = []
      store.attach({ rateKeyEvicted: () => {}, applicationChanged: (token) => heard.push(token) })
      const token = `own${Date.now()}`
      try {
        await store.insertApplication({ appToken: token, name: 'n', secretHash: 'x', callbackPrefix: null, limit: null, ownerId: null, previousSecretHash: null, previousSecretExpiresAt: null, suspendedAt: null, suspensionReason: null, plan: null, createdAt: 1, updatedAt: 1 })
        await expect.poll(() => heard, { timeout: 2000 }).toEqual([token])
      } finally {
        await store.deleteApplication(token)
        await store.close()
      }
    })
    it('serves a token registered on another instance at once, though this instance never hears the notification', async () => {
      const a = new PostgresStore({ pool, schema, sweepIntervalMs: 0 })
      const b = new PostgresStore({ pool, schema, sweepIntervalMs: 0 })
      // B never listens: every notification is lost to it.
      b.attach = () => {}
      const gateA = createGate({ store: a, usage: false })
      const gateB = createGate({ store: b, usage: false, applicationCacheMs: 60_000 })
      const token = `unheard${Date.now()}`
      const status = async () => {
        const outcome = await gateB.handle(coreRequest({ headers: { 'x-app-token': token } }))
        return outcome.type === 'next' ? 200 : outcome.response.status
      }
      try {
        expect(await status()).toBe(403)
        expect(await status()).toBe(403)
        await gateA.applications.register({ name: 'later', appToken: token })
        expect(await status()).toBe(200)
      } finally {
        await gateA.applications.delete(token)
        await gateA.close()
        await gateB.close()
      }
    })
  })

  describe('rate steps', () => {
    it('counts on from the latest clock reading on a key when steps take the row lock out of clock order', async () => {
      // As if a concurrent step had read the clock a second later than this one, taken the
      // row lock first and used one unit of two per minute: one unit is left, and this
      // step takes it, whatever its own (earlier) clock reading says.
      const store = new PostgresStore({ pool, schema, sweepIntervalMs: 0 })
      const key = `order${Date.now()}`
      const { rows } = await pool.query(`SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + 1000000 AS later`)
      const later = Number(rows[0].later)
      await pool.query(`INSERT INTO ${pg.escapeIdentifier(schema)}.rates (key, tat_us, seen_us, allowed) VALUES ($1, $2, $3, true)`, [key, later + 30_000_000, later])
      const step = await store.consumeRate(key, 2, 60_000, 1)
      expect(step).toMatchObject({ allowed: true, remaining: 0 })
      expect((await store.consumeRate(key, 2, 60_000, 1)).allowed).toBe(false)
      await store.close()
    })
  })

  describe('statements per request', () => {
    /** A gate on the store, counting the statements it sends; rates in memory or in PostgreSQL too. */
    async function countingGate(rates: 'memory' | 'postgres') {
      let statements = 0
      const counting = {
        query: (config: { name?: string; text: string; values?: unknown[] }) => {
          statements++
          return pool.query(config)
        },
        connect: () => pool.connect(),
        end: async () => {},
      }
      const store = new PostgresStore({ pool: counting, schema, sweepIntervalMs: 0 })
      const gate = createGate({ store, ...(rates === 'memory' ? { rateStore: new MemoryStore() } : {}) })
      const { appToken } = await gate.applications.register({ name: 'counted' })
      const user = await gate.users.create({ username: `counted${Date.now()}`, displayName: 'C', email: 'c@example.org' })
      const { accessToken } = await gate.tokens.issue({ userId: user.id, appToken })
      const appRequest = coreRequest({ headers: { 'x-app-token': appToken } })
      const oauthRequest = coreRequest({ headers: { 'x-app-token': appToken, authorization: `OAuth ${accessToken}` } })
      /** Statements sent for one request, after a first one warmed the application cache. */
      const cost = async (request: typeof appRequest) => {
        expect((await gate.handle(request)).type).toBe('next')
        const before = statements
        const outcome = await gate.handle(request)
        expect(outcome.type === 'next' ? outcome.context.user?.id ?? null : 'refused').toBe(request === oauthRequest ? user.id : null)
        return statements - before
      }
      /** Statements sent for `n` requests of one user at once (warm). */
      const concurrentCost = async (request: typeof appRequest, n: number) => {
        await gate.handle(request)
        const before = statements
        const outcomes = await Promise.all(Array.from({ length: n }, () => gate.handle(request)))
        expect(outcomes.every((o) => o.type === 'next')).toBe(true)
        return statements - before
      }
      return { gate, appRequest, oauthRequest, cost, concurrentCost }
    }

    it('sends nothing for an app-token request and one statement for an OAuth request when rates live elsewhere', async () => {
      const { gate, appRequest, oauthRequest, cost, concurrentCost } = await countingGate('memory')
      try {
        expect(await cost(appRequest)).toBe(0)
        expect(await cost(oauthRequest)).toBe(1)
        // Many requests of one user at once: still one statement each.
        expect(await concurrentCost(oauthRequest, 20)).toBe(20)
      } finally {
        await gate.close()
      }
    })

    it('adds one statement, the rate step, when PostgreSQL keeps the rates too', async () => {
      const { gate, appRequest, oauthRequest, cost } = await countingGate('postgres')
      try {
        expect(await cost(appRequest)).toBe(1)
        expect(await cost(oauthRequest)).toBe(2)
      } finally {
        await gate.close()
      }
    })
  })

  describe('connections', () => {
    it('ends the pool it made on close, and never a pool it was given', async () => {
      const owned = new PostgresStore({ connectionString: DATABASE_URL, schema, sweepIntervalMs: 0 })
      await owned.getApplication('x')
      await owned.close()
      await expect(owned.getApplication('x')).rejects.toThrow(/after calling end/)
      const given = new PostgresStore({ pool, schema, sweepIntervalMs: 0 })
      await given.close()
      expect((await pool.query('SELECT 1 AS one')).rows[0].one).toBe(1)
    })

    it('rejects options it cannot use, naming them', () => {
      expect(() => new PostgresStore({ connectionString: DATABASE_URL, schema: 'Robert"; DROP' })).toThrow(/schema must be/)
      expect(() => new PostgresStore({} as never)).toThrow(/needs a connectionString/)
      expect(() => new PostgresStore({ pool, connectionString: DATABASE_URL } as never)).toThrow(/not both/)
      expect(() => new PostgresStore({ pool, sweepBatchSize: 0 })).toThrow(/sweepBatchSize/)
    })

    it('prepares each request-path statement once per connection', async () => {
      const client = await pool.connect()
      const seen: string[] = []
      const single = {
        query: (config: { name?: string; text: string; values?: unknown[] }) => {
          seen.push(config.name ?? '(unnamed)')
          return client.query(config)
        },
        connect: () => pool.connect(),
        end: async () => {},
      }
      const store = new PostgresStore({ pool: single, schema, sweepIntervalMs: 0 })
      try {
        for (let i = 0; i < 3; i++) {
          await store.getApplication('x')
          await store.getAccessToken('y')
          await store.consumeRate('z', 10, 1000, 1)
        }
        expect(seen.every((name) => name.startsWith('odg_'))).toBe(true)
        expect(new Set(seen).size).toBe(3)
        const { rows } = await client.query(`SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name = ANY($1)`, [[...new Set(seen)]])
        expect(rows[0].n).toBe(3)
      } finally {
        await store.close()
        client.release(true)
      }
    })
  })
})
