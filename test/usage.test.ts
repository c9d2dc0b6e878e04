/**
 * Usage counting through the gate: what is counted against whom, reading it back, and what
 * happens to counts when the store fails (kept, retried, never counted twice, dropped
 * oldest first past the bound).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createGate, MemoryStore, StoreError, type Gate, type GateOptions, type GateStore } from '../src/index.js'
import type { UsageDroppedEvent, UsageFlushFailedEvent } from '../src/usage/events.js'
import type { UsageBatch } from '../src/store/usage-contract.js'
import { FRAMEWORKS } from './adapters/frameworks.js'
import { listen } from './adapters/servers.js'
import { coreRequest } from './support/requests.js'
import { captureWarnings } from './support/warnings.js'

const HOUR = 3_600_000
const gates: Gate[] = []
afterEach(async () => {
  await Promise.all(gates.splice(0).map((gate) => gate.close()))
})

function gateWith(options: GateOptions = {}): Gate {
  const gate = createGate(options)
  gates.push(gate)
  return gate
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

/** The totals of an application's (or the pool's) minute buckets of the last hour. */
async function totals(gate: Gate, appToken: string | null) {
  await gate.usage.flush()
  const { buckets } = await gate.usage.query({ appToken, from: Date.now() - HOUR, to: Date.now() + 60_000, granularity: 'minute' })
  const sum = { requests: 0, throttled: 0, refused: 0, unknownAppToken: 0, statuses: { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 } }
  for (const b of buckets) {
    sum.requests += b.requests
    sum.throttled += b.throttled
    sum.refused += b.refused
    sum.unknownAppToken += b.unknownAppToken
    for (const k of ['2xx', '3xx', '4xx', '5xx'] as const) sum.statuses[k] += b.statuses[k]
  }
  return sum
}

/** A MemoryStore whose addUsage misbehaves as `fail` says, call by call. */
function flakyUsageStore(fail: (call: number) => 'ok' | 'lost-answer' | 'down') {
  const store = new MemoryStore()
  let call = 0
  const batches: UsageBatch[] = []
  const addUsage = store.addUsage.bind(store)
  store.addUsage = (batch: UsageBatch) => {
    batches.push(batch)
    const mode = fail(++call)
    if (mode === 'down') throw new Error('connection refused')
    addUsage(batch)
    if (mode === 'lost-answer') throw new Error('the answer was lost')
  }
  return { store, batches }
}

