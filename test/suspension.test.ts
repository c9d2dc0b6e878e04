/**
 * Suspending an application (`gate.applications.suspend` and `resume`): every request that
 * counts against it is refused 403 `application_suspended` with the operator's reason, the
 * authorize and token endpoints refuse it, nothing of it is deleted, and resuming gives
 * everything back at once, on every instance of a shared store.
 */
import { Redis } from 'ioredis'
import request from 'supertest'
import { afterEach, describe, expect, it } from 'vitest'
import { nodeGate } from '../adapters/node.js'
import { createGate, MemoryStore, NotFoundError, type ApplicationResumedEvent, type ApplicationSuspendedEvent, type GateOptions, type GateOutcome, type GateStore } from '../src/index.js'
import { headerValue } from '../src/http/request.js'
import { sha256 } from '../src/secrets/tokens.js'
import { RedisStore } from '../src/store/redis/store.js'
import { listen, TEST_CERT, type RunningServer } from './adapters/servers.js'
import { deletePrefix, randomPrefix, REDIS_URL, sharedRedisAvailable } from './redis/servers.js'
import { Browser, csrfOf } from './support/browser.js'
import { coreRequest } from './support/requests.js'

const PASSWORD = 'correct horse battery'
const PREFIX = 'https://transit.example/oauth/'
const REDIRECT = `${PREFIX}callback`
const REASON = 'Scraping far beyond its limit; write to data@city.example'
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

const redis = await sharedRedisAvailable('suspension over Redis')
const running: RunningServer[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()))
})

/** A gate with Ada, her API key, the application under test and a bystander, and an access token Ada gave the application. */
async function setUp(options: GateOptions = {}, store: GateStore = new MemoryStore()) {
  const gate = createGate({
    store,
    basic: { scrypt: { logN: 10 } },
    usage: { flushIntervalMs: 3_600_000 },
    ...options,
    oauth: { authenticateUser: (req) => headerValue(req.headers, 'x-signed-in'), ...(options.oauth as object) },
  })
  const app = await gate.applications.register({ name: 'Transit', callbackPrefix: PREFIX })
  const other = await gate.applications.register({ name: 'Bystander' })
  const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada Lovelace', email: 'ada@example.org' })
  const key = await gate.apiKeys.create(ada.id, { name: 'nightly' })
  const token = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
  const ask = async (headers: Record<string, string>, url?: string): Promise<GateOutcome> => gate.handle(coreRequest({ headers, ...(url === undefined ? {} : { url }) }))
  /** Every way a request counts against the application, by name. */
  const ways: Record<string, () => Promise<GateOutcome>> = {
    'its app token': () => ask({ 'x-app-token': app.appToken }),
    'its app token in the query': () => ask({}, `/resource/abcd-1234.json?$$app_token=${app.appToken}`),
    'Basic with its app token': () => ask({ 'x-app-token': app.appToken, authorization: basic('ada', PASSWORD) }),
    'an API key with its app token': () => ask({ 'x-app-token': app.appToken, authorization: basic(key.keyId, key.keySecret) }),
    'its OAuth token alone': () => ask({ authorization: `OAuth ${token.accessToken}` }),
    'its OAuth token as Bearer': () => ask({ authorization: `Bearer ${token.accessToken}` }),
    'its OAuth token with its app token': () => ask({ 'x-app-token': app.appToken, authorization: `OAuth ${token.accessToken}` }),
  }
  return { gate, store, app, other, ada, key, token, ask, ways }
}

function expectSuspended(outcome: GateOutcome, reason = REASON): void {
  if (outcome.type !== 'respond') throw new Error('the request was let through')
  expect(outcome.response.status).toBe(403)
  expect(outcome.response.headers['x-error-code']).toBe('application_suspended')
  const body = JSON.parse(outcome.response.body) as { code: string; message: string }
  expect(body.code).toBe('application_suspended')
  expect(body.message).toContain(reason)
}

