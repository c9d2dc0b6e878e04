/**
 * The database restarts while the gate serves: requests get the configured outage mode
 * while it is down, and the same gate, store and pool serve normally once it is back, with
 * no restart of the service. Runs on a PostgreSQL server of its own (port 15400-15449),
 * never the shared one.
 */
import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createGate, type GateOutcome, type StoreErrorEvent, type StoreRecoveredEvent } from '../src/index.js'
import { PostgresStore } from '../src/store/postgres/store.js'
import { coreRequest } from './support/requests.js'
import { OwnPostgres, ownPostgresPossible } from './support/postgres-server.js'

const possible = ownPostgresPossible()
if (!possible) {
  const why = 'no initdb/pg_ctl in /usr/lib/postgresql/15/bin (apt-get install postgresql, or set POSTGRES_BIN)'
  if (process.env.CI === 'true') throw new Error(`PostgreSQL restart tests cannot run: ${why}`)
  console.warn(`PostgreSQL restart tests skipped: ${why}`)
}

const WINDOW = 3_600_000
const status = (outcome: GateOutcome) => (outcome.type === 'next' ? 200 : outcome.response.status)

describe.skipIf(!possible)('PostgresStore when its server restarts', () => {
  let server: OwnPostgres

  beforeAll(async () => {
    server = await OwnPostgres.start({ from: 15400, to: 15449 })
  }, 60_000)

  afterAll(async () => {
    await server?.destroy()
  })

  afterEach(async () => {
    // A failed test must not leave the next one without its server.
    if (server !== undefined && server.pid() === undefined) await server.startAgain()
  })

  /** A gate on the server, anonymous requests counted in the database. */
  async function gateOn(schema: string, onStoreError: 'fail-closed' | 'memory') {
    const errors: unknown[] = []
    const store = new PostgresStore({ connectionString: server.url, schema, sweepIntervalMs: 0, poolOptions: { connectionTimeoutMillis: 1000 }, onError: (e) => errors.push(e) })
    await store.migrate()
    const gate = createGate({ store, storeTimeoutMs: 1500, throttle: { anonymous: { limit: 1000, windowMs: WINDOW, scope: 'shared' }, onStoreError } })
    const events: StoreErrorEvent[] = []
    const recovered: StoreRecoveredEvent[] = []
    gate.on('storeError', (event) => events.push(event))
    gate.on('storeRecovered', (event) => recovered.push(event))
    return { store, gate, events, recovered, errors, request: async () => gate.handle(coreRequest()) }
  }

  it('answers 503 while the database is down with fail-closed, and serves again once it is back, with the same gate', async () => {
    const { gate, events, recovered, request } = await gateOn('closed', 'fail-closed')
    try {
      expect(status(await request())).toBe(200)
      await server.stop('fast')
      for (let i = 0; i < 5; i++) {
        const down = await request()
        expect(status(down)).toBe(503)
        expect(down.type === 'respond' && JSON.parse(down.response.body)).toMatchObject({ code: 'service_unavailable' })
      }
      await server.startAgain()
      await expect.poll(async () => status(await request()), { timeout: 10_000, interval: 200 }).toBe(200)
      // The count kept in the database survived the restart.
      const after = await request()
      expect(after.type === 'next' && after.headers.ratelimit).toMatch(/r=99[0-9];/)
      // One outage: one event when it began, one when it ended.
      expect(events).toEqual([expect.objectContaining({ operation: 'consumeRate', outcome: 'failed', store: 'records+rates' })])
      expect(recovered).toEqual([expect.objectContaining({ store: 'records+rates', failedCalls: expect.any(Number) })])
    } finally {
      await gate.close()
    }
  }, 60_000)

  it('throttles in memory while the database is down with the memory mode, then counts in the database again', async () => {
    const { gate, events, request } = await gateOn('fallback', 'memory')
    try {
      for (let i = 0; i < 3; i++) expect(status(await request())).toBe(200)
      await server.stop('immediate')
      const down = await request()
      expect(status(down)).toBe(200)
      // Counted in this process's memory meanwhile: no RateLimit headers claim a count it does not have.
      expect(down.type === 'next' && down.headers.ratelimit).toBeUndefined()
      expect(events).toEqual([expect.objectContaining({ operation: 'consumeRate', outcome: 'fallback' })])
      await server.startAgain()
      // Back on the database's count: three requests before the outage are still there.
      await expect
        .poll(async () => {
          const outcome = await request()
          return outcome.type === 'next' ? Number(/r=(\d+)/.exec(outcome.headers.ratelimit ?? '')?.[1]) : -1
        }, { timeout: 10_000, interval: 200 })
        .toBeLessThanOrEqual(996)
    } finally {
      await gate.close()
    }
  }, 60_000)

  it('hears about application changes again after the restart', async () => {
    const { store, gate, errors } = await gateOn('notify', 'fail-closed')
    const heard: string[] = []
    store.attach({ rateKeyEvicted: () => {}, applicationChanged: (token: string) => heard.push(token) })
    const writer = new pg.Pool({ connectionString: server.url, max: 1 })
    writer.on('error', () => {})
    const insert = (token: string) =>
      writer.query('INSERT INTO notify.applications (app_token, name, secret_hash, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)', [token, 'n', 'x', 1, 1])
    try {
      await expect.poll(async () => (await insert(`before${Date.now()}`), heard.length), { timeout: 5000, interval: 200 }).toBeGreaterThan(0)
      await server.stop('fast')
      await server.startAgain()
      heard.length = 0
      await expect.poll(async () => (await insert(`after${Date.now()}`).catch(() => undefined), heard.length), { timeout: 15_000, interval: 300 }).toBeGreaterThan(0)
      expect(heard[0]).toMatch(/^after/)
      // The broken listening connection was reported, not thrown.
      expect(errors.length).toBeGreaterThan(0)
    } finally {
      await writer.end()
      await gate.close()
    }
  }, 60_000)
})
