/**
 * The self-service application endpoints through the core (`gate.handle`): a signed-in
 * developer registers, lists, renames, rotates, reads the usage of and deletes their own
 * applications; another user's application is a 404; only the user's own sign-in may
 * manage them; the cap per user holds under racing registrations and the registration
 * budget refuses with Retry-After.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createGate, MemoryStore, type GateOptions, type GateResponse } from '../src/index.js'
import { coreRequest } from './support/requests.js'

interface AppJson {
  appToken: string
  name: string
  callbackPrefix: string | null
  limit: number | null
  createdAt: string
  updatedAt: string
  previousSecretExpiresAt: string | null
  secretToken?: string
}

afterEach(() => {
  vi.useRealTimers()
})

const PASSWORD = 'correct horse battery'
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

/** A gate with the portal's own application, and Ada and Bob, each sending their password over Basic. */
async function setUp(options: GateOptions = {}) {
  const store = new MemoryStore()
  const gate = createGate({
    store,
    throttle: false,
    basic: { scrypt: { logN: 10 } },
    usage: { flushIntervalMs: 3_600_000 },
    ...options,
    oauth: { authenticateUser: (request) => (typeof request.headers['x-signed-in'] === 'string' ? request.headers['x-signed-in'] : undefined), ...(options.oauth as object) },
  })
  const portal = await gate.applications.register({ name: 'Portal' })
  const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada Lovelace', email: 'ada@example.org' })
  const bob = await gate.users.create({ username: 'bob', password: PASSWORD, displayName: 'Bob', email: 'bob@example.org' })
  const send = async (method: string, url: string, options: { body?: unknown; headers?: Record<string, string>; as?: string; tls?: boolean; peerAddress?: string } = {}): Promise<GateResponse> => {
    const authorization = options.as === undefined ? basic('ada', PASSWORD) : options.as
    const outcome = await gate.handle(
      coreRequest({
        method,
        url,
        tls: options.tls ?? true,
        ...(options.peerAddress === undefined ? {} : { peerAddress: options.peerAddress }),
        headers: { ...(authorization === '' ? {} : { authorization }), 'x-app-token': portal.appToken, ...options.headers },
        readBody: async () => ({ kind: 'parsed', value: options.body }),
      }),
    )
    if (outcome.type !== 'respond') throw new Error(`the gate let ${method} ${url} through`)
    return outcome.response
  }
  const json = <T = unknown>(response: GateResponse) => JSON.parse(response.body) as T
  const register = async (name: string, callbackPrefix?: string, as?: string): Promise<AppJson> => {
    const response = await send('POST', '/api/applications', { body: { name, ...(callbackPrefix === undefined ? {} : { callbackPrefix }) }, ...(as === undefined ? {} : { as }) })
    expect(response.status, response.body).toBe(201)
    return json<AppJson>(response)
  }
  return { gate, store, portal, ada, bob, send, json, register, asBob: basic('bob', PASSWORD) }
}

