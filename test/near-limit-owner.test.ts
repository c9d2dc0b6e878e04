/**
 * What an application's owner sees of its limits (`gate.applications.nearLimit`, the
 * `nearLimit` field of `GET /api/applications`): a limit appears once the application's use
 * reaches 80% of it, not before, with the threshold, the window and when the gate reported
 * it; only its owner sees it. Through the node:http adapter on a real TLS server, on the
 * in-memory store, the real Redis and the real PostgreSQL.
 */
import { Redis } from 'ioredis'
import pg from 'pg'
import request from 'supertest'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { nodeGate } from '../adapters/node.js'
import { createGate, MemoryStore, type Gate, type GateOptions, type GateStore, type NearLimitEvent } from '../src/index.js'
import { PostgresStore } from '../src/store/postgres/store.js'
import { RedisStore } from '../src/store/redis/store.js'
import { listen, TEST_CERT, type RunningServer } from './adapters/servers.js'
import { deletePrefix, randomPrefix, REDIS_URL, sharedRedisAvailable } from './redis/servers.js'
import { DATABASE_URL, dropSchema, freshSchema, postgresAvailable } from './support/postgres.js'

const HOUR = 3_600_000
const PASSWORD = 'correct horse battery'
const basic = (user: string) => `Basic ${Buffer.from(`${user}:${PASSWORD}`).toString('base64')}`

interface NearLimitJson {
  name: string
  threshold: number
  limit: number
  remaining: number
  windowMs: number
  period: { start: string; end: string } | null
  shadow: boolean
  since: string | null
}

const running: RunningServer[] = []
const gates: Gate[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.close()))
  await Promise.all(gates.splice(0).map((gate) => gate.close()))
})

