/**
 * Plans of several limits (docs/guides/plans.md): decided all or nothing, named in the
 * `RateLimit-Policy` and `RateLimit` headers, a 429 naming the limits that refused, calendar
 * quotas, limits per address, shadow limits counted in usage, assigned per application; on
 * the in-memory store and on the real Redis (one script for all the limits).
 */
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { createGate, MemoryStore, type Gate, type GateOptions, type GateOutcome, type GateStore } from '../src/index.js'
import { RedisStore } from '../src/store/redis/store.js'
import { deletePrefix, randomPrefix, REDIS_URL, sharedRedisAvailable } from './redis/servers.js'
import { coreRequest } from './support/requests.js'

const MINUTE = 60_000
const HOUR = 3_600_000

function answer(outcome: GateOutcome): { status: number; headers: Record<string, string>; body: unknown } {
  if (outcome.type === 'next') return { status: 200, headers: outcome.headers as Record<string, string>, body: null }
  const { status, headers, body } = outcome.response
  return { status, headers: headers as Record<string, string>, body: body === '' ? null : JSON.parse(body) }
}

async function gateWith(options: GateOptions, store: GateStore = new MemoryStore()): Promise<{ gate: Gate; appToken: string; send: (ip?: string, headers?: Record<string, string>) => Promise<ReturnType<typeof answer>> }> {
  const gate = createGate({ store, logger: false, usage: { flushIntervalMs: HOUR }, nearLimit: false, ...options })
  const { appToken } = await gate.applications.register({ name: 'busy' })
  const send = async (ip = '203.0.113.5', headers: Record<string, string> = {}) => answer(await gate.handle(coreRequest({ headers: { 'x-app-token': appToken, ...headers }, peerAddress: ip })))
  return { gate, appToken, send }
}

const TWO_LIMITS = [
  { name: 'minute', limit: 3, windowMs: MINUTE },
  { name: 'hour', limit: 5, windowMs: HOUR },
]

describe('plans of several limits', () => {
  it('names every limit in RateLimit-Policy, and the one closest to refusing in RateLimit', async () => {
    const { gate, send } = await gateWith({ throttle: { application: TWO_LIMITS } })
    const first = await send()
    expect(first.status).toBe(200)
    expect(first.headers['ratelimit-policy']).toBe('"minute";q=3;w=60, "hour";q=5;w=3600')
    expect(first.headers.ratelimit).toMatch(/^"minute";r=2;t=\d+$/)
    await gate.close()
  })

  it('refuses with the limits that refused in the body, and spends none of the others', async () => {
    const { gate, send } = await gateWith({ throttle: { application: [{ name: 'minute', limit: 2, windowMs: MINUTE }, { name: 'hour', limit: 100, windowMs: HOUR }] } })
    expect((await send()).status).toBe(200)
    expect((await send()).status).toBe(200)
    const refused = await send()
    expect(refused.status).toBe(429)
    expect(refused.body).toMatchObject({ code: 'too_many_requests', data: { policies: [{ name: 'minute', limit: 2, windowSeconds: 60 }] } })
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
    expect(refused.headers.ratelimit).toMatch(/^"minute";r=0;t=\d+$/)
    for (let i = 0; i < 5; i++) expect((await send()).status).toBe(429)
    // The refused requests spent nothing of the hour: 2 of 100 are used.
    const { results } = await readLimits(gate, [{ kind: 'rate', key: '', limit: 100, windowMs: HOUR, cost: 0 }], 'hour')
    expect(results[0]?.remaining).toBe(98)
    await gate.close()
  })

  it('puts an application on a named plan, which its next request is decided by', async () => {
    const { gate, appToken, send } = await gateWith({ throttle: { application: { limit: 1000, windowMs: HOUR }, plans: { partner: TWO_LIMITS } } })
    expect((await send()).headers['ratelimit-policy']).toBe('"app";q=1000;w=3600')
    await gate.applications.update(appToken, { plan: 'partner' })
    expect((await send()).headers['ratelimit-policy']).toBe('"minute";q=3;w=60, "hour";q=5;w=3600')
    await expect(gate.applications.update(appToken, { plan: 'gold' })).rejects.toThrow(/partner/)
    await gate.close()
  })

  it('keeps a calendar quota until the period ends, in its time zone', async () => {
    const { gate, send } = await gateWith({ throttle: { application: [{ name: 'day', limit: 2, period: 'day', timeZone: 'America/New_York' }] } })
    expect((await send()).headers['ratelimit-policy']).toMatch(/^"day";q=2;w=(82800|86400|90000)$/)
    await send()
    const refused = await send()
    expect(refused.status).toBe(429)
    // Retry-After: the next local midnight in New York, at most a day (25 hours on a DST day) away.
    const wait = Number(refused.headers['retry-after'])
    expect(wait).toBeGreaterThan(0)
    expect(wait).toBeLessThanOrEqual(90_000)
    const midnight = new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York', hour: 'numeric', minute: 'numeric', hourCycle: 'h23' }).format(new Date(Date.now() + wait * 1000))
    expect(['00:00', '00:01']).toContain(midnight)
    await gate.close()
  })

  it('counts a limit per address apart for each client address of one application', async () => {
    const { gate, send } = await gateWith({ throttle: { application: [{ name: 'address', limit: 1, windowMs: HOUR, per: 'address' }, { name: 'hour', limit: 100, windowMs: HOUR }] } })
    expect((await send('203.0.113.5')).status).toBe(200)
    expect((await send('203.0.113.5')).status).toBe(429)
    expect((await send('198.51.100.7')).status).toBe(200)
    // IPv6 by the anonymous budget's prefix (/56 by default): one host's /64s are one address.
    expect((await send('2001:db8:0:1::1')).status).toBe(200)
    expect((await send('2001:db8:0:2::1')).status).toBe(429)
    await gate.close()
  })

  it('lets a shadow limit refuse nothing, counts what it would have refused in usage, and names it in no header', async () => {
    const { gate, appToken, send } = await gateWith({
      throttle: { application: [{ name: 'minute', limit: 100, windowMs: MINUTE }, { name: 'soon', limit: 2, windowMs: HOUR, shadow: true, enforceFrom: Date.now() + 86_400_000 }] },
    })
    const answers = []
    for (let i = 0; i < 5; i++) answers.push(await send())
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200])
    expect(answers[0]?.headers['ratelimit-policy']).toBe('"minute";q=100;w=60')
    await gate.usage.flush()
    const { buckets } = await gate.usage.query({ appToken, granularity: 'minute', from: Date.now() - 600_000 })
    const shadow = buckets.reduce((n, bucket) => n + (bucket.shadow.soon ?? 0), 0)
    expect(shadow).toBe(3)
    expect(buckets.reduce((n, bucket) => n + bucket.requests, 0)).toBe(5)
    await gate.close()
  })

  it('enforces a shadow limit from its enforceFrom on', async () => {
    const { gate, send } = await gateWith({ throttle: { application: [{ name: 'minute', limit: 100, windowMs: MINUTE }, { name: 'now', limit: 1, windowMs: HOUR, shadow: true, enforceFrom: '2020-01-01T00:00:00Z' }] } })
    expect((await send()).status).toBe(200)
    expect((await send()).body).toMatchObject({ data: { policies: [{ name: 'now' }] } })
    await gate.close()
  })

  it('refuses at creation a plan of several limits over a store without consumeLimits, and bad limits by name', () => {
    const bare = new MemoryStore() as GateStore
    Object.assign(bare, { consumeLimits: undefined })
    expect(() => createGate({ store: bare, throttle: { application: TWO_LIMITS } })).toThrow(/has several limits .* consumeLimits/)
    expect(() => createGate({ throttle: { application: [{ limit: 1, windowMs: 1000 }, { name: 'b', limit: 1, windowMs: 1000 }] } })).toThrow(/throttle\.application\[0\]\.name is needed/)
    expect(() => createGate({ throttle: { application: [{ name: 'a', limit: 1 }] } })).toThrow(/needs either windowMs .* or period/)
    expect(() => createGate({ throttle: { application: [{ name: 'a', limit: 1, period: 'day', timeZone: 'Mars/Olympus' }] } })).toThrow(/IANA time zone/)
    expect(() => createGate({ throttle: { plans: { default: TWO_LIMITS } } })).toThrow(/not 'default'/)
  })
})

