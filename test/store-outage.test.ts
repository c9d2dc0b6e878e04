/**
 * How the gate lives with a store in another process: its own copy of application
 * records, one event per outage, one probe at a time while the store is down, honest
 * headers while it counts on its own, and records and rates in two stores. (The same
 * behaviour against a real Redis killed, paused and restarted is in the Redis suite.)
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it, vi } from 'vitest'
import { createGate, MemoryStore, type GateOptions, type GateOutcome, type StoreErrorEvent, type StoreRecoveredEvent } from '../src/index.js'
import type { RequestLookup, RequestLookupResult } from '../src/store/contract/request-lookup.js'
import { nodeGate } from '../adapters/node.js'
import { listen } from './adapters/servers.js'
import * as brokenStores from './support/broken-stores.js'
import { FlakyStore } from './support/flaky-store.js'
import { coreRequest } from './support/requests.js'

function respond(outcome: GateOutcome) {
  if (outcome.type !== 'respond') throw new Error('expected the gate to answer, it let the request through')
  return outcome.response
}
function pass(outcome: GateOutcome) {
  if (outcome.type !== 'next') throw new Error(`expected the request through, got ${outcome.response.status} ${outcome.response.body}`)
  return outcome
}

function asyncStore(): FlakyStore {
  const store = new FlakyStore()
  store.modes.set('getApplication', 'async')
  store.modes.set('consumeRate', 'async')
  return store
}

async function gateOn(store: FlakyStore, options: GateOptions = {}) {
  // Quiet: the outages here are on purpose, and their log lines are test/logger.test.ts's.
  const gate = createGate({ store, storeTimeoutMs: 100, throttle: { application: { limit: 100, windowMs: 60_000 } }, logger: false, ...options })
  const errors: StoreErrorEvent[] = []
  const recovered: StoreRecoveredEvent[] = []
  gate.on('storeError', (e) => errors.push(e))
  gate.on('storeRecovered', (e) => recovered.push(e))
  const { appToken } = await gate.applications.register({ name: 'A' })
  const request = (token = appToken) => gate.handle(coreRequest({ headers: { 'x-app-token': token } }))
  return { gate, appToken, request, errors, recovered }
}

describe('application records from a remote store', () => {
  it('reads an application once, then answers from its own copy', async () => {
    const store = asyncStore()
    const { request } = await gateOn(store)
    await Promise.all(Array.from({ length: 20 }, () => request()))
    for (let i = 0; i < 20; i++) pass(await request())
    expect(store.count('getApplication')).toBe(1)
    expect(store.count('consumeRate')).toBe(40)
  })

  it('costs a made-up token one read per request at most: concurrent requests for it share reads', async () => {
    const store = asyncStore()
    const { request } = await gateOn(store)
    for (let i = 0; i < 10; i++) expect(respond(await request('made-up-token-1')).status).toBe(403)
    expect(store.count('getApplication')).toBe(10)
    // Twenty at once: the first read, and one more for all who came while it was in flight.
    const at = store.count('getApplication')
    const statuses = await Promise.all(Array.from({ length: 20 }, async () => respond(await request('made-up-token-1')).status))
    expect(statuses).toEqual(Array.from({ length: 20 }, () => 403))
    expect(store.count('getApplication') - at).toBe(2)
  })

  it('serves a token registered on another instance at once, though no change message reaches this one', async () => {
    const shared = new MemoryStore()
    // A store in another process that never announces changes (its attach keeps no sink).
    const remote = brokenStores.asyncStore(shared, { attach: () => {} })
    const gate = createGate({ store: remote, applicationCacheMs: 60_000, logger: false })
    const other = createGate({ store: shared })
    const request = (token: string) => gate.handle(coreRequest({ headers: { 'x-app-token': token } }))
    expect(respond(await request('registered-later-0001')).status).toBe(403)
    await other.applications.register({ name: 'Later', appToken: 'registered-later-0001' })
    pass(await request('registered-later-0001'))
  })

  it('serves a request that came after a registration, though a read of the token from before it was still in flight', async () => {
    const shared = new MemoryStore()
    const held: Array<() => void> = []
    // Reads the store when called, answers when released: a read that left before the registration.
    const remote = brokenStores.asyncStore(shared, {
      attach: () => {},
      getApplication: (appToken: string) => {
        const found = shared.getApplication(appToken)
        return new Promise((resolve) => held.push(() => resolve(found)))
      },
    })
    const gate = createGate({ store: remote, applicationCacheMs: 60_000, logger: false })
    const other = createGate({ store: shared })
    const request = () => gate.handle(coreRequest({ headers: { 'x-app-token': 'registered-later-0002' } }))
    const before = request()
    await other.applications.register({ name: 'Later', appToken: 'registered-later-0002' })
    const after = request()
    let settled = false
    void Promise.allSettled([before, after]).then(() => (settled = true))
    while (!settled) {
      held.shift()?.()
      await sleep(1)
    }
    expect(respond(await before).status).toBe(403)
    pass(await after)
  })

  it('reads it again once its copy is older than applicationCacheMs', async () => {
    const store = asyncStore()
    const { request } = await gateOn(store, { applicationCacheMs: 30 })
    pass(await request())
    await sleep(50)
    pass(await request())
    expect(store.count('getApplication')).toBe(2)
  })

  it('sees a change it made itself at once', async () => {
    const store = asyncStore()
    const { gate, appToken, request } = await gateOn(store, { applicationCacheMs: 60_000 })
    expect(pass(await request()).context.throttle?.limit).toBe(100)
    await gate.applications.update(appToken, { limit: 5000 })
    expect(pass(await request()).context.throttle?.limit).toBe(5000)
    await gate.applications.delete(appToken)
    expect(respond(await request()).status).toBe(403)
  })

  it('drops its copy when the store says another instance changed the application', async () => {
    const store = asyncStore()
    const { appToken, request } = await gateOn(store, { applicationCacheMs: 60_000 })
    const other = createGate({ store })
    pass(await request())
    await other.applications.delete(appToken)
    expect(respond(await request()).status).toBe(403)
    const { appToken: registeredElsewhere } = await other.applications.register({ name: 'B' })
    pass(await request(registeredElsewhere))
  })

  it('keeps serving a known application from its copy while the store is down', async () => {
    const store = asyncStore()
    const { request } = await gateOn(store, { applicationCacheMs: 20 })
    pass(await request())
    await sleep(40)
    store.modes.set('getApplication', 'reject')
    expect(pass(await request()).context.application).not.toBeNull()
  })
})

describe('a store outage', () => {
  it('is one storeError when it starts and one storeRecovered when the store answers again', async () => {
    const store = asyncStore()
    const { request, errors, recovered } = await gateOn(store)
    pass(await request())
    store.modes.set('consumeRate', 'reject')
    for (let i = 0; i < 10; i++) pass(await request())
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatchObject({ operation: 'consumeRate', outcome: 'fallback', store: 'records+rates' })
    expect(recovered).toHaveLength(0)
    store.modes.set('consumeRate', 'async')
    // The next probe finds the store answering: requests until then are served from this
    // process's count (on busy cores the probe may not be due by the second request).
    for (let i = 0; i < 100 && recovered.length === 0; i++) {
      pass(await request())
      if (recovered.length === 0) await sleep(10)
    }
    pass(await request())
    expect(recovered).toHaveLength(1)
    expect(recovered[0]).toMatchObject({ store: 'records+rates' })
    expect(recovered[0]?.failedCalls).toBeGreaterThanOrEqual(10)
    expect(recovered[0]?.downMs).toBeGreaterThanOrEqual(0)
    store.modes.set('consumeRate', 'reject')
    pass(await request())
    expect(errors).toHaveLength(2)
  })

  it('sends one probe at a time to a store that does not answer, and answers the others at once', async () => {
    const store = asyncStore()
    const { request } = await gateOn(store, { storeTimeoutMs: 200 })
    pass(await request())
    store.modes.set('consumeRate', 'hang')
    await request() // the call that finds the outage, after the timeout
    await sleep(200) // no probe goes out for as long as the failed call waited
    const before = store.count('consumeRate')
    let answered = 0
    const pending = Promise.all(Array.from({ length: 30 }, () => Promise.resolve(request()).then((o) => (answered++, o))))
    // The others are answered without a timer: by the loop's next turn, while the probe's
    // call waits out its timeout (or, on a stalled machine, has just been given up).
    await new Promise((resolve) => setImmediate(resolve))
    expect(answered).toBeGreaterThanOrEqual(29)
    const outcomes = await pending
    expect(outcomes.every((o) => o.type === 'next')).toBe(true)
    expect(store.count('consumeRate') - before).toBe(1)
  })

  it('spends one timeout on a request whose store calls all hang, not one per call', async () => {
    const store = asyncStore()
    // A timeout long beside a busy machine's stalls, so that one timeout and two tell apart.
    const timeoutMs = 1000
    const { gate, appToken, recovered } = await gateOn(store, { storeTimeoutMs: timeoutMs, basic: { scrypt: { logN: 10 } } })
    await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'ada@example.org' })
    const authorization = `Basic ${Buffer.from('ada:correct horse battery').toString('base64')}`
    const signIn = () => gate.handle(coreRequest({ headers: { 'x-app-token': appToken, authorization } }))
    expect(pass(await signIn()).context.user?.username).toBe('ada')
    // A paused server: the application's rate step waits out the timeout and falls back to
    // the local count; the sign-in budget step that follows (which may not fail open) is
    // answered at once instead of becoming the next probe and waiting again.
    store.modes.set('consumeRate', 'hang')
    const before = store.count('consumeRate')
    const started = performance.now()
    expect(respond(await signIn()).status).toBe(503)
    expect(performance.now() - started).toBeLessThan(2 * timeoutMs)
    expect(store.count('consumeRate') - before).toBe(1)
    // The next probe goes once the store has had as long as the failed call waited.
    store.modes.set('consumeRate', 'async')
    await sleep(timeoutMs + 10)
    expect(pass(await signIn()).headers.ratelimit).toMatch(/^"app";r=\d+;t=\d+$/)
    expect(recovered).toHaveLength(1)
  })

  it('sends no RateLimit headers while it counts in this process alone, and says so', async () => {
    const store = asyncStore()
    const { request } = await gateOn(store)
    const normal = pass(await request())
    expect(normal.headers.ratelimit).toBeDefined()
    expect(normal.context.throttle?.source).toBe('store')
    store.modes.set('consumeRate', 'reject')
    const local = pass(await request())
    expect(Object.keys(local.headers).filter((name) => name.startsWith('ratelimit'))).toEqual([])
    expect(local.context.throttle?.source).toBe('local')
    store.modes.set('consumeRate', 'async')
    expect(pass(await request()).headers.ratelimit).toMatch(/^"app";r=\d+;t=\d+$/)
  })

  it('refuses with Retry-After while the local count is spent, still without claiming a shared budget', async () => {
    const store = asyncStore()
    const { request } = await gateOn(store, { throttle: { application: { limit: 2, windowMs: 60_000 } } })
    store.modes.set('consumeRate', 'reject')
    pass(await request())
    pass(await request())
    const refused = respond(await request())
    expect(refused.status).toBe(429)
    expect(refused.headers['retry-after']).toMatch(/^\d+$/)
    expect(refused.headers.ratelimit).toBeUndefined()
  })
})

describe('a store outage, told to clients', () => {
  /** The token endpoint, the authorize page and the data API, each needing an application record the gate has not read. */
  const needingRecords = (n: number) => [
    coreRequest({ headers: { 'x-app-token': `unread-token-${n}` } }),
    coreRequest({
      method: 'POST',
      url: '/oauth/access_token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      readBody: () => Promise.resolve({ kind: 'raw', bytes: Buffer.from(`grant_type=authorization_code&code=c&client_id=unread-client-${n}&client_secret=s&redirect_uri=https%3A%2F%2Fa.example%2Fcb`) }),
    }),
    coreRequest({ url: `/oauth/authorize?client_id=unread-client-${n}&response_type=code&redirect_uri=https%3A%2F%2Fa.example%2Fcb` }),
  ]

  it('answers every 503 of an outage with Retry-After, storeTimeoutMs in seconds rounded up', async () => {
    const store = asyncStore()
    const { gate } = await gateOn(store, { storeTimeoutMs: 1500 })
    store.modes.set('getApplication', 'hang')
    // The first call finds the outage by waiting out the timeout; the others, sent while it
    // waits, are answered at once without a call to the store.
    const [probe, ...others] = needingRecords(0).map((request) => gate.handle(request))
    const answers = [...(await Promise.all(others)), await probe].map((outcome) => respond(outcome as GateOutcome))
    // A store that refuses connections fails each call at once: every request is a probe.
    store.modes.set('getApplication', 'reject')
    for (const request of needingRecords(1)) answers.push(respond(await gate.handle(request)))
    expect(answers).toHaveLength(6)
    for (const answer of answers) {
      expect(answer.status).toBe(503)
      expect(answer.headers['retry-after']).toBe('2')
    }
    expect(answers.map((a) => a.headers['content-type'])).toEqual(expect.arrayContaining(['application/json; charset=utf-8', 'text/html; charset=utf-8']))
  })

  it('says Retry-After: 1 with the default storeTimeoutMs, through a node:http server', async () => {
    const store = asyncStore()
    const gate = createGate({ store, logger: false })
    const server = await listen(nodeGate(gate, (_req, res) => res.end('{}')))
    try {
      store.modes.set('getApplication', 'reject')
      const res = await fetch(`${server.url}/resource/abcd-1234.json`, { headers: { 'x-app-token': 'unread-token' } })
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toBe('1')
      expect(await res.json()).toMatchObject({ code: 'service_unavailable', error: true })
    } finally {
      await server.close()
    }
  })
})