describe('the application endpoints', () => {
  it('registers an application of the caller’s, shows its secret token once, and lists only the caller’s', async () => {
    const { gate, ada, send, json, register, asBob } = await setUp()
    const created = await register('  Transit dashboard ', 'https://transit.example/oauth/')
    expect(created).toMatchObject({ name: 'Transit dashboard', callbackPrefix: 'https://transit.example/oauth/', limit: null, previousSecretExpiresAt: null })
    expect(created.secretToken).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(await gate.applications.verifySecret(created.appToken, created.secretToken!)).toBe(true)
    expect((await gate.applications.find(created.appToken))?.ownerId).toBe(ada.id)
    await register('Bob’s app', undefined, asBob)

    const listed = await send('GET', '/api/applications')
    expect(listed.status).toBe(200)
    expect(listed.headers['cache-control']).toBe('private, no-store')
    expect(json(listed)).toEqual([{ ...created, secretToken: undefined }])
    expect(listed.body).not.toContain('secretToken')
    const one = await send('GET', `/api/applications/${created.appToken}`)
    expect(json(one)).toEqual(json<AppJson[]>(listed)[0])
  })

  it('answers 404 for another user’s application and an operator’s, on every route, and changes nothing', async () => {
    const { gate, portal, send, json, register, asBob } = await setUp()
    const bobs = await register('Bob’s app', 'https://bob.example/', asBob)
    for (const token of [bobs.appToken, portal.appToken, 'no-such-app-token-000000', '%zz']) {
      const answers = [
        await send('GET', `/api/applications/${token}`),
        await send('PATCH', `/api/applications/${token}`, { body: { name: 'mine now' } }),
        await send('DELETE', `/api/applications/${token}`),
        await send('POST', `/api/applications/${token}/secret`),
        await send('GET', `/api/applications/${token}/usage`),
      ]
      expect(answers.map((a) => [a.status, json<{ code: string }>(a).code])).toEqual(Array(5).fill([404, 'not_found']))
    }
    expect(await gate.applications.find(bobs.appToken)).toMatchObject({ name: 'Bob’s app' })
    expect(await gate.applications.verifySecret(bobs.appToken, bobs.secretToken!)).toBe(true)
  })

  it('refuses an OAuth access token and an API key with 403 first_party_credentials_required, and anyone unsigned with 403', async () => {
    const { gate, ada, portal, send, json, register } = await setUp()
    const mine = await register('Mine')
    const token = await gate.tokens.issue({ userId: ada.id, appToken: portal.appToken })
    const key = await gate.apiKeys.create(ada.id, { name: 'script' })
    for (const as of [`OAuth ${token.accessToken}`, basic(key.keyId, key.keySecret)]) {
      const tries = [
        await send('GET', '/api/applications', { as }),
        await send('POST', '/api/applications', { as, body: { name: 'sneaky' } }),
        await send('PATCH', `/api/applications/${mine.appToken}`, { as, body: { name: 'x' } }),
        await send('POST', `/api/applications/${mine.appToken}/secret`, { as }),
        await send('DELETE', `/api/applications/${mine.appToken}`, { as }),
      ]
      expect(tries.map((r) => [r.status, json<{ code: string }>(r).code])).toEqual(Array(5).fill([403, 'first_party_credentials_required']))
    }
    expect(json<{ code: string }>(await send('GET', '/api/applications', { as: '' })).code).toBe('authentication_required')
    expect(json<{ code: string }>(await send('GET', '/api/applications', { tls: false })).code).toBe('https_required')
    expect((await gate.applications.list({ ownerId: ada.id })).map((a) => a.name)).toEqual(['Mine'])
  })

  it('takes the host’s session, and a change on it only with the CSRF header', async () => {
    const { ada, send, json } = await setUp()
    const session = { as: '', headers: { 'x-signed-in': ada.id } }
    const listed = await send('GET', '/api/applications', session)
    expect(listed.status).toBe(200)
    const csrf = listed.headers['x-csrf-token'] as string
    const cookie = String(listed.headers['set-cookie']).split(';')[0]!
    const forged = await send('POST', '/api/applications', { ...session, headers: { ...session.headers, cookie }, body: { name: 'forged' } })
    expect([forged.status, json<{ code: string }>(forged).code]).toEqual([403, 'permission_denied'])
    const made = await send('POST', '/api/applications', { ...session, headers: { ...session.headers, cookie, 'x-csrf-token': csrf }, body: { name: 'from the page' } })
    expect(made.status).toBe(201)
  })

  it('renames an application and changes or removes its Callback Prefix; refuses a bad one with 400', async () => {
    const { send, json, register } = await setUp()
    const app = await register('Old name', 'https://old.example/')
    const renamed = await send('PATCH', `/api/applications/${app.appToken}`, { body: { name: 'New name', callbackPrefix: 'https://new.example/cb/' } })
    expect(json(renamed)).toMatchObject({ name: 'New name', callbackPrefix: 'https://new.example/cb/' })
    const cleared = await send('PATCH', `/api/applications/${app.appToken}`, { body: { callbackPrefix: '' } })
    expect(json(cleared)).toMatchObject({ name: 'New name', callbackPrefix: null })
    const bad = await send('PATCH', `/api/applications/${app.appToken}`, { body: { callbackPrefix: 'http://insecure.example/' } })
    expect([bad.status, json<{ code: string; message: string }>(bad).code]).toEqual([400, 'invalid_request'])
    expect(json<{ message: string }>(bad).message).toMatch(/https/)
    const empty = await send('PATCH', `/api/applications/${app.appToken}`, { body: {} })
    expect(empty.status).toBe(400)
    const noName = await send('POST', '/api/applications', { body: { callbackPrefix: 'https://x.example/' } })
    expect([noName.status, json<{ code: string }>(noName).code]).toEqual([400, 'invalid_request'])
    const wrongMethod = await send('PUT', `/api/applications/${app.appToken}`)
    expect([wrongMethod.status, wrongMethod.headers.allow]).toEqual([405, 'GET, PATCH, DELETE, HEAD'])
  })

  it('refuses a name with a control or format character with 400, on registration and rename, and stores nothing', async () => {
    const { gate, ada, send, json, register } = await setUp()
    const app = await register('Transit')
    for (const name of ['Transit\u202egnissecorp', 'Transit\u2028x', 'Tran\u200bsit', 'Transit\u001b]0;x\u0007']) {
      for (const [method, url] of [['POST', '/api/applications'], ['PATCH', `/api/applications/${app.appToken}`]] as const) {
        const refused = await send(method, url, { body: { name } })
        expect([method, refused.status, json<{ code: string; message: string }>(refused)]).toEqual([method, 400, { code: 'invalid_request', error: true, message: expect.stringMatching(/^an application name must not hold control, format or line separator characters .*U\+[0-9A-F]{4} is not allowed$/) }])
      }
    }
    expect((await gate.applications.list({ ownerId: ada.id })).map((a) => a.name)).toEqual(['Transit'])
  })

  it('takes a change from an origin in trustedOrigins, from oauth.issuer’s, and from the host a trusted proxy forwarded, and from no other', async () => {
    const portal = 'https://portal.example.org'
    const { send, json } = await setUp({ trustedOrigins: [`${portal}/`, 'http://localhost:5173'], trustProxy: 'loopback', oauth: { issuer: 'https://data.example.org' } })
    const code = (response: GateResponse) => [response.status, response.status === 201 ? 'created' : json<{ code: string }>(response).code]
    const register = (headers: Record<string, string>, peerAddress?: string) => send('POST', '/api/applications', { body: { name: 'App' }, headers: { host: 'gate.internal:3000', ...headers }, ...(peerAddress === undefined ? {} : { peerAddress }) })
    // A portal front end on another origin, cross-site or same-site, and one in development.
    expect(code(await register({ origin: portal, 'sec-fetch-site': 'cross-site' }))).toEqual([201, 'created'])
    expect(code(await register({ origin: 'https://PORTAL.example.org:443', 'sec-fetch-site': 'same-site' }))).toEqual([201, 'created'])
    expect(code(await register({ origin: 'http://localhost:5173', 'sec-fetch-site': 'cross-site' }))).toEqual([201, 'created'])
    // The public origin: oauth.issuer's, the Host, the host a trusted proxy forwarded.
    expect(code(await register({ origin: 'https://data.example.org' }))).toEqual([201, 'created'])
    expect(code(await register({ origin: 'https://gate.internal:3000' }))).toEqual([201, 'created'])
    const proxied = { 'x-forwarded-for': '198.51.100.7', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'opendata.example.net' }
    expect(code(await register({ ...proxied, origin: 'https://opendata.example.net' }, '127.0.0.1'))).toEqual([201, 'created'])
    // The same header from a peer that is no trusted proxy names no origin of the gate's.
    expect(code(await register({ ...proxied, origin: 'https://opendata.example.net' }))).toEqual([403, 'same_origin_required'])
    for (const origin of ['https://portal.example.org.evil.example', 'http://portal.example.org', 'https://evil.example', 'https://data.example.org:8443']) {
      expect([origin, ...code(await register({ origin }))]).toEqual([origin, 403, 'same_origin_required'])
    }
    expect(code(await register({ origin: 'https://gate.internal:3000', 'sec-fetch-site': 'cross-site' }))).toEqual([403, 'same_origin_required'])
  })

  it('refuses a trustedOrigins entry that is not an https origin, naming it', () => {
    for (const entry of ['https://portal.example.org/app', 'http://portal.example.org', 'portal.example.org', 'https://u:p@portal.example.org', 'https://portal.example.org?x', 'null']) {
      expect(() => createGate({ trustedOrigins: [entry] }), entry).toThrow(/^open-data-gate: trustedOrigins entry .* is not an origin/)
    }
    expect(() => createGate({ trustedOrigins: 'https://portal.example.org' as never })).toThrow(/trustedOrigins must be a list/)
  })

  it('deletes an application: its app token is refused from then on', async () => {
    const { gate, send, register } = await setUp()
    const app = await register('Short-lived')
    expect((await send('DELETE', `/api/applications/${app.appToken}`)).status).toBe(204)
    expect(await gate.applications.find(app.appToken)).toBeUndefined()
    expect((await send('DELETE', `/api/applications/${app.appToken}`)).status).toBe(404)
    const outcome = await gate.handle(coreRequest({ headers: { 'x-app-token': app.appToken } }))
    expect(outcome.type === 'respond' && outcome.response.status).toBe(403)
  })

  it('rotates the secret token: the new one shown once, the old one accepted until the grace ends', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.UTC(2026, 0, 1))
    const { gate, send, json, register } = await setUp({ applications: { secretGraceMs: 3_600_000 } })
    const app = await register('Rotating')
    const rotated = await send('POST', `/api/applications/${app.appToken}/secret`)
    expect(rotated.status).toBe(200)
    const body = json<AppJson>(rotated)
    expect(body.secretToken).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(body.previousSecretExpiresAt).toBe('2026-01-01T01:00:00.000Z')
    expect(await gate.applications.verifySecret(app.appToken, app.secretToken!)).toBe(true)
    expect(await gate.applications.verifySecret(app.appToken, body.secretToken!)).toBe(true)
    vi.setSystemTime(Date.UTC(2026, 0, 1, 1))
    expect(await gate.applications.verifySecret(app.appToken, app.secretToken!)).toBe(false)
    expect(json<AppJson>(await send('GET', `/api/applications/${app.appToken}`)).previousSecretExpiresAt).toBeNull()
  })

  it('keeps the replaced secret 1 hour by default, and retires it at once with graceMs 0 in the body or the query', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.UTC(2026, 0, 1))
    const { gate, send, json, register } = await setUp()
    const app = await register('Rotating')
    const graced = json<AppJson>(await send('POST', `/api/applications/${app.appToken}/secret`))
    expect(graced.previousSecretExpiresAt).toBe('2026-01-01T01:00:00.000Z')
    expect(await gate.applications.verifySecret(app.appToken, app.secretToken!)).toBe(true)
    // A leak: the secret in use and the one still in its grace both stop now.
    const leaked = await send('POST', `/api/applications/${app.appToken}/secret`, { body: { graceMs: 0 } })
    expect(leaked.status, leaked.body).toBe(200)
    const now = json<AppJson>(leaked)
    expect(now.previousSecretExpiresAt).toBeNull()
    expect(await gate.applications.verifySecret(app.appToken, graced.secretToken!)).toBe(false)
    expect(await gate.applications.verifySecret(app.appToken, app.secretToken!)).toBe(false)
    expect(await gate.applications.verifySecret(app.appToken, now.secretToken!)).toBe(true)
    const inQuery = json<AppJson>(await send('POST', `/api/applications/${app.appToken}/secret?graceMs=0`))
    expect(await gate.applications.verifySecret(app.appToken, now.secretToken!)).toBe(false)
    const asText = json<AppJson>(await send('POST', `/api/applications/${app.appToken}/secret`, { body: { graceMs: '600000' } }))
    expect(asText.previousSecretExpiresAt).toBe('2026-01-01T00:10:00.000Z')
    expect(await gate.applications.verifySecret(app.appToken, inQuery.secretToken!)).toBe(true)
  })

  it('refuses a graceMs that is not a whole number of ms up to 7 days with 400, and rotates nothing', async () => {
    const { gate, send, json, register } = await setUp()
    const app = await register('Rotating')
    for (const graceMs of [-1, 1.5, 604_800_001, 'soon', '', '1e3', true, { ms: 0 }]) {
      const refused = await send('POST', `/api/applications/${app.appToken}/secret`, { body: { graceMs } })
      expect(refused.status, JSON.stringify(graceMs)).toBe(400)
      expect(json<{ code: string; message: string }>(refused)).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/graceMs must be a whole number of milliseconds from 0|values are strings/) })
    }
    const twice = await send('POST', `/api/applications/${app.appToken}/secret?graceMs=0`, { body: { graceMs: 0 } })
    expect([twice.status, json<{ message: string }>(twice).message]).toEqual([400, 'graceMs was sent more than once'])
    expect((await send('POST', `/api/applications/${app.appToken}/secret?graceMs=later`)).status).toBe(400)
    expect(await gate.applications.verifySecret(app.appToken, app.secretToken!)).toBe(true)
    expect((await gate.applications.find(app.appToken))?.previousSecretExpiresAt).toBeNull()
  })

  it('gives the application’s usage by bucket, empty buckets included, and refuses a bad range with 400', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const hour = Date.UTC(2026, 0, 1, 10)
    vi.setSystemTime(hour + 60_000)
    const { gate, send, json, register } = await setUp()
    const app = await register('Busy')
    for (let i = 0; i < 3; i++) await gate.handle(coreRequest({ headers: { 'x-app-token': app.appToken } }))
    await gate.usage.flush()
    const usage = await send('GET', `/api/applications/${app.appToken}/usage?granularity=hour&from=${hour - 3_600_000}&to=${hour + 3_600_000}`)
    expect(usage.status).toBe(200)
    const series = json<{ appToken: string; granularity: string; buckets: Array<{ start: number; requests: number }> }>(usage)
    expect(series.appToken).toBe(app.appToken)
    expect(series.granularity).toBe('hour')
    expect(series.buckets.map((b) => [b.start, b.requests])).toEqual([
      [hour - 3_600_000, 0],
      [hour, 3],
    ])
    const iso = await send('GET', `/api/applications/${app.appToken}/usage?granularity=minute&from=2026-01-01T10:00:00Z&to=2026-01-01T10:02:00Z`)
    expect(json<{ buckets: Array<{ requests: number }> }>(iso).buckets.map((b) => b.requests)).toEqual([0, 3])
    for (const query of ['granularity=week', 'from=yesterday', `from=${hour}&to=${hour - 1}`, 'granularity=minute&from=0', 'to=1&to=2']) {
      const refused = await send('GET', `/api/applications/${app.appToken}/usage?${query}`)
      expect([query, refused.status, json<{ code: string }>(refused).code]).toEqual([query, 400, 'invalid_request'])
    }
  })

  it('holds 30 racing registrations to the cap: with room for 5, exactly 5 are made', async () => {
    const { gate, ada, send, json } = await setUp({ applications: { maxPerUser: 8, registrations: false } })
    for (let i = 0; i < 3; i++) await gate.applications.registerOwn({ ownerId: ada.id, name: `old ${i}` })
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => send('POST', '/api/applications', { body: { name: `racer ${i}` } })))
    expect(answers.filter((a) => a.status === 201)).toHaveLength(5)
    const refused = answers.filter((a) => a.status !== 201)
    expect(new Set(refused.map((a) => `${a.status} ${json<{ code: string }>(a).code}`))).toEqual(new Set(['409 application_limit_reached']))
    expect(await gate.applications.list({ ownerId: ada.id })).toHaveLength(8)
  })

  it('refuses registrations past the budget per user with 429 and Retry-After; another user still registers', async () => {
    const { send, json, register, asBob } = await setUp({ applications: { registrations: { limit: 2, windowMs: 3_600_000 } } })
    await register('one')
    await register('two')
    const third = await send('POST', '/api/applications', { body: { name: 'three' } })
    expect([third.status, json<{ code: string }>(third).code]).toEqual([429, 'too_many_requests'])
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0)
    await register('Bob’s', undefined, asBob)
  })

  it('serves nothing with applications: { path: false }, and moves with applications.path', async () => {
    const off = await setUp({ applications: { path: false } })
    const outcome = await off.gate.handle(coreRequest({ url: '/api/applications', headers: { authorization: basic('ada', PASSWORD), 'x-app-token': off.portal.appToken } }))
    expect(outcome.type).toBe('next')
    const moved = await setUp({ applications: { path: '/developer/apps' } })
    expect((await moved.send('GET', '/developer/apps')).status).toBe(200)
  })
})

