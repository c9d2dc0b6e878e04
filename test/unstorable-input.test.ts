/**
 * Input no store can hold (U+0000, which PostgreSQL refuses in text; unpaired surrogates,
 * which UTF-8 cannot carry; strings over the documented lengths) is refused at the edge
 * with a 400, before any store call, in every field a client fills in; and a store error
 * about the data of one call (PostgreSQL SQLSTATE classes 22 and 23, a Redis script error)
 * is never counted as the store being down. Run on the real PostgreSQL, where a NUL used
 * to flip the store to "down" for everyone.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGate, MemoryStore, StoreDataError, StoreError, type Gate, type GateOutcome, type GateRequest, type GateStore } from '../src/index.js'
import { Redis } from 'ioredis'
import { PostgresStore } from '../src/store/postgres/store.js'
import { RedisStore } from '../src/store/redis/store.js'
import { deletePrefix, randomPrefix, REDIS_URL, sharedRedisAvailable } from './redis/servers.js'
import { DATABASE_URL, dropSchema, freshSchema, postgresAvailable } from './support/postgres.js'
import { coreRequest } from './support/requests.js'

const available = await postgresAvailable()
const redisAvailable = await sharedRedisAvailable('unstorable input')

const CSRF = 'unstorableCsrfToken_0123456789abcdefghijklm'
const PASSWORD = 'correct horse battery staple'
const SCRYPT = { logN: 10, blockSize: 8, parallelization: 1 }

function respond(outcome: GateOutcome) {
  if (outcome.type !== 'respond') throw new Error('expected the gate to answer, it let the request through')
  return outcome.response
}

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
}

/** A request with a body, as the node adapter hands it over. */
function withBody(request: Partial<GateRequest>, type: string, text: string): GateRequest {
  return coreRequest({ ...request, headers: { 'content-type': type, ...request.headers }, readBody: () => Promise.resolve({ kind: 'raw', bytes: Buffer.from(text, 'utf8') }) })
}

/** A form body, encoded as a browser encodes it (a lone surrogate cannot be: `\ufffd` goes instead). */
function form(fields: Record<string, string>): string {
  return new URLSearchParams(fields).toString()
}

interface Setup {
  readonly gate: Gate
  readonly events: Array<[string, unknown]>
  readonly appToken: string
  readonly clientSecret: string
  readonly userId: string
}

async function setUp(store: GateStore): Promise<Setup> {
  const gate = createGate({ store, throttle: { onStoreError: 'fail-closed' }, basic: { scrypt: SCRYPT }, storeTimeoutMs: 2000 })
  const events: Array<[string, unknown]> = []
  for (const name of ['storeError', 'storeRecovered', 'internalError'] as const) gate.on(name, (payload: unknown) => events.push([name, payload]))
  const app = await gate.applications.register({ name: 'Transit', callbackPrefix: 'https://app.example/cb' })
  const user = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada', email: 'ada@example.org' })
  return { gate, events, appToken: app.appToken, clientSecret: app.secretToken, userId: user.id }
}

function authorizeUrl(appToken: string, extra = ''): string {
  return `/oauth/authorize?client_id=${appToken}&response_type=code&redirect_uri=${encodeURIComponent('https://app.example/cb')}${extra}`
}