/** A limit's state read with cost 0 through the gate's own store (the app's `{app:…}:name` key). */
async function readLimits(gate: Gate, steps: Array<{ kind: 'rate'; key: string; limit: number; windowMs: number; cost: number }>, name: string) {
  const store = gate.store as GateStore & { consumeLimits: NonNullable<GateStore['consumeLimits']> }
  const [application] = await gate.applications.list()
  const key = `{app:${application?.appToken ?? ''}}:${name}`
  return { results: await store.consumeLimits(steps.map((step) => ({ ...step, key }))) }
}

describe.runIf(await sharedRedisAvailable('plans on Redis'))('plans of several limits on Redis', () => {
  const prefix = randomPrefix('plans')
  const admin = new Redis(REDIS_URL)
  afterAll(async () => {
    await deletePrefix(admin, prefix)
    admin.disconnect()
  })

  it('decides three limits all or nothing for two gates sharing Redis', async () => {
    const stores = [new RedisStore({ url: REDIS_URL, prefix }), new RedisStore({ url: REDIS_URL, prefix })]
    const options: GateOptions = { throttle: { application: [{ name: 'burst', limit: 4, windowMs: MINUTE }, { name: 'hour', limit: 50, windowMs: HOUR }, { name: 'day', limit: 1000, period: 'day' }] } }
    const a = await gateWith(options, stores[0])
    const b = createGate({ store: stores[1] as GateStore, logger: false, usage: false, nearLimit: false, ...options })
    try {
      const sendB = async () => answer(await b.handle(coreRequest({ headers: { 'x-app-token': a.appToken } })))
      const statuses = []
      for (let i = 0; i < 8; i++) statuses.push((i % 2 === 0 ? await a.send() : await sendB()).status)
      expect(statuses).toEqual([200, 200, 200, 200, 429, 429, 429, 429])
      const refused = await a.send()
      expect(refused.body).toMatchObject({ data: { policies: [{ name: 'burst' }] } })
      // The refused requests spent none of the hour and none of the day: 4 used of each.
      const key = (name: string) => `{app:${a.appToken}}:${name}`
      const [hour] = await (stores[0] as RedisStore & { consumeLimits: NonNullable<GateStore['consumeLimits']> }).consumeLimits([{ kind: 'rate', key: key('hour'), limit: 50, windowMs: HOUR, cost: 0 }])
      expect(hour?.remaining).toBe(46)
    } finally {
      await a.gate.close()
      await b.close()
      for (const store of stores) await store.close()
    }
  })

})