describe('what a request to the self-service endpoints costs', () => {
  it('refuses a usage read of more than 1500 buckets with 400, before it reads the store', async () => {
    const { gate, send, json, register } = await setUp()
    const app = await register('Busy')
    const read = vi.spyOn(gate.store, 'getUsage')
    const now = Date.now()
    const refused = await send('GET', `/api/applications/${app.appToken}/usage?granularity=minute&from=${now - 9_999 * 60_000}&to=${now}`)
    expect([refused.status, json<{ code: string }>(refused).code]).toEqual([400, 'invalid_request'])
    expect(json<{ message: string }>(refused).message).toMatch(/at most 1500 buckets/)
    expect(read).not.toHaveBeenCalled()
    const day = await send('GET', `/api/applications/${app.appToken}/usage?granularity=minute&from=${now - 86_400_000}&to=${now}`)
    expect(day.status).toBe(200)
    expect(json<{ buckets: unknown[] }>(day).buckets.length).toBeLessThanOrEqual(1441)
  })

  it('counts a user’s requests against their own budget, a usage read by its size, and refuses with 429, Retry-After and RateLimit when it is spent', async () => {
    const { send, json, register, asBob } = await setUp({ selfServiceBudget: { limit: 20, windowMs: 60_000 } })
    const app = await register('Busy')
    const listed = await send('GET', '/api/applications')
    expect(listed.headers['ratelimit-policy']).toBe('"self-service";q=20;w=60')
    expect(listed.headers.ratelimit).toMatch(/^"self-service";r=18;t=\d+$/)
    const now = Date.now()
    // A day by the minute: 1 + 14 units.
    const day = await send('GET', `/api/applications/${app.appToken}/usage?granularity=minute&from=${now - 86_400_000 + 60_000}&to=${now}`)
    expect(day.status).toBe(200)
    expect(day.headers.ratelimit).toMatch(/^"self-service";r=3;t=\d+$/)
    const refused = await send('GET', `/api/applications/${app.appToken}/usage?granularity=minute&from=${now - 86_400_000 + 60_000}&to=${now}`)
    expect([refused.status, json<{ code: string }>(refused).code]).toEqual([429, 'too_many_requests'])
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
    expect(refused.headers['ratelimit-policy']).toBe('"self-service";q=20;w=60')
    expect(json<{ message: string }>(refused).message).toMatch(/per user/)
    // Another user's budget is their own.
    expect((await send('GET', '/api/applications', { as: asBob })).status).toBe(200)
  })

  it('serves a developer whose application is throttled, with its own app token or none, over Basic, and counts nothing in its usage', async () => {
    const { gate, send, json, register } = await setUp({ throttle: { application: { limit: 2, windowMs: 3_600_000 } } })
    const app = await register('Throttled')
    const api = () => gate.handle(coreRequest({ headers: { 'x-app-token': app.appToken } }))
    await api()
    await api()
    const throttled = await api()
    expect(throttled.type === 'respond' && throttled.response.status).toBe(429)
    const withItsToken = await send('GET', `/api/applications/${app.appToken}/usage?granularity=minute&from=${Date.now() - 600_000}`, { headers: { 'x-app-token': app.appToken } })
    expect(withItsToken.status, withItsToken.body).toBe(200)
    const withNone = await gate.handle(coreRequest({ url: `/api/applications/${app.appToken}/usage`, tls: true, headers: { authorization: basic('ada', PASSWORD) } }))
    expect(withNone.type === 'respond' && withNone.response.status).toBe(200)
    await gate.usage.flush()
    const series = json<{ buckets: Array<{ requests: number; throttled: number }> }>(await send('GET', `/api/applications/${app.appToken}/usage?granularity=minute&from=${Date.now() - 600_000}`))
    const total = series.buckets.reduce((sum, b) => ({ requests: sum.requests + b.requests, throttled: sum.throttled + b.throttled }), { requests: 0, throttled: 0 })
    expect(total).toEqual({ requests: 3, throttled: 1 })
  })
})