describe('a request whose one-trip lookup fails after the store took its step', () => {
  /**
   * A store with `lookupRequest` that takes the request's rate step and then fails on a
   * record, as a Redis script can: with a data error, so the store is not marked down and
   * a step sent again would reach it. (Against a real Redis: test/redis-lookup-failure.test.ts.)
   */
  class LookupFailsAfterStep extends FlakyStore {
    readonly lookupRequest = async (lookup: RequestLookup): Promise<RequestLookupResult> => {
      await Promise.resolve()
      const rate = lookup.rate! // the gate's lookups here are of one rate step
      this.consumeRate(rate.key, rate.limit, rate.windowMs, rate.cost)
      throw Object.assign(new Error('a record of the wrong kind'), { code: '22000' })
    }
  }

  it.each(['memory', 'fail-open', 'fail-closed'] as const)('counts it once, and the throttle answers as onStoreError %s says', async (mode) => {
    const store = new LookupFailsAfterStep()
    // A long window: the budget refills by one request in 864 s, so the count reads exactly.
    const windowMs = 86_400_000
    const { gate, appToken, errors } = await gateOn(store, { basic: { scrypt: { logN: 10 } }, throttle: { application: { limit: 100, windowMs }, onStoreError: mode } })
    const counted = () => (store.consumeRate(`app:${appToken}`, 100, windowMs, 0) as { remaining: number }).remaining
    const ada = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'ada@example.org' })
    const key = await gate.apiKeys.create(ada.id, { name: 'etl' })
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken })
    const basic = (user: string, secret: string) => `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`
    const credentials = {
      'API key': { 'x-app-token': appToken, authorization: basic(key.keyId, key.keySecret) },
      password: { 'x-app-token': appToken, authorization: basic('ada', 'correct horse battery') },
      'OAuth token with its app token': { 'x-app-token': appToken, authorization: `OAuth ${accessToken}` },
      'OAuth token alone': { authorization: `OAuth ${accessToken}` },
    }
    for (const [credential, headers] of Object.entries(credentials)) {
      // Twice: a password is sent in the lookup once it was verified, a token alone once its application is known.
      for (let i = 0; i < 2; i++) {
        const before = counted()
        const outcome = await gate.handle(coreRequest({ headers }))
        expect({ credential, steps: before - counted() }).toEqual({ credential, steps: 1 })
        if (i === 0) continue
        if (mode === 'fail-closed') {
          expect({ credential, status: respond(outcome).status }).toEqual({ credential, status: 503 })
          continue
        }
        const { context, headers: sent } = pass(outcome)
        expect(context.user?.username).toBe('ada')
        expect(context.application?.appToken).toBe(appToken)
        if (mode === 'fail-open') expect(context.throttle).toBeNull()
        else expect(context.throttle).toMatchObject({ policy: 'application', source: 'local' })
        expect(sent.ratelimit).toBeUndefined()
      }
    }
    // A data error is not an outage.
    expect(errors).toEqual([])
  })
})