describe('what the gate counts', () => {
  it('counts requests, 429s and other refusals per application, and the anonymous pool apart', async () => {
    const gate = gateWith({ throttle: { application: { limit: 3, windowMs: HOUR }, anonymous: { limit: 100, windowMs: HOUR } }, basic: { scrypt: { logN: 10 } } })
    const { appToken } = await gate.applications.register({ name: 'counted' })
    for (let i = 0; i < 5; i++) await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    // Credentials over plain http: refused 403 before the throttle, counted as a refusal.
    const other = await gate.applications.register({ name: 'refused' })
    await gate.handle(coreRequest({ tls: false, headers: { 'x-app-token': other.appToken, authorization: basic('ada', 'x') } }))
    await gate.handle(coreRequest({ headers: { authorization: basic('ada', 'wrong') } }))
    for (let i = 0; i < 2; i++) await gate.handle(coreRequest())
    expect(await totals(gate, appToken)).toMatchObject({ requests: 5, throttled: 2, refused: 0 })
    expect(await totals(gate, other.appToken)).toMatchObject({ requests: 1, throttled: 0, refused: 1 })
    // No app token: the anonymous pool (an unknown user with Basic is refused 403 app_token_required).
    expect(await totals(gate, null)).toMatchObject({ requests: 3, throttled: 0, refused: 1, unknownAppToken: 0 })
  })

  it('counts a request with an app token nobody registered once, under unknownAppToken, and keeps nothing for the token', async () => {
    const store = new MemoryStore()
    const gate = gateWith({ store })
    for (const token of ['made-up-1', 'made-up-2', 'not a token!']) {
      const outcome = await gate.handle(coreRequest({ headers: { 'x-app-token': token } }))
      expect(outcome).toMatchObject({ type: 'respond', response: { status: 403 } })
    }
    expect(await totals(gate, null)).toMatchObject({ requests: 0, unknownAppToken: 3 })
    expect((await gate.usage.query({ appToken: 'made-up-1', granularity: 'minute', from: Date.now() - HOUR })).buckets.every((b) => b.requests === 0)).toBe(true)
    expect(await gate.usage.top({ from: Date.now() - HOUR })).toEqual([])
  })

  it('counts a throttled OAuth request without an app token against the application its token was issued to', async () => {
    const gate = gateWith({ throttle: { application: { limit: 1, windowMs: HOUR } } })
    const { appToken } = await gate.applications.register({ name: 'oauth client' })
    const user = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'ada@example.org' })
    const { accessToken } = await gate.tokens.issue({ userId: user.id, appToken })
    for (let i = 0; i < 3; i++) await gate.handle(coreRequest({ headers: { authorization: `OAuth ${accessToken}` } }))
    expect(await totals(gate, appToken)).toMatchObject({ requests: 3, throttled: 2 })
    expect(await totals(gate, null)).toMatchObject({ requests: 0 })
  })

  for (const framework of FRAMEWORKS) {
    it(`counts the host's answers by status class through ${framework.name}`, async () => {
      const gate = gateWith({ throttle: { application: { limit: 2, windowMs: HOUR } } })
      const { appToken } = await gate.applications.register({ name: 'statuses' })
      const server = await listen(framework.listener(gate))
      try {
        for (const path of ['/resource/abcd-1234.json', '/private/abcd-1234.json', '/nothing-here', '/resource/abcd-1234.json']) {
          const res = await fetch(`${server.url}${path}`, { headers: { 'x-app-token': appToken } })
          await res.arrayBuffer()
        }
      } finally {
        await server.close()
      }
      // The fourth is the gate's 429: counted as throttled, and not as a host answer.
      expect(await totals(gate, appToken)).toEqual({ requests: 4, throttled: 2, refused: 0, unknownAppToken: 0, statuses: { '2xx': 1, '3xx': 0, '4xx': 1, '5xx': 0 } })
    })
  }

  it("counts every request in exactly one of throttled, refused or its answer's status class, the gate's own answers included", async () => {
    let away = false
    const store = new MemoryStore()
    const getUser = store.getUserByUsername.bind(store)
    store.getUserByUsername = (username) => {
      if (away) throw new Error('connection refused')
      return getUser(username)
    }
    const gate = gateWith({ store, throttle: { application: { limit: 8, windowMs: HOUR } }, basic: { scrypt: { logN: 10 } } })
    const { appToken } = await gate.applications.register({ name: 'adds up' })
    await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'ada@example.org' })
    const headers = { 'x-app-token': appToken, authorization: basic('ada', 'correct horse battery') }
    const send = async (request: Partial<Parameters<typeof coreRequest>[0]>) => {
      const outcome = await gate.handle(coreRequest({ headers, ...request }))
      return outcome.type === 'respond' ? outcome.response.status : outcome
    }
    // Let through: the host answers, as an adapter tells the gate.
    for (const status of [200, 304, 404, 500]) {
      const outcome = await send({})
      if (typeof outcome === 'number') throw new Error(`expected the request let through, got ${outcome}`)
      gate.usage.responded(outcome.context, status)
    }
    // The gate's own endpoints answer under the app token: the current user, as JSON and XML.
    // (The self-service endpoints, /api/applications and the like, count in no application's usage.)
    expect(await send({ url: '/api/users/current.json' })).toBe(200)
    expect(await send({ url: '/users/current.xml' })).toBe(200)
    // The store away for a password check: 503.
    away = true
    expect(await send({ headers: { 'x-app-token': appToken, authorization: basic('grace', 'another password') } })).toBe(503)
    away = false
    // Refused before the throttle (credentials over http), then throttled past the limit.
    expect(await send({ tls: false })).toBe(403)
    const last = await send({})
    if (typeof last === 'number') throw new Error(`expected the eighth request let through, got ${last}`)
    gate.usage.responded(last.context, 200)
    expect(await send({})).toBe(429)
    const counted = await totals(gate, appToken)
    const classes = counted.throttled + counted.refused + Object.values(counted.statuses).reduce((n, v) => n + v, 0)
    expect(classes).toBe(counted.requests)
    expect(counted).toEqual({ requests: 10, throttled: 1, refused: 1, unknownAppToken: 0, statuses: { '2xx': 4, '3xx': 1, '4xx': 1, '5xx': 2 } })
  })

  it('counts nothing with usage: false, and says once when the store keeps no usage', async () => {
    const off = gateWith({ usage: false })
    expect(off.usage.counting).toBe(false)
    const { appToken } = await off.applications.register({ name: 'off' })
    await off.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    expect(await totals(off, appToken)).toMatchObject({ requests: 0 })

    const bare = new MemoryStore() as GateStore
    Object.assign(bare, { addUsage: undefined, getUsage: undefined, topUsage: undefined })
    const { result: gate, warnings } = await captureWarnings(() => gateWith({ store: bare }))
    expect(warnings.map((w) => w.code)).toEqual(['ODG_USAGE_UNSUPPORTED'])
    expect(gate.usage.counting).toBe(false)
    await gate.handle(coreRequest())
    expect((await gate.usage.query({ appToken: null })).buckets.every((b) => b.requests === 0)).toBe(true)
  })
})

