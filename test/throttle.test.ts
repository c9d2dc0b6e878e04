import { describe, expect, it } from 'vitest'
import { createGate, MemoryStore, type GateOptions, type GateOutcome, type StoreErrorEvent } from '../src/index.js'
import { FlakyStore } from './support/flaky-store.js'
import { coreRequest } from './support/requests.js'

function respond(outcome: GateOutcome) {
  if (outcome.type !== 'respond') throw new Error(`expected the gate to answer, it let the request through`)
  return { ...outcome.response, json: JSON.parse(outcome.response.body) as Record<string, unknown> }
}
function pass(outcome: GateOutcome) {
  if (outcome.type !== 'next') throw new Error(`expected the request through, got ${outcome.response.status} ${outcome.response.body}`)
  return outcome
}

async function setup(options: GateOptions = {}) {
  const gate = createGate({
    throttle: { application: { limit: 3, windowMs: 60_000 }, anonymous: { limit: 2, windowMs: 60_000, scope: 'ip' } },
    ...options,
  })
  const a = await gate.applications.register({ name: 'A' })
  const b = await gate.applications.register({ name: 'B' })
  const withToken = (token: string, peerAddress = '203.0.113.5') => gate.handle(coreRequest({ headers: { 'x-app-token': token }, peerAddress }))
  const anonymous = (peerAddress = '203.0.113.5') => gate.handle(coreRequest({ peerAddress }))
  return { gate, a, b, withToken, anonymous }
}