describe('a suspended application', () => {
  it.each(['application', 'anonymous'] as const)(
    'is refused 403 application_suspended with the reason, by its app token, Basic with it and its OAuth tokens, and served again once resumed (OAuth tokens on the %s budget)',
    async (oauthTokenBudget) => {
      const { gate, app, other, ask, ways } = await setUp({ throttle: { oauthTokenBudget } })
      for (const [way, send] of Object.entries(ways)) expect((await send()).type, way).toBe('next')

      await gate.applications.suspend(app.appToken, { reason: REASON })
      for (const [way, send] of Object.entries(ways)) {
        const outcome = await send()
        expect(outcome.type, way).toBe('respond')
        expectSuspended(outcome)
      }
      // Another application, and a request without any, are served as before.
      expect((await ask({ 'x-app-token': other.appToken })).type).toBe('next')
      expect((await ask({})).type).toBe('next')

      await gate.applications.resume(app.appToken)
      for (const [way, send] of Object.entries(ways)) expect((await send()).type, way).toBe('next')
      expect(await ways['its app token']!()).toMatchObject({ context: { application: { appToken: app.appToken, suspended: null } } })
    },
  )

  it.skipIf(!redis)('is refused on the request path of a store that answers with promises (the application cache and one-trip lookups)', async () => {
    const own = randomPrefix('suspend-path')
    const store = new RedisStore({ url: REDIS_URL, prefix: own })
    const { gate, app, ways } = await setUp({}, store)
    try {
      // Twice, so the second request of each way finds the application and the token in this process's caches.
      for (const send of [...Object.values(ways), ...Object.values(ways)]) expect((await send()).type).toBe('next')
      await gate.applications.suspend(app.appToken, { reason: REASON })
      for (const [way, send] of Object.entries(ways)) {
        const outcome = await send()
        expect(outcome.type, way).toBe('respond')
        expectSuspended(outcome)
      }
      await gate.applications.resume(app.appToken)
      for (const [way, send] of Object.entries(ways)) expect((await send()).type, way).toBe('next')
    } finally {
      await gate.close()
      const admin = new Redis(REDIS_URL)
      await deletePrefix(admin, own)
      await admin.quit()
    }
  })

  it('keeps its usage, grants, tokens, API keys and secret: nothing is deleted', async () => {
    const { gate, store, app, ada, token, ways } = await setUp()
    await store.recordGrant(ada.id, app.appToken, Date.now())
    for (let i = 0; i < 3; i++) await ways['its app token']!()
    await gate.usage.flush()
    const range = { appToken: app.appToken, granularity: 'hour' as const, from: Date.now() - 3_600_000, to: Date.now() + 60_000 }
    const counted = async () => (await gate.usage.query(range)).buckets.reduce((sum, b) => sum + b.requests, 0)
    expect(await counted()).toBe(3)

    await gate.applications.suspend(app.appToken, { reason: REASON })
    expect((await gate.applications.find(app.appToken))?.suspended).toEqual({ reason: REASON, since: expect.any(Number) })
    expect((await gate.grants.list(ada.id)).map((g) => g.appToken)).toEqual([app.appToken])
    expect(await gate.applications.verifySecret(app.appToken, app.secretToken)).toBe(true)
    expect((await store.getAccessToken(sha256(token.accessToken)))?.revokedAt).toBeNull()
    expect((await gate.apiKeys.list(ada.id)).map((k) => k.revokedAt)).toEqual([null])
    expect(await counted()).toBe(3)

    await gate.applications.resume(app.appToken)
    expect((await gate.applications.find(app.appToken))?.suspended).toBeNull()
    expect((await ways['its OAuth token alone']!()).type).toBe('next')
    expect((await ways['an API key with its app token']!()).type).toBe('next')
  })

  it.skipIf(!redis)('is refused on every instance of a shared store within its change notice, and served again by each once resumed', async () => {
    const own = randomPrefix('suspend-instances')
    // Each instance keeps applications for a minute: only the change notice makes it forget.
    const one = await setUp({ applicationCacheMs: 60_000 }, new RedisStore({ url: REDIS_URL, prefix: own }))
    const two = createGate({ store: new RedisStore({ url: REDIS_URL, prefix: own }), applicationCacheMs: 60_000, usage: false })
    const onTwo = () => two.handle(coreRequest({ headers: { 'x-app-token': one.app.appToken } }))
    try {
      expect((await onTwo()).type).toBe('next')
      await one.gate.applications.suspend(one.app.appToken, { reason: REASON })
      await expect.poll(async () => (await onTwo()).type, { timeout: 5000 }).toBe('respond')
      expectSuspended(await onTwo())
      await one.gate.applications.resume(one.app.appToken)
      await expect.poll(async () => (await onTwo()).type, { timeout: 5000 }).toBe('next')
    } finally {
      await one.gate.close()
      await two.close()
      const admin = new Redis(REDIS_URL)
      await deletePrefix(admin, own)
      await admin.quit()
    }
  })
})