/** The behaviour every store must show; on PostgreSQL it used to be an outage. */
function describeEdge(label: string, makeStore: () => GateStore | Promise<GateStore>) {
  describe(`refusing input no store can hold (${label})`, () => {
    let s: Setup
    beforeAll(async () => {
      s = await setUp(await makeStore())
    })
    // The PostgreSQL store holds a pool client for its change feed until it is closed.
    afterAll(async () => {
      await s?.gate.close()
    })

    /** Ada's own request, which must keep working whatever anyone else sent. */
    async function adaStillServed(): Promise<void> {
      const response = respond(await s.gate.handle(coreRequest({ url: '/api/users/current.json', headers: { authorization: basic('ada', PASSWORD), 'x-app-token': s.appToken } })))
      expect(response.status).toBe(200)
      expect(s.events.filter(([name]) => name !== 'storeRecovered')).toEqual([])
    }

    it('refuses a sign-in form whose username holds a NUL with 400, and counts no outage', async () => {
      for (const username of ['a\u0000da', '\u0000', `ada${'\u0000'.repeat(50)}`]) {
        const body = form({ csrf_token: CSRF, action: 'login', username, password: PASSWORD })
        const request = withBody({ method: 'POST', url: authorizeUrl(s.appToken), headers: { cookie: `__Host-odg-csrf=${CSRF}` } }, 'application/x-www-form-urlencoded', body)
        const response = respond(await s.gate.handle(request))
        expect(response.status, username).toBe(400)
        expect(response.body).toContain('U+0000')
      }
      await adaStillServed()
    })

    it('refuses a connected-apps page form with a NUL in any field with 400', async () => {
      for (const fields of [
        { csrf_token: CSRF, action: 'login', username: 'ada\u0000', password: PASSWORD },
        { csrf_token: CSRF, action: 'login', username: 'ada', password: `${PASSWORD}\u0000` },
        { csrf_token: CSRF, action: 'revoke', app_token: `${s.appToken}\u0000` },
      ]) {
        const request = withBody({ method: 'POST', url: '/oauth/grants', headers: { cookie: `__Host-odg-csrf=${CSRF}` } }, 'application/x-www-form-urlencoded', form(fields))
        expect(respond(await s.gate.handle(request)).status, JSON.stringify(fields)).toBe(400)
      }
      await adaStillServed()
    })

    it('refuses nameSearch and seek holding a NUL, or longer than any key name, with 400 invalid_request', async () => {
      for (const query of ['nameSearch=%00', 'nameSearch=a%00b', 'seek=%00', `nameSearch=${'x'.repeat(201)}`, `seek=${'x'.repeat(201)}`]) {
        const request = coreRequest({ url: `/api/api_keys?${query}`, headers: { authorization: basic('ada', PASSWORD), 'x-app-token': s.appToken } })
        const response = respond(await s.gate.handle(request))
        expect(response.status, query).toBe(400)
        expect(response.headers['x-error-code']).toBe('invalid_request')
      }
      await adaStillServed()
    })

    it('refuses a keyName holding a NUL or an unpaired surrogate with 400 invalid_request, and creates no key', async () => {
      for (const body of ['{"keyName":"etl\\u0000"}', '{"keyName":"\\ud800etl"}', '{"keyName":"etl\\udfff"}', form({ keyName: 'etl\u0000' })]) {
        const type = body.startsWith('{') ? 'application/json' : 'application/x-www-form-urlencoded'
        const request = withBody({ method: 'POST', url: '/api/api_keys', headers: { authorization: basic('ada', PASSWORD), 'x-app-token': s.appToken } }, type, body)
        const response = respond(await s.gate.handle(request))
        expect(response.status, body).toBe(400)
        expect(response.headers['x-error-code']).toBe('invalid_request')
      }
      expect(await s.gate.apiKeys.list(s.userId)).toEqual([])
      await adaStillServed()
    })

    it('refuses OAuth parameters holding a NUL or an unpaired surrogate with 400 invalid_request at the token and revocation endpoints', async () => {
      const fields = { grant_type: 'authorization_code', code: 'someCode0123456789abcdefghijklmnop', redirect_uri: 'https://app.example/cb', client_id: s.appToken, client_secret: s.clientSecret, code_verifier: 'v'.repeat(43) }
      for (const name of Object.keys(fields)) {
        for (const bad of ['\\u0000', '\\ud800']) {
          const json = JSON.stringify(fields).replace(`"${name}":"`, `"${name}":"${bad}`).replace(/\\\\/g, '\\')
          const request = withBody({ method: 'POST', url: '/oauth/access_token' }, 'application/json', json)
          const response = respond(await s.gate.handle(request))
          expect(response.status, `${name} ${bad}`).toBe(400)
          expect(JSON.parse(response.body)).toMatchObject({ error: 'invalid_request' })
        }
      }
      const revoke = withBody({ method: 'POST', url: '/oauth/revoke' }, 'application/json', JSON.stringify({ token: 'tok\u0000en', client_id: s.appToken, client_secret: s.clientSecret }))
      expect(respond(await s.gate.handle(revoke)).status).toBe(400)
      await adaStillServed()
    })

    it('refuses a state holding a NUL at the authorize endpoint, on a page, without a redirect', async () => {
      const sessionless = coreRequest({ url: authorizeUrl(s.appToken, '&state=a%00b'), headers: {} })
      const response = respond(await s.gate.handle(sessionless))
      expect(response.status).toBe(400)
      expect(response.headers.location).toBeUndefined()
      await adaStillServed()
    })

    it('refuses, in the management API, names, emails and passwords no store can hold, with a TypeError and no store call', async () => {
      const bad = ['x\u0000y', 'x\ud800y']
      for (const value of bad) {
        await expect(s.gate.users.create({ username: 'grace', password: PASSWORD, displayName: value, email: 'g@example.org' })).rejects.toThrow(TypeError)
        await expect(s.gate.users.create({ username: 'grace', password: PASSWORD, displayName: 'G', email: `g${value}@example.org` })).rejects.toThrow(TypeError)
        await expect(s.gate.users.create({ username: `gr${value}`, password: PASSWORD, displayName: 'G', email: 'g@example.org' })).rejects.toThrow(TypeError)
        await expect(s.gate.users.create({ username: 'grace', password: PASSWORD, displayName: 'G', email: 'g@example.org', rights: [value] })).rejects.toThrow(TypeError)
        await expect(s.gate.users.update(s.userId, { screenName: value })).rejects.toThrow(TypeError)
        await expect(s.gate.applications.register({ name: value })).rejects.toThrow(TypeError)
        await expect(s.gate.applications.update(s.appToken, { name: value })).rejects.toThrow(TypeError)
        await expect(s.gate.apiKeys.create(s.userId, { name: value })).rejects.toThrow(TypeError)
      }
      expect(await s.gate.users.findByUsername('grace')).toBeUndefined()
      await adaStillServed()
    })

    it('answers lookups of ids no store can hold with StoreDataError, never an outage', async () => {
      for (const call of [() => s.gate.users.find('ab\u0000c'), () => s.gate.users.findByUsername('ada\u0000'), () => s.gate.apiKeys.find('\u0000'), () => s.gate.applications.find('app\u0000')]) {
        await expect(call()).rejects.toThrow(StoreDataError)
      }
      await adaStillServed()
    })
  })
}