describe('throttling', () => {
  it('counts each application on its own, whatever address it comes from', async () => {
    const { a, b, withToken, anonymous } = await setup()
    for (const ip of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) pass(await withToken(a.appToken, ip))
    expect(respond(await withToken(a.appToken, '198.51.100.4')).status).toBe(429)
    expect(pass(await withToken(b.appToken)).context.throttle).toMatchObject({ policy: 'application', remaining: 2 })
    expect(pass(await anonymous()).context.throttle).toMatchObject({ policy: 'anonymous', remaining: 1 })
  })

  it('says in the 429 which anonymous budget is spent: this address’s, or everyone’s', async () => {
    const perAddress = await setup()
    for (let i = 0; i < 2; i++) pass(await perAddress.anonymous())
    const ip = respond(await perAddress.anonymous()).json.message as string
    expect(ip).toMatch(/limited to 2 per 60 seconds from each address/)
    expect(ip).not.toMatch(/share/)
    const shared = await setup({ throttle: { anonymous: { limit: 2, windowMs: 60_000, scope: 'shared' } } })
    pass(await shared.anonymous('198.51.100.1'))
    pass(await shared.anonymous('198.51.100.2'))
    expect(respond(await shared.anonymous('198.51.100.3')).json.message).toMatch(/requests without an app token share a limit of 2 per 60 seconds/)
  })

  it('applies an application’s own higher limit', async () => {
    const { gate, a, withToken } = await setup()
    await gate.applications.update(a.appToken, { limit: 10 })
    const first = pass(await withToken(a.appToken))
    expect(first.context.throttle).toMatchObject({ limit: 10, remaining: 9 })
    expect(first.headers['ratelimit-policy']).toBe('"app";q=10;w=60')
  })

  it('counts anonymous requests per client address with scope ip', async () => {
    const { anonymous } = await setup()
    pass(await anonymous('198.51.100.1'))
    pass(await anonymous('198.51.100.1'))
    expect(respond(await anonymous('198.51.100.1')).status).toBe(429)
    pass(await anonymous('198.51.100.2'))
  })

  it('counts IPv6 clients of one /56 together', async () => {
    const { anonymous } = await setup()
    pass(await anonymous('2001:db8:1:100::1'))
    pass(await anonymous('2001:db8:1:1ff::2'))
    expect(respond(await anonymous('2001:db8:1:1aa::3')).status).toBe(429)
    pass(await anonymous('2001:db8:1:200::1'))
  })

  it('shares one pool among every anonymous client with scope shared', async () => {
    const { anonymous } = await setup({ throttle: { anonymous: { limit: 2, windowMs: 60_000, scope: 'shared' } } })
    pass(await anonymous('198.51.100.1'))
    pass(await anonymous('198.51.100.2'))
    expect(respond(await anonymous('198.51.100.3')).status).toBe(429)
  })

  it('announces the budget in RateLimit-Policy and RateLimit', async () => {
    const { a, withToken } = await setup()
    const first = pass(await withToken(a.appToken))
    expect(first.headers).toEqual({ 'ratelimit-policy': '"app";q=3;w=60', ratelimit: '"app";r=2;t=20', 'x-request-id': expect.any(String) })
  })

  it('adds the legacy X-RateLimit headers when asked', async () => {
    const { a, withToken } = await setup({ throttle: { application: { limit: 3, windowMs: 60_000 }, legacyHeaders: true } })
    const before = Date.now()
    const { headers } = pass(await withToken(a.appToken))
    const after = Date.now()
    expect(headers['x-ratelimit-limit']).toBe('3')
    expect(headers['x-ratelimit-remaining']).toBe('2')
    // Epoch seconds when the budget is back (20 s for one of 3 in a minute), rounded up, at
    // whatever moment between before and after the gate answered.
    const reset = Number(headers['x-ratelimit-reset'])
    expect(reset).toBeGreaterThanOrEqual(Math.ceil((before + 20_000) / 1000))
    expect(reset).toBeLessThanOrEqual(Math.ceil((after + 20_000) / 1000))
  })

  it('answers 429 with the platform body, Retry-After no earlier than t, and an event', async () => {
    const { gate, a, withToken } = await setup()
    const events: unknown[] = []
    gate.on('throttled', (e) => events.push(e))
    for (let i = 0; i < 3; i++) pass(await withToken(a.appToken))
    const refused = respond(await withToken(a.appToken))
    expect(refused.status).toBe(429)
    expect(refused.json).toMatchObject({ code: 'too_many_requests', error: true })
    expect(refused.headers['x-error-code']).toBe('too_many_requests')
    const t = Number(/;t=(\d+)/.exec(String(refused.headers.ratelimit))?.[1])
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(t)
    expect(Number(refused.headers['retry-after'])).toBe(20)
    expect(events).toEqual([{ policy: 'application', appToken: a.appToken, ip: '203.0.113.5', retryAfterMs: expect.any(Number), requestId: expect.any(String) }])
  })

  it('never gives an invalid token a budget, nor takes from anyone else’s', async () => {
    const { gate, a, withToken, anonymous } = await setup()
    const invalid: unknown[] = []
    gate.on('invalidAppToken', (e) => invalid.push(e))
    for (let i = 0; i < 10; i++) {
      const refused = respond(await withToken('no-such-token-abcdef'))
      expect(refused.status).toBe(403)
      expect(refused.json).toEqual({ code: 'permission_denied', error: true, message: 'Invalid app_token specified' })
      expect(refused.headers.ratelimit).toBeUndefined()
    }
    expect(invalid[0]).toEqual({ tokenPrefix: 'no-suc', ip: '203.0.113.5', requestId: expect.any(String) })
    expect(pass(await anonymous()).context.throttle?.remaining).toBe(1)
    expect(pass(await withToken(a.appToken)).context.throttle?.remaining).toBe(2)
  })

  it('refuses a token that cannot be one without asking the store', async () => {
    const store = new FlakyStore()
    const gate = createGate({ store })
    expect(respond(await gate.handle(coreRequest({ headers: { 'x-app-token': 'x'.repeat(5000) } }))).status).toBe(403)
    expect(respond(await gate.handle(coreRequest({ headers: { 'x-app-token': 'abc def' } }))).status).toBe(403)
    expect(store.count('getApplication')).toBe(0)
  })

  it('lets everything through without RateLimit headers when throttling is off', async () => {
    const gate = createGate({ throttle: false })
    const outcome = pass(await gate.handle(coreRequest()))
    expect(outcome.context.throttle).toBeNull()
    expect(outcome.headers).toEqual({ 'x-request-id': expect.any(String) })
  })

  it('does not ask the store again about a key it has just refused', async () => {
    const store = new FlakyStore()
    const gate = createGate({ store, throttle: { anonymous: { limit: 1, windowMs: 60_000, scope: 'shared' } } })
    pass(await gate.handle(coreRequest()))
    expect(respond(await gate.handle(coreRequest())).status).toBe(429)
    const calls = store.count('consumeRate')
    for (let i = 0; i < 20; i++) expect(respond(await gate.handle(coreRequest())).status).toBe(429)
    expect(store.count('consumeRate')).toBe(calls)
  })
})