describe('the OAuth endpoints and a suspended application', () => {
  async function server() {
    const setup = await setUp()
    const listening = await listen(nodeGate(setup.gate, (_req, res) => res.end('handler')), true)
    running.push(listening)
    const authorizeUrl = `${listening.url}/oauth/authorize?${new URLSearchParams({ client_id: setup.app.appToken, response_type: 'code', redirect_uri: REDIRECT, state: 'xyz' })}`
    const exchange = (code: string) =>
      request(listening.url)
        .post('/oauth/access_token')
        .ca(TEST_CERT)
        .type('form')
        .send({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: setup.app.appToken, client_secret: setup.app.secretToken })
    return { ...setup, authorizeUrl, exchange }
  }

  it('shows the person an error page, never a redirect, and starts no grant: on opening the link and on an approval posted after the suspension', async () => {
    const { gate, app, ada, authorizeUrl } = await server()
    const browser = new Browser()
    const consent = await browser.get(authorizeUrl, { 'x-signed-in': ada.id })
    expect(consent.html).toContain('value="approve"')
    const grantsBefore = await gate.grants.list(ada.id)

    await gate.applications.suspend(app.appToken, { reason: 'Phishing <reported>' })
    const approved = await browser.post(consent.url, { csrf_token: csrfOf(consent), action: 'approve' }, { 'x-signed-in': ada.id })
    expect(approved.status).toBe(403)
    expect(approved.location).toBeUndefined()
    expect(approved.html).toContain('Transit is suspended')
    expect(approved.html).toContain('Phishing &lt;reported&gt;')
    expect(approved.html).not.toContain('code=')
    expect(await gate.grants.list(ada.id)).toEqual(grantsBefore)

    const opened = await new Browser().get(authorizeUrl)
    expect(opened.status).toBe(403)
    expect(opened.location).toBeUndefined()
    expect(opened.html).not.toContain('name="password"')

    await gate.applications.resume(app.appToken)
    expect((await new Browser().get(authorizeUrl, { 'x-signed-in': ada.id })).html).toContain('value="approve"')
  })

  it('refuses to exchange a code for it with unauthorized_client and the reason, and leaves the code for after the resumption', async () => {
    const { gate, app, ada, authorizeUrl, exchange } = await server()
    const browser = new Browser()
    const consent = await browser.get(authorizeUrl, { 'x-signed-in': ada.id })
    const approved = await browser.post(consent.url, { csrf_token: csrfOf(consent), action: 'approve' }, { 'x-signed-in': ada.id })
    const code = new URL(approved.location as string).searchParams.get('code') as string
    expect(code).toEqual(expect.any(String))

    await gate.applications.suspend(app.appToken, { reason: REASON })
    const refused = await exchange(code)
    expect(refused.status).toBe(400)
    expect(refused.body).toEqual({ error: 'unauthorized_client', error_description: `This application is suspended: ${REASON}` })

    await gate.applications.resume(app.appToken)
    const issued = await exchange(code)
    expect(issued.status).toBe(200)
    expect(issued.body.access_token).toEqual(expect.any(String))
  })
})