describe('records and rates in two stores', () => {
  it('counts in the rate store and keeps records in the other', async () => {
    const records = asyncStore()
    const rates = new FlakyStore()
    rates.modes.set('consumeRate', 'async')
    const { request } = await gateOn(records, { rateStore: rates })
    for (let i = 0; i < 5; i++) pass(await request())
    expect(rates.count('consumeRate')).toBe(5)
    expect(records.count('consumeRate')).toBe(0)
  })

  it('applies the outage mode to the store that failed, and names it', async () => {
    const records = asyncStore()
    const rates = new FlakyStore()
    const { request, errors } = await gateOn(records, { rateStore: rates, throttle: { application: { limit: 100, windowMs: 60_000 }, onStoreError: 'fail-closed' } })
    rates.modes.set('consumeRate', 'reject')
    expect(respond(await request()).status).toBe(503)
    expect(errors).toEqual([expect.objectContaining({ store: 'rates', outcome: 'failed' })])
  })

  it('takes any object with consumeRate and resetRate as the rate store, and refuses one without', async () => {
    const rates = new MemoryStore()
    const gate = createGate({ rateStore: { consumeRate: (...a) => rates.consumeRate(...a), resetRate: (k) => rates.resetRate(k) } })
    expect(pass(await gate.handle(coreRequest())).context.throttle?.remaining).toBe(59)
    expect(() => createGate({ rateStore: {} as never })).toThrow(/rateStore must have consumeRate and resetRate/)
  })
})