describe('reading usage', () => {
  it('answers every bucket of the range, empty ones included, in hours, minutes or days', async () => {
    const gate = gateWith()
    const { appToken } = await gate.applications.register({ name: 'chart' })
    await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    await gate.usage.flush()
    const now = Date.now()
    const day = await gate.usage.query({ appToken, from: now - 24 * HOUR, to: now })
    expect(day.granularity).toBe('hour')
    expect(day.buckets.length).toBeGreaterThanOrEqual(24)
    expect(day.buckets.length).toBeLessThanOrEqual(25)
    expect(day.buckets.map((b) => b.start)).toEqual(day.buckets.map((_, i) => (day.buckets[0]?.start ?? 0) + i * HOUR))
    expect(day.buckets.reduce((n, b) => n + b.requests, 0)).toBe(1)
    expect(day.buckets.at(-1)?.requests).toBe(1)
    const days = await gate.usage.query({ appToken, from: now - 30 * 24 * HOUR, granularity: 'day' })
    expect(days.buckets.length).toBeGreaterThanOrEqual(30)
    expect(days.buckets.at(-1)?.requests).toBe(1)
  })

  it('refuses a query without an app token, with a bad range or granularity, or too many buckets', async () => {
    const gate = gateWith()
    await expect(gate.usage.query({} as never)).rejects.toThrow(TypeError)
    await expect(gate.usage.query({ appToken: null, from: 10, to: 5 })).rejects.toThrow(/from before to/)
    await expect(gate.usage.query({ appToken: null, granularity: 'week' as never })).rejects.toThrow(/granularity/)
    await expect(gate.usage.query({ appToken: null, from: 0, granularity: 'minute' })).rejects.toThrow(/at most 10000/)
    await expect(gate.usage.top({ limit: 0 })).rejects.toThrow(/limit/)
    await expect(gate.usage.top({ by: 'refused' as never })).rejects.toThrow(/by/)
    await expect(gate.usage.top({ from: 0, granularity: 'hour' })).rejects.toThrow(/more than 4000 hour buckets/)
    await expect(gate.usage.top({ from: Date.now() - 5 * 86_400_000, granularity: 'minute' })).rejects.toThrow(/more than 4000 minute buckets: narrow the range or rank by hour/)
    await expect(gate.usage.top({ granularity: 'week' as never })).rejects.toThrow(/granularity must be 'minute', 'hour' or 'day'/)
  })

  it('ranks the applications with the most requests, or 429s, each with its name', async () => {
    const gate = gateWith({ throttle: { application: { limit: 4, windowMs: HOUR } } })
    const apps = await Promise.all(['quiet', 'busy', 'medium'].map((name) => gate.applications.register({ name })))
    const send = async (appToken: string, n: number) => {
      for (let i = 0; i < n; i++) await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    }
    await send(apps[0]!.appToken, 1)
    await send(apps[1]!.appToken, 9)
    await send(apps[2]!.appToken, 3)
    await gate.handle(coreRequest())
    await gate.usage.flush()
    expect(await gate.usage.top({ limit: 2 })).toEqual([
      { appToken: apps[1]!.appToken, name: 'busy', requests: 9, throttled: 5 },
      { appToken: apps[2]!.appToken, name: 'medium', requests: 3, throttled: 0 },
    ])
    await gate.applications.delete(apps[1]!.appToken)
    expect(await gate.usage.top({ by: 'throttled' })).toEqual([{ appToken: apps[1]!.appToken, name: null, requests: 9, throttled: 5 }])
  })
})