describeEdge('MemoryStore', () => new MemoryStore())

describe.skipIf(!available)('PostgresStore', () => {
  const schema = freshSchema('unstorable')
  let pool: pg.Pool

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: DATABASE_URL, max: 8 })
    await new PostgresStore({ pool, schema, sweepIntervalMs: 0 }).migrate()
  })

  afterAll(async () => {
    await pool?.end()
    await dropSchema(schema)
  })

  describeEdge('PostgresStore', () => new PostgresStore({ pool, schema, sweepIntervalMs: 0 }))

  describe('a statement the data makes fail', () => {
    it('does not emit storeError nor answer 503 to another user when PostgreSQL refuses a value (SQLSTATE class 22)', async () => {
      const own = freshSchema('unstorable_b')
      const store = new PostgresStore({ pool, schema: own, sweepIntervalMs: 0 })
      await store.migrate()
      const s = await setUp(store)
      const failures: unknown[] = []
      const answers: number[] = []
      // 20 writes of a time no bigint holds (SQLSTATE 22003 / 22P02), interleaved with Ada's requests.
      await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const record = { keyId: `abcdefghijklmnopqrstuv${String(i).padStart(3, '0')}`, userId: s.userId, name: `etl ${i}`, secretHash: 'f'.repeat(64), createdAt: 1e300, lastUsedAt: null, revokedAt: null }
          await Promise.resolve(s.gate.store.insertApiKey(record)).catch((error: unknown) => failures.push(error))
          const response = respond(await s.gate.handle(coreRequest({ url: '/api/users/current.json', headers: { authorization: basic('ada', PASSWORD), 'x-app-token': s.appToken } })))
          answers.push(response.status)
        }),
      )
      expect(failures).toHaveLength(20)
      for (const failure of failures) {
        expect(failure).toBeInstanceOf(StoreDataError)
        expect(failure).not.toBeInstanceOf(StoreError)
        expect((failure as StoreDataError).operation).toBe('insertApiKey')
        expect(((failure as StoreDataError).cause as { code?: string }).code).toMatch(/^22/)
      }
      expect(answers).toEqual(Array.from({ length: 20 }, () => 200))
      expect(s.events).toEqual([])
      await s.gate.close()
      await dropSchema(own)
    })

    it('refuses a string argument holding a NUL before PostgreSQL sees it, as StoreDataError, with no outage', async () => {
      const own = freshSchema('unstorable_c')
      const store = new PostgresStore({ pool, schema: own, sweepIntervalMs: 0 })
      await store.migrate()
      const s = await setUp(store)
      const record = { keyId: 'abcdefghijklmnopqrstuvwxy', userId: s.userId, name: 'etl\u0000', secretHash: 'f'.repeat(64), createdAt: Date.now(), lastUsedAt: null, revokedAt: null }
      await expect(Promise.resolve().then(() => s.gate.store.insertApiKey(record))).rejects.toThrow(StoreDataError)
      await expect(Promise.resolve().then(() => s.gate.store.getUserByUsername('a\u0000'))).rejects.toThrow(/U\+0000/)
      expect(s.events).toEqual([])
      await s.gate.close()
      await dropSchema(own)
    })
  })
})

describe.skipIf(!redisAvailable)('RedisStore', () => {
  const prefix = randomPrefix('unstorable')
  afterAll(async () => {
    const client = new Redis(REDIS_URL)
    await deletePrefix(client, prefix)
    client.disconnect()
  })

  it('does not emit storeError nor refuse another user when a Redis script fails on its arguments', async () => {
    const s = await setUp(new RedisStore({ url: REDIS_URL, prefix }))
    // NaN reaches the rate script as "NaN", which Lua's tonumber cannot read: the script fails.
    for (let i = 0; i < 5; i++) {
      await expect(Promise.resolve().then(() => s.gate.store.consumeRate('unstorable-test', Number.NaN, 60_000, 1))).rejects.toThrow(StoreDataError)
      const response = respond(await s.gate.handle(coreRequest({ url: '/api/users/current.json', headers: { authorization: basic('ada', PASSWORD), 'x-app-token': s.appToken } })))
      expect(response.status).toBe(200)
    }
    expect(s.events).toEqual([])
    await s.gate.close()
  })
})