describe('a usage read when the store fails', () => {
  it('answers 503 service_unavailable through the store’s outage handling, never a 500, when the read times out', async () => {
    // A read that never answers, as a Redis busy past the timeout.
    const store = Object.assign(new MemoryStore(), { getUsage: () => new Promise<never>(() => {}) })
    const { gate, send, json, register } = await setUp({ store, storeTimeoutMs: 50 })
    const app = await register('Busy')
    const errors: unknown[] = []
    const outages: unknown[] = []
    gate.on('internalError', (event) => errors.push(event))
    gate.on('storeError', (event) => outages.push(event))
    const answer = await send('GET', `/api/applications/${app.appToken}/usage`)
    expect([answer.status, json<{ code: string }>(answer).code]).toEqual([503, 'service_unavailable'])
    expect(errors).toEqual([])
    expect(outages).toHaveLength(1)
    await expect(gate.usage.query({ appToken: app.appToken })).rejects.toMatchObject({ name: 'StoreError' })
  })
})

describe('the example portal’s developer settings page', () => {
  /** The page on an Express app of its own, Ada signed in on it; @returns a poster of the registration form. */
  async function pageSignedIn(options: GateOptions) {
    const { default: express } = await import('express')
    const { default: supertest } = await import('supertest')
    const { developerPages, PortalSessions } = await import('../examples/developer-pages.js')
    const { gate, ada, portal } = await setUp(options)
    // As behind a TLS-terminating proxy: the sign-in form is refused over plain http.
    const app = express().set('trust proxy', 'loopback').use(developerPages({ gate, sessions: new PortalSessions(), portalAppToken: portal.appToken }))
    const signedIn = await supertest(app).post('/login').set('x-forwarded-proto', 'https').type('form').send({ username: 'ada', password: PASSWORD }).expect(303)
    const cookie = String(signedIn.headers['set-cookie']).split(';')[0]!
    const page = await supertest(app).get('/profile/edit/developer_settings').set('cookie', cookie).expect(200)
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1]!
    const post = (name: string) => supertest(app).post('/profile/edit/developer_settings').set('cookie', cookie).type('form').send({ csrf, name, callbackPrefix: '' })
    return { gate, ada, post }
  }

  it('registers the application as the signed-in user’s, within their cap', async () => {
    const { gate, ada, post } = await pageSignedIn({ applications: { maxPerUser: 2 } })
    await post('Page app 1').expect(201)
    await post('Page app 2').expect(201)
    const refused = await post('Page app 3').expect(409)
    expect(refused.text).toMatch(/the most allowed/)
    expect((await gate.applications.list({ ownerId: ada.id })).map((a) => a.name)).toEqual(['Page app 1', 'Page app 2'])
  })

  it('obeys the registration budget, with Retry-After', async () => {
    const { post } = await pageSignedIn({ applications: { registrations: { limit: 1, windowMs: 3_600_000 } } })
    await post('Page app').expect(201)
    const refused = await post('One too many').expect(429)
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
  })
})