describe('an OAuth request on a store that counts rates apart from the records', () => {
  class CountingRecords extends MemoryStore {
    userReads = 0
    override getUser(id: string) {
      this.userReads++
      return super.getUser(id)
    }
  }

  it('reads the token\'s user while the step is in flight, and none for a request refused without asking the rate store', async () => {
    const records = new CountingRecords()
    const rates = new FlakyStore()
    rates.modes.set('consumeRate', 'async')
    const gate = createGate({ store: records, rateStore: rates, throttle: { application: { limit: 1, windowMs: 60_000 } } })
    const { appToken } = await gate.applications.register({ name: 'A' })
    const ada = await gate.users.create({ username: 'ada', displayName: 'Ada', email: 'ada@example.org' })
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken })
    const request = () => gate.handle(coreRequest({ headers: { 'x-app-token': appToken, authorization: `OAuth ${accessToken}` } }))

    const reads = records.userReads
    expect(pass(await request()).context.user?.username).toBe('ada')
    expect(records.userReads).toBe(reads + 1)
    // The rate store refuses: this process now knows the key is over its limit.
    expect(respond(await request()).status).toBe(429)
    const [steps, refusedReads] = [rates.count('consumeRate'), records.userReads]
    for (let i = 0; i < 20; i++) expect(respond(await request()).status).toBe(429)
    expect(rates.count('consumeRate')).toBe(steps)
    expect(records.userReads).toBe(refusedReads)
  })
})

describe('throttling when the store fails', () => {
  async function failing(mode: 'fail-open' | 'fail-closed' | 'memory', failure: 'throw' | 'reject' | 'hang') {
    const store = new FlakyStore()
    const gate = createGate({ store, storeTimeoutMs: 50, throttle: { anonymous: { limit: 2, windowMs: 60_000 }, onStoreError: mode } })
    const events: StoreErrorEvent[] = []
    gate.on('storeError', (e) => events.push(e))
    store.modes.set('consumeRate', failure)
    return { gate, events }
  }

  it.each(['throw', 'reject', 'hang'] as const)('fail-open lets the request through unthrottled (%s)', async (failure) => {
    const { gate, events } = await failing('fail-open', failure)
    for (let i = 0; i < 5; i++) expect(pass(await gate.handle(coreRequest())).context.throttle).toBeNull()
    expect(events[0]).toMatchObject({ operation: 'consumeRate', outcome: 'allowed' })
  })

  it.each(['throw', 'reject', 'hang'] as const)('fail-closed answers 503 service_unavailable, not 429 (%s)', async (failure) => {
    const { gate, events } = await failing('fail-closed', failure)
    const refused = respond(await gate.handle(coreRequest()))
    expect(refused.status).toBe(503)
    expect(refused.json.code).toBe('service_unavailable')
    expect(events[0]).toMatchObject({ operation: 'consumeRate', outcome: 'failed' })
  })

  it.each(['throw', 'reject', 'hang'] as const)('memory keeps throttling in this process (%s)', async (failure) => {
    const { gate, events } = await failing('memory', failure)
    pass(await gate.handle(coreRequest()))
    pass(await gate.handle(coreRequest()))
    expect(respond(await gate.handle(coreRequest())).status).toBe(429)
    expect(events[0]).toMatchObject({ operation: 'consumeRate', outcome: 'fallback' })
  })

  it('answers 503 when the application lookup fails, whatever the throttle mode', async () => {
    const store = new FlakyStore()
    const gate = createGate({ store, storeTimeoutMs: 50, throttle: { onStoreError: 'fail-open' } })
    const { appToken } = await gate.applications.register({ name: 'A' })
    store.modes.set('getApplication', 'hang')
    const refused = respond(await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } })))
    expect(refused.status).toBe(503)
    expect(refused.json.message).not.toMatch(/hang|timed out|exploded/)
  })
})