describe('gate.applications.suspend and resume', () => {
  it('refuses a missing or unshowable reason with a TypeError naming it, and changes nothing', async () => {
    const { gate, app } = await setUp()
    const bad: unknown[] = [undefined, null, 'just a string', {}, { reason: '' }, { reason: '   ' }, { reason: 42 }, { reason: 'x'.repeat(501) }, { reason: 'line\nbreak' }, { reason: 'evil\u202eoverride' }, { reason: 'nul\u0000' }, { reason: 'ok', until: 5 }]
    for (const options of bad) {
      await expect(gate.applications.suspend(app.appToken, options as never), JSON.stringify(options)).rejects.toThrow(TypeError)
    }
    await expect(gate.applications.suspend(app.appToken, { reason: '' })).rejects.toThrow(/reason must be a non-empty string of at most 500 characters/)
    await expect(gate.applications.suspend(app.appToken, { reason: 'a\u202eb' })).rejects.toThrow(/reason must not hold control, format or line separator characters.*U\+202E/)
    await expect(gate.applications.suspend(app.appToken, { reason: 'ok', until: 5 } as never)).rejects.toThrow(/until/)
    expect((await gate.applications.find(app.appToken))?.suspended).toBeNull()
    // 500 characters, trimmed, and a joiner between letters, are fine.
    const long = 'x'.repeat(498)
    expect((await gate.applications.suspend(app.appToken, { reason: ` ${long} ` })).suspended?.reason).toBe(long)
    expect((await gate.applications.suspend(app.appToken, { reason: 'Ein Beispiel 👩\u200d💻' })).suspended?.reason).toBe('Ein Beispiel 👩\u200d💻')
  })

  it('throws NotFoundError for an unknown app token, as update does', async () => {
    const { gate } = await setUp()
    await expect(gate.applications.suspend('nope', { reason: REASON })).rejects.toThrow(NotFoundError)
    await expect(gate.applications.resume('nope')).rejects.toThrow(NotFoundError)
    await expect(gate.applications.update('nope', { limit: 5 })).rejects.toThrow(NotFoundError)
  })

  it('replaces the reason of a suspended application and keeps when it began; resumes once; tells both in events and log lines', async () => {
    const lines: Array<[string, Record<string, unknown>]> = []
    const logger = { error: () => {}, warn: () => {}, debug: () => {}, info: (message: string, fields: Record<string, unknown>) => void lines.push([message, fields]) }
    const { gate, app, ask } = await setUp({ logger })
    const suspended: ApplicationSuspendedEvent[] = []
    const resumed: ApplicationResumedEvent[] = []
    gate.on('applicationSuspended', (e) => suspended.push(e))
    gate.on('applicationResumed', (e) => resumed.push(e))

    const first = await gate.applications.suspend(app.appToken, { reason: 'First reason' })
    const since = first.suspended?.since as number
    expect(since).toBeGreaterThan(Date.now() - 5000)
    await new Promise((resolve) => setTimeout(resolve, 5))
    const second = await gate.applications.suspend(app.appToken, { reason: 'Second reason' })
    expect(second.suspended).toEqual({ reason: 'Second reason', since })
    expectSuspended(await ask({ 'x-app-token': app.appToken }), 'Second reason')
    expect(suspended).toEqual([
      { appToken: app.appToken, reason: 'First reason', since, previousReason: null },
      { appToken: app.appToken, reason: 'Second reason', since, previousReason: 'First reason' },
    ])

    expect((await gate.applications.resume(app.appToken)).suspended).toBeNull()
    expect((await gate.applications.resume(app.appToken)).suspended).toBeNull()
    expect(resumed).toEqual([{ appToken: app.appToken, reason: 'Second reason', since }])
    expect(lines.map(([, fields]) => fields.code)).toEqual(['ODG_APPLICATION_SUSPENDED', 'ODG_APPLICATION_SUSPENDED', 'ODG_APPLICATION_RESUMED'])
    expect(lines[1]?.[0]).toContain('Second reason')
  })

  it('refuses to report a suspension the store did not keep', async () => {
    class ForgetfulStore extends MemoryStore {
      override updateApplication(...[appToken, patch]: Parameters<MemoryStore['updateApplication']>) {
        const rest = { ...patch }
        delete rest.suspendedAt
        delete rest.suspensionReason
        return super.updateApplication(appToken, rest)
      }
    }
    const { gate, app } = await setUp({}, new ForgetfulStore())
    await expect(gate.applications.suspend(app.appToken, { reason: REASON })).rejects.toThrow(/did not keep suspendedAt and suspensionReason/)
  })
})