describe('a store outage while revoking a token sent in clear', () => {
  /** A store whose access-token reads fail: the revocation of a token sent over http cannot happen. */
  class TokenReadsFail extends MemoryStore {
    override getAccessToken(): never {
      throw new Error('connect ECONNREFUSED')
    }
  }
  const overHttp = (url: string, method = 'POST') => coreRequest({ method, url, tls: false, headers: { authorization: 'OAuth someAccessToken0123456789' } })

  it('answers the token and revocation endpoints in RFC 6749 shape, and the data API in its own', async () => {
    const gate = createGate({ store: new TokenReadsFail() })
    for (const path of ['/oauth/access_token', '/oauth/revoke']) {
      const response = respond(await gate.handle(overHttp(path)))
      expect(response.status).toBe(503)
      expect(JSON.parse(response.body)).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) })
    }
    const data = respond(await gate.handle(overHttp('/resource/abcd-1234.json', 'GET')))
    expect(data.status).toBe(503)
    expect(JSON.parse(data.body)).toMatchObject({ code: 'service_unavailable', error: true })
  })

  it('answers the authorize endpoint with a page, never JSON', async () => {
    const gate = createGate({ store: new TokenReadsFail() })
    const response = respond(await gate.handle(overHttp('/oauth/authorize?client_id=x', 'GET')))
    expect(response.status).toBe(503)
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(response.headers['x-frame-options']).toBe('DENY')
  })
})

describe('a forgotten proxy at the OAuth endpoints', () => {
  const claimsHttps = (url: string, method = 'GET') => coreRequest({ method, url, peerAddress: '10.0.0.2', tls: false, headers: { 'x-forwarded-proto': 'https' } })

  it('is refused with a page at authorize and the connected-apps page, and with JSON at the token endpoint', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    try {
      const gate = createGate()
      for (const path of ['/oauth/authorize?client_id=x', '/oauth/grants']) {
        const page = respond(await gate.handle(claimsHttps(path)))
        expect(page.status).toBe(500)
        expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
        expect(page.headers['x-frame-options']).toBe('DENY')
        expect(page.body).toContain('proxy_not_trusted')
      }
      const token = respond(await gate.handle(claimsHttps('/oauth/access_token', 'POST')))
      expect(token.status).toBe(500)
      expect(JSON.parse(token.body)).toMatchObject({ code: 'proxy_not_trusted' })
      expect(warn.mock.calls.map((call) => (call[1] as { code?: string }).code)).toContain('ODG_UNTRUSTED_PROXY_HEADERS')
    } finally {
      warn.mockRestore()
    }
  })
})