describe('flushing', () => {
  it('writes one batch per interval by itself, and the rest on close', async () => {
    const { store, batches } = flakyUsageStore(() => 'ok')
    const gate = createGate({ store, usage: { flushIntervalMs: 50 } })
    const { appToken } = await gate.applications.register({ name: 'timed' })
    await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    const deadline = Date.now() + 10_000
    while (batches.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    expect(batches).toHaveLength(1)
    expect(batches[0]?.rows.map((r) => r.granularity).sort()).toEqual(['day', 'hour', 'minute'])
    await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    await gate.close()
    expect(store.getUsage(appToken, 'day', 0, Date.now() + HOUR).map((b) => b.requests)).toEqual([2])
  })

  it('keeps a batch whose write failed and sends it again, counted once even when the first write landed', async () => {
    const { store, batches } = flakyUsageStore((call) => (call === 1 ? 'lost-answer' : call === 2 ? 'down' : 'ok'))
    const gate = gateWith({ store })
    const failures: UsageFlushFailedEvent[] = []
    gate.on('usageFlushFailed', (event) => failures.push(event))
    const { appToken } = await gate.applications.register({ name: 'retried' })
    for (let i = 0; i < 3; i++) await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    await expect(gate.usage.flush()).rejects.toThrow(StoreError)
    await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    await expect(gate.usage.flush()).rejects.toThrow(StoreError)
    await gate.usage.flush()
    expect(failures).toHaveLength(1)
    expect(batches.map((b) => b.sequence)).toEqual([1, 1, 1, 2])
    expect(await totals(gate, appToken)).toMatchObject({ requests: 4 })
  })

  it('drops the oldest kept batches past maxPendingFlushes and says how many requests they held', async () => {
    const { store } = flakyUsageStore(() => 'down')
    const gate = gateWith({ store, usage: { maxPendingFlushes: 2 } })
    const dropped: UsageDroppedEvent[] = []
    gate.on('usageDropped', (event) => dropped.push(event))
    const { appToken } = await gate.applications.register({ name: 'lost' })
    for (const n of [3, 1, 1]) {
      for (let i = 0; i < n; i++) await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
      await gate.usage.flush().catch(() => {})
    }
    expect(dropped).toEqual([{ flushes: 1, requests: 3 }])
  })

  it('hands every batch written to onFlush, and turns a hook that throws into a warning', async () => {
    const seen: UsageBatch[] = []
    const gate = gateWith({ usage: { onFlush: (batch) => void seen.push(batch) } })
    const { appToken } = await gate.applications.register({ name: 'exported' })
    await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    await gate.usage.flush()
    expect(seen).toHaveLength(1)
    expect(seen[0]?.rows.find((r) => r.granularity === 'minute')).toMatchObject({ appToken, requests: 1 })

    const throwing = gateWith({ usage: { onFlush: () => Promise.reject(new Error('analytics down')) } })
    await throwing.handle(coreRequest())
    const { warnings } = await captureWarnings(() => throwing.usage.flush())
    expect(warnings).toEqual([{ code: 'ODG_USAGE_ONFLUSH_THREW', message: expect.stringContaining('analytics down') }])
  })
})

describe('the usage option', () => {
  it('refuses unknown keys and bad values, naming the option', () => {
    expect(() => createGate({ usage: { flushIntervalMs: 0 } })).toThrow(/usage\.flushIntervalMs must be a positive integer/)
    expect(() => createGate({ usage: { flushInterval: 5 } as never })).toThrow(/unknown option `usage\.flushInterval`; did you mean `flushIntervalMs`\?/)
    expect(() => createGate({ usage: { retention: { minutes: 1 } } as never })).toThrow(/unknown option `usage\.retention\.minutes`/)
    expect(() => createGate({ usage: { retention: { dayMs: -1 } } })).toThrow(/usage\.retention\.dayMs/)
    expect(() => createGate({ usage: { onFlush: 'yes' } as never })).toThrow(/usage\.onFlush must be a function/)
    expect(() => createGate({ usage: true as never })).toThrow(/usage must be an object/)
  })
})
