/**
 * Generated hostile input (fast-check), with a fixed seed so that every run checks the
 * same 100 000+ cases: requests through the core `gate.handle` (with a fresh store per
 * case), and the pure matchers and parsers at the edge in volume. The same properties
 * run for longer, with a random seed, under `npm run fuzz`; the cross-adapter sample is
 * in `fuzz-adapters.test.ts`.
 */
import fc from 'fast-check'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest'
import { PostgresStore } from '../src/store/postgres/store.js'
import { appTokenProperty, authorizationProperty, coreProperty, redirectUriProperty, unstorableProperty, untrustedProxyProperty, type StoreWorld } from './fuzz/properties.js'
import { createStoreWorld } from './fuzz/world.js'
import { DATABASE_URL, dropSchema, freshSchema, postgresAvailable } from './support/postgres.js'

const postgres = await postgresAvailable()

/** Fixed: a failure here replays with `npm run fuzz -- --seed 20261122 --only <name>`. */
const SEED = 20261122
/** Cases per property: 123 500 in all (the cross-adapter sample, in its own file, adds more). */
export const RUNS = { core: 10_000, untrustedProxy: 2_000, redirect: 50_000, loopbackRedirect: 20_000, authorization: 20_000, appToken: 20_000, unstorable: 1_500 }

/**
 * The gate's one-time warnings the generated requests provoke on purpose: proxy headers
 * from a private peer with no trusted proxy, metadata asked for without a configured issuer,
 * and the outage of the world whose store is down on purpose (and its end, between cases).
 */
const EXPECTED_WARNINGS = new Set(['ODG_UNTRUSTED_PROXY_HEADERS', 'ODG_DERIVED_ISSUER', 'ODG_STORE_ERROR', 'ODG_STORE_RECOVERED'])

let warn: MockInstance<typeof process.emitWarning>
beforeAll(() => {
  // Requests from private peers with proxy headers and no trusted proxy: the gate warns once per gate.
  warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
})
afterAll(() => {
  const codes = new Set(warn.mock.calls.map((call) => (call[1] as { code?: string } | undefined)?.code))
  warn.mockRestore()
  expect([...codes].filter((code) => !EXPECTED_WARNINGS.has(code ?? ''))).toEqual([])
})

describe('hostile input, generated (fast-check, fixed seed)', () => {
  it(`answers ${RUNS.core} generated requests through gate.handle well-formed, without a write on refusal or a secret echoed`, async () => {
    await fc.assert(coreProperty(), { seed: SEED, numRuns: RUNS.core })
  }, 120_000)

  it(`decides as if proxy headers from an untrusted peer were not there (${RUNS.untrustedProxy} pairs of requests)`, async () => {
    await fc.assert(untrustedProxyProperty(), { seed: SEED, numRuns: RUNS.untrustedProxy })
  }, 60_000)

  it(`never admits a redirect_uri a browser would take to another origin or outside the Callback Prefix (${RUNS.redirect} URLs)`, () => {
    fc.assert(redirectUriProperty(), { seed: SEED, numRuns: RUNS.redirect })
  })

  it(`never admits such a redirect_uri with oauth.allowLoopbackCallbacks on, loopback prefixes included (${RUNS.loopbackRedirect} URLs)`, () => {
    fc.assert(redirectUriProperty(true), { seed: SEED, numRuns: RUNS.loopbackRedirect })
  })

  it(`reads the Authorization header exactly, or refuses it with 400 invalid_request (${RUNS.authorization} headers)`, () => {
    fc.assert(authorizationProperty(), { seed: SEED, numRuns: RUNS.authorization })
  })

  it(`names the app token the host would see, or refuses two with 403 (${RUNS.appToken} requests)`, () => {
    fc.assert(appTokenProperty(), { seed: SEED, numRuns: RUNS.appToken })
  })
})

describe.skipIf(!postgres)('hostile input, generated, on PostgreSQL (fast-check, fixed seed)', () => {
  const schema = freshSchema('fuzz')
  let pool: pg.Pool
  let world: StoreWorld

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 })
    const store = new PostgresStore({ pool, schema, sweepIntervalMs: 0 })
    await store.migrate()
    world = await createStoreWorld(store)
  })

  afterAll(async () => {
    await world?.gate.close()
    await pool?.end()
    await dropSchema(schema)
  })

  it(`refuses ${RUNS.unstorable} requests with a NUL, an unpaired surrogate or an over-long value in one field at the edge: no storeError, no 503`, async () => {
    await fc.assert(unstorableProperty(world), { seed: SEED, numRuns: RUNS.unstorable })
  }, 180_000)
})