/** A gate behind node:http over TLS, with Ada's application and Bob's. */
async function portal(store: GateStore, options: GateOptions = {}) {
  const gate = createGate({
    store,
    logger: false,
    basic: { scrypt: { logN: 10 } },
    usage: { flushIntervalMs: HOUR },
    throttle: { application: [{ name: 'hour', limit: 10, windowMs: HOUR }, { name: 'day', limit: 1000, period: 'day' }] },
    ...options,
  })
  gates.push(gate)
  const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada', email: 'ada@example.org' })
  const bob = await gate.users.create({ username: 'bob', password: PASSWORD, displayName: 'Bob', email: 'bob@example.org' })
  const mine = await gate.applications.registerOwn({ ownerId: ada.id, name: 'Transit' })
  const bobs = await gate.applications.registerOwn({ ownerId: bob.id, name: 'Weather' })
  const server = await listen(nodeGate(gate, (_req, res) => res.end('[]')), true)
  running.push(server)
  const alerts: NearLimitEvent[] = []
  gate.on('nearLimit', (event) => alerts.push(event))
  /** One request of the application's to the data. */
  const use = async (times: number, appToken = mine.appToken) => {
    for (let i = 0; i < times; i++) await request(server.url).get('/resource/abcd-1234.json').ca(TEST_CERT).set('x-app-token', appToken).expect(200)
  }
  const get = (path: string, as = 'ada') => request(server.url).get(path).ca(TEST_CERT).set('authorization', basic(as))
  /** Ada's application as `GET /api/applications` lists it. */
  const listed = async (as = 'ada') => {
    const response = await get('/api/applications', as).expect(200)
    return response.body as Array<{ appToken: string; nearLimit: NearLimitJson[] | null }>
  }
  const waitForAlert = async (threshold: number) => {
    const deadline = Date.now() + 5000
    while (!alerts.some((alert) => alert.threshold === threshold) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return { gate, mine, bobs, use, get, listed, waitForAlert }
}

function nearLimitShownToItsOwner(name: string, makeStore: () => GateStore | Promise<GateStore>) {
  it(`shows its owner the limit it is near once 80% of it is used, not before, and only to its owner (${name})`, async () => {
    const { mine, bobs, use, get, listed, waitForAlert } = await portal(await makeStore())
    await use(7)
    expect((await listed()).map((app) => app.nearLimit)).toEqual([[]])

    const before = Date.now()
    await use(1)
    await waitForAlert(0.8)
    const [shown] = await listed()
    expect(shown?.appToken).toBe(mine.appToken)
    expect(shown?.nearLimit).toEqual([{ name: 'hour', threshold: 0.8, limit: 10, remaining: 2, windowMs: HOUR, period: null, shadow: false, since: expect.any(String) }])
    const since = Date.parse(shown?.nearLimit?.[0]?.since ?? '')
    expect(since).toBeGreaterThanOrEqual(before - 1000)
    expect(since).toBeLessThanOrEqual(Date.now() + 1000)
    // The per-application resource shows the same, and the next threshold once crossed.
    await use(1)
    await waitForAlert(0.9)
    const one = (await get(`/api/applications/${mine.appToken}`).expect(200)).body as { nearLimit: NearLimitJson[] }
    expect(one.nearLimit).toMatchObject([{ name: 'hour', threshold: 0.9, remaining: 1 }])

    // Bob sees his own application, near nothing, and not Ada's, not even that it exists.
    expect(await listed('bob')).toEqual([expect.objectContaining({ appToken: bobs.appToken, nearLimit: [] })])
    const refused = await get(`/api/applications/${mine.appToken}`, 'bob').expect(404)
    expect(refused.text).not.toContain('nearLimit')
    expect(refused.text).not.toContain('hour')
  })
}

describe("the owner's view of an application near its limit", () => {
  nearLimitShownToItsOwner('in memory', () => new MemoryStore())

  it('shows a shadow quota it is near, with its period, and no report time (only enforced limits are reported)', async () => {
    const { mine, use, listed } = await portal(new MemoryStore(), {
      throttle: { application: [{ name: 'hour', limit: 100, windowMs: HOUR }, { name: 'daily', limit: 5, period: 'day', shadow: true }] },
    })
    await use(3)
    expect((await listed())[0]?.nearLimit).toEqual([])
    await use(2)
    const [shown] = await listed()
    const day = new Date()
    day.setUTCHours(0, 0, 0, 0)
    expect(shown?.nearLimit).toEqual([
      { name: 'daily', threshold: 1, limit: 5, remaining: 0, windowMs: 86_400_000, period: { start: day.toISOString(), end: new Date(day.getTime() + 86_400_000).toISOString() }, shadow: true, since: null },
    ])
    expect(shown?.appToken).toBe(mine.appToken)
  })

  it('reads a single limit, the application’s own one included', async () => {
    const store = new MemoryStore()
    const { gate, mine, use, listed } = await portal(store, { throttle: { application: { limit: 100, windowMs: HOUR } } })
    await gate.applications.update(mine.appToken, { limit: 5 })
    await use(4)
    expect((await listed())[0]?.nearLimit).toMatchObject([{ name: 'app', threshold: 0.8, limit: 5, remaining: 1 }])
    expect(await gate.applications.nearLimit(mine.appToken)).toMatchObject([{ name: 'app', threshold: 0.8, limit: 5, remaining: 1, period: null }])
  })

  it('is null with nearLimit: false, and while the rate store fails', async () => {
    const off = await portal(new MemoryStore(), { nearLimit: false })
    await off.use(9)
    expect((await off.listed())[0]?.nearLimit).toBeNull()

    let down = false
    class FailingRates extends MemoryStore {
      override consumeLimits(...args: Parameters<MemoryStore['consumeLimits']>) {
        if (down) throw new Error('rate store down')
        return super.consumeLimits(...args)
      }
    }
    const failing = await portal(new MemoryStore(), { rateStore: new FailingRates() })
    await failing.use(9)
    down = true
    expect((await failing.listed())[0]?.nearLimit).toBeNull()
  })

  it('throws NotFoundError from gate.applications.nearLimit for an unknown app token', async () => {
    const { gate } = await portal(new MemoryStore())
    await expect(gate.applications.nearLimit('nosuchapplication00000000')).rejects.toMatchObject({ code: 'not_found' })
  })
})

describe.runIf(await sharedRedisAvailable("the owner's view on Redis"))("the owner's view of an application near its limit, on Redis", () => {
  const prefix = randomPrefix('near-owner')
  afterAll(async () => {
    const admin = new Redis(REDIS_URL)
    await deletePrefix(admin, prefix)
    admin.disconnect()
  })
  nearLimitShownToItsOwner('Redis', () => new RedisStore({ url: REDIS_URL, prefix }))
})

describe.runIf(await postgresAvailable())("the owner's view of an application near its limit, on PostgreSQL", () => {
  const schema = freshSchema('near_owner')
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 })
  afterAll(async () => {
    await pool.end()
    await dropSchema(schema)
  })
  nearLimitShownToItsOwner('PostgreSQL', async () => {
    const store = new PostgresStore({ pool, schema, sweepIntervalMs: 0 })
    await store.migrate()
    return store
  })
})