describe("the owner's view of a suspension", () => {
  async function owned() {
    const setup = await setUp()
    const mine = await setup.gate.applications.registerOwn({ ownerId: setup.ada.id, name: 'Mine' })
    const send = async (method: string, url: string, body?: unknown) => {
      const outcome = await setup.gate.handle(coreRequest({ method, url, headers: { authorization: basic('ada', PASSWORD) }, readBody: async () => ({ kind: 'parsed', value: body }) }))
      if (outcome.type !== 'respond') throw new Error('let through')
      return { status: outcome.response.status, body: JSON.parse(outcome.response.body || 'null') as Record<string, unknown> }
    }
    return { ...setup, mine, send }
  }

  it('lists the state, the reason and when it began, and null while active', async () => {
    const { gate, mine, send } = await owned()
    expect((await send('GET', `/api/applications/${mine.appToken}`)).body).toMatchObject({ suspended: null })
    const { suspended } = await gate.applications.suspend(mine.appToken, { reason: REASON })
    const listed = (await send('GET', '/api/applications')).body as unknown as Array<Record<string, unknown>>
    expect(listed.map((a) => a.suspended)).toEqual([{ reason: REASON, since: new Date(suspended!.since).toISOString() }])
    expect((await send('GET', `/api/applications/${mine.appToken}`)).body).toMatchObject({ suspended: { reason: REASON } })
  })

  it('cannot lift or change it: a PATCH naming suspended is refused and changes nothing', async () => {
    const { gate, mine, send } = await owned()
    await gate.applications.suspend(mine.appToken, { reason: REASON })
    for (const body of [{ suspended: '' }, { suspended: 'false', name: 'Renamed' }]) {
      expect(await send('PATCH', `/api/applications/${mine.appToken}`, body)).toMatchObject({ status: 403, body: { code: 'permission_denied' } })
    }
    // A value that is not a string is refused as any such body is.
    expect(await send('PATCH', `/api/applications/${mine.appToken}`, { suspended: null })).toMatchObject({ status: 400, body: { code: 'invalid_request' } })
    expect(await gate.applications.find(mine.appToken)).toMatchObject({ name: 'Mine', suspended: { reason: REASON } })
    // What the owner may change, they still may.
    expect(await send('PATCH', `/api/applications/${mine.appToken}`, { name: 'Renamed' })).toMatchObject({ status: 200, body: { name: 'Renamed', suspended: { reason: REASON } } })
  })

  it('is shown on the example portal\'s developer page, with the reason and when it began, and no form to lift it', async () => {
    const { default: express } = await import('express')
    const { default: supertest } = await import('supertest')
    const { developerPages, PortalSessions } = await import('../examples/developer-pages.js')
    const { gate, mine, other } = await owned()
    const portal = express().set('trust proxy', 'loopback').use(developerPages({ gate, sessions: new PortalSessions(), portalAppToken: other.appToken }))
    const signedIn = await supertest(portal).post('/login').set('x-forwarded-proto', 'https').type('form').send({ username: 'ada', password: PASSWORD }).expect(303)
    const cookie = String(signedIn.headers['set-cookie']).split(';')[0]!
    const page = async () => (await supertest(portal).get('/profile/edit/developer_settings').set('cookie', cookie).expect(200)).text
    expect(await page()).not.toContain('Suspended')
    const { suspended } = await gate.applications.suspend(mine.appToken, { reason: 'Phishing <reported>' })
    const shown = await page()
    expect(shown).toContain(`<time datetime="${new Date(suspended!.since).toISOString()}">`)
    expect(shown).not.toMatch(/action="[^"]*(resume|suspend)/)
    expect(shown).toMatch(/<strong>Suspended<\/strong> by the operators of this portal since .*: Phishing &#60;reported&#62;\./)
    await gate.applications.resume(mine.appToken)
    expect(await page()).not.toContain('Suspended')
  })
})
