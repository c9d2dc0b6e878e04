/**
 * Connected apps: grants recorded on consent and on `gate.tokens.issue`, listed with their
 * live tokens, revoked with every token, and consent asked again afterwards; the
 * `/oauth/grants` page with the consent page's rules. Over a real TLS server, with the
 * test browser keeping cookies.
 */
import request from 'supertest'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { nodeGate } from '../adapters/node.js'
import { createGate, MemoryStore, type GateOptions, type GateStore } from '../src/index.js'
import { listen, TEST_CERT, type RunningServer } from './adapters/servers.js'
import { asyncStore } from './support/broken-stores.js'
import { Browser, csrfOf, type Page } from './support/browser.js'

const PASSWORD = 'correct horse battery'
const PREFIX = 'https://transit.example/oauth/'
const REDIRECT = `${PREFIX}callback`

const running: RunningServer[] = []
afterEach(async () => {
  vi.useRealTimers()
  await Promise.all(running.splice(0).map((s) => s.close()))
})

async function start(options: GateOptions = {}, store: GateStore = new MemoryStore()) {
  const gate = createGate({ basic: { scrypt: { logN: 10 } }, throttle: false, ...options, store })
  const app = await gate.applications.register({ name: 'Transit <dashboard>', callbackPrefix: PREFIX })
  const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada Lovelace', email: 'ada@example.org' })
  const server = await listen(
    nodeGate(gate, (_req, res) => {
      res.statusCode = 404
      res.end()
    }),
    true,
  )
  running.push(server)
  const api = request(server.url)
  const authorizeUrl = `${server.url}/oauth/authorize?${new URLSearchParams({ client_id: app.appToken, response_type: 'code', redirect_uri: REDIRECT, state: 's' })}`
  const exchange = async (callback: string) => {
    const code = new URL(callback).searchParams.get('code') as string
    const res = await api
      .post('/oauth/access_token')
      .ca(TEST_CERT)
      .type('form')
      .send({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: app.appToken, client_secret: app.secretToken })
    return res
  }
  const currentUser = (accessToken: string) => api.get('/api/users/current.json').ca(TEST_CERT).set('authorization', `OAuth ${accessToken}`)
  return { gate, store, app, ada, server, api, authorizeUrl, exchange, currentUser }
}

/** Whether a page is the consent page. */
function isConsent(page: Page): boolean {
  return page.status === 200 && page.html.includes('value="approve"')
}

describe('connected apps', () => {
  it('lists an approved app with its token, revokes it, refuses the token, and asks for consent again', async () => {
    const { gate, app, ada, authorizeUrl, exchange, currentUser } = await start()
    const browser = new Browser()
    const callback = await browser.authorize(authorizeUrl, 'ada', PASSWORD)
    const issued = await exchange(callback)
    expect(issued.status).toBe(200)
    const accessToken = (issued.body as { access_token: string }).access_token
    await currentUser(accessToken).expect(200)

    const [listed] = await gate.grants.list(ada.id)
    expect(listed).toEqual({ appToken: app.appToken, name: 'Transit <dashboard>', firstAuthorizedAt: expect.any(Number), lastUsedAt: expect.any(Number), liveTokens: 1 })
    expect(await gate.grants.list(ada.id)).toHaveLength(1)

    expect(await gate.grants.revoke(ada.id, app.appToken)).toBe(true)
    expect((await currentUser(accessToken).expect(401)).body.code).toBe('invalid_token')
    expect(await gate.grants.list(ada.id)).toEqual([])
    expect(await gate.grants.revoke(ada.id, app.appToken)).toBe(false)

    // Still signed in: the next authorize goes straight to the consent page.
    expect(isConsent(await browser.get(authorizeUrl))).toBe(true)
  })

  it('refuses a code approved before the user revoked the app, and revokes the token it made', async () => {
    const { gate, store, app, ada, authorizeUrl, exchange } = await start()
    const callback = await new Browser().authorize(authorizeUrl, 'ada', PASSWORD)
    await gate.grants.revoke(ada.id, app.appToken)
    const res = await exchange(callback)
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringMatching(/revoked/) })
    expect(await store.listAccessTokens(ada.id)).toEqual([])
  })

  it('counts a token from gate.tokens.issue as a grant, and lists an app whose tokens outlive its grant', async () => {
    const { gate, store, app, ada } = await start()
    const other = await gate.applications.register({ name: 'Other' })
    const deleted = await gate.applications.register({ name: 'Deleted' })
    await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    await gate.tokens.issue({ userId: ada.id, appToken: other.appToken })
    await gate.tokens.issue({ userId: ada.id, appToken: deleted.appToken })
    // Deleted with the gate: its tokens are revoked and it is not listed.
    await gate.applications.delete(deleted.appToken)
    // Deleted behind the gate's back, grant and all: its live token is still listed, to be revoked.
    await store.deleteGrant(ada.id, other.appToken)
    await store.deleteApplication(other.appToken)
    const listed = await gate.grants.list(ada.id)
    // (Issued in the same millisecond, so not compared in order.)
    expect(listed.map((g) => [g.name, g.liveTokens]).sort((a, b) => Number(b[1]) - Number(a[1]))).toEqual([
      ['Transit <dashboard>', 2],
      [null, 1],
    ])
    expect(await gate.grants.revoke(ada.id, other.appToken)).toBe(true)
    expect((await gate.grants.list(ada.id)).map((g) => g.appToken)).toEqual([app.appToken])
  })

  it('moves lastUsedAt on token use at most once a day, in the background', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const start0 = Date.UTC(2026, 0, 5, 9)
    vi.setSystemTime(start0)
    const { gate, app, ada, currentUser } = await start({ oauth: { accessTokenTtlMs: 7 * 86_400_000 } })
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    const use = async (at: number) => {
      vi.setSystemTime(at)
      await currentUser(accessToken).expect(200)
      await new Promise((resolve) => setImmediate(resolve))
    }
    await use(start0 + 3_600_000)
    expect((await gate.grants.list(ada.id))[0]?.lastUsedAt).toBe(start0)
    await use(start0 + 86_400_000 + 1000)
    expect((await gate.grants.list(ada.id))[0]).toMatchObject({ firstAuthorizedAt: start0, lastUsedAt: start0 + 86_400_000 + 1000 })
  })

  it('stays revoked when the user revokes the app while a use of its token is being noted, and asks for consent again', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const day0 = Date.UTC(2026, 0, 5, 9)
    vi.setSystemTime(day0)
    // The user revokes the app at the worst moment: after the gate has read the grant to
    // note a use of the token, before it writes the new last use.
    const inner = new MemoryStore()
    let revokeDuringRead: (() => Promise<unknown>) | undefined
    let grantWrites = 0
    const store = asyncStore(inner, {
      async getGrant(userId: string, appToken: string) {
        const grant = inner.getGrant(userId, appToken)
        const revoke = revokeDuringRead
        revokeDuringRead = undefined
        await revoke?.()
        return grant
      },
      async recordGrant(userId: string, appToken: string, at: number) {
        inner.recordGrant(userId, appToken, at)
        grantWrites++
      },
      async touchGrant(userId: string, appToken: string, at: number) {
        inner.touchGrant(userId, appToken, at)
        grantWrites++
      },
    })
    const { gate, app, ada, authorizeUrl, currentUser } = await start({ oauth: { rememberConsent: true, accessTokenTtlMs: 7 * 86_400_000 } }, store)
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    // A day later, the use is worth noting.
    vi.setSystemTime(day0 + 86_400_000 + 1000)
    revokeDuringRead = () => gate.grants.revoke(ada.id, app.appToken)
    const writesBefore = grantWrites
    await currentUser(accessToken).expect(200)
    // The use is noted in the background: wait for its write.
    await expect.poll(() => grantWrites).toBeGreaterThan(writesBefore)

    expect(await gate.grants.list(ada.id)).toEqual([])
    expect(inner.getGrant(ada.id, app.appToken)).toBeUndefined()
    expect((await currentUser(accessToken).expect(401)).body.code).toBe('invalid_token')
    // The app does not get a code without the user saying so again.
    expect(isConsent(await new Browser().signIn(authorizeUrl, 'ada', PASSWORD))).toBe(true)
  })
})

describe('remembered consent (oauth.rememberConsent)', () => {
  it('asks every time by default', async () => {
    const { authorizeUrl } = await start()
    const browser = new Browser()
    await browser.authorize(authorizeUrl, 'ada', PASSWORD)
    expect(isConsent(await browser.get(authorizeUrl))).toBe(true)
  })

  it('skips the consent page for an app the user authorized, and asks again once it is revoked', async () => {
    const { gate, app, ada, authorizeUrl, exchange } = await start({ oauth: { rememberConsent: true } })
    const browser = new Browser()
    await browser.authorize(authorizeUrl, 'ada', PASSWORD)
    const again = await browser.get(authorizeUrl)
    expect(again.status).toBe(303)
    expect(again.location?.startsWith(`${REDIRECT}?code=`)).toBe(true)
    expect((await exchange(again.location as string)).status).toBe(200)

    await gate.grants.revoke(ada.id, app.appToken)
    expect(isConsent(await browser.get(authorizeUrl))).toBe(true)
  })
})

describe('the connected-apps page', () => {
  async function signedIn(options: GateOptions = {}) {
    const setup = await start(options)
    const browser = new Browser()
    const login = await browser.get(`${setup.server.url}/oauth/grants`)
    expect(login.html).toContain('name="password"')
    const posted = await browser.post(login.url, { csrf_token: csrfOf(login), username: 'ada', password: PASSWORD, action: 'login' })
    expect(posted.status).toBe(303)
    return { ...setup, browser, page: () => browser.get(posted.location as string) }
  }

  it('shows the apps with the consent page’s headers, and revokes one with its form', async () => {
    const { gate, app, ada, browser, page } = await signedIn()
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    const shown = await page()
    expect(shown.status).toBe(200)
    expect(shown.html).toContain('Transit &lt;dashboard&gt;')
    expect(shown.html).toContain('1 active token')
    expect(shown.headers.get('x-frame-options')).toBe('DENY')
    expect(shown.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/)
    expect(shown.headers.get('content-security-policy')).toMatch(/form-action 'self';/)
    expect(shown.headers.get('cache-control')).toBe('no-store')

    const posted = await browser.post(shown.url, { csrf_token: csrfOf(shown), action: 'revoke', app_token: app.appToken })
    expect(posted.status).toBe(303)
    expect(posted.location).toBe(shown.url)
    expect((await page()).html).toContain('No application has access to your account.')
    expect(await gate.tokens.revoke(accessToken)).toBe(false) // already revoked
  })

  it('ends all of a third-party app’s access when the user revokes it: its token could mint no API key and revoke no other app', async () => {
    const { gate, api, app, ada, authorizeUrl, exchange, currentUser, server } = await start()
    const other = await gate.applications.register({ name: 'Other app' })
    await gate.tokens.issue({ userId: ada.id, appToken: other.appToken })
    const browser = new Browser()
    const issued = await exchange(await browser.authorize(authorizeUrl, 'ada', PASSWORD))
    const accessToken = (issued.body as { access_token: string }).access_token
    await currentUser(accessToken).expect(200)

    // The application tries to keep a way in, or to push the others out: all refused.
    const asApp = { authorization: `OAuth ${accessToken}` }
    const tries = [
      await api.post('/api/api_keys').ca(TEST_CERT).set(asApp).send({ keyName: 'backup access' }),
      await api.get('/api/api_keys').ca(TEST_CERT).set(asApp),
      await api.get('/api/oauth/grants').ca(TEST_CERT).set(asApp),
      await api.delete(`/api/oauth/grants/${other.appToken}`).ca(TEST_CERT).set(asApp),
    ]
    expect(tries.map((res) => [res.status, (res.body as { code: string }).code])).toEqual(Array(4).fill([403, 'first_party_credentials_required']))
    expect(await gate.apiKeys.list(ada.id)).toEqual([])

    // The user revokes it on the connected-apps page (signed in by the authorize flow).
    const page = await browser.get(`${server.url}/oauth/grants`)
    expect(page.html).toContain('Transit &lt;dashboard&gt;')
    expect(page.html).toContain('Other app')
    const revoked = await browser.post(page.url, { csrf_token: csrfOf(page), action: 'revoke', app_token: app.appToken })
    expect(revoked.status).toBe(303)
    const after = await browser.get(page.url)
    expect(after.html).not.toContain('Transit &lt;dashboard&gt;')
    expect(after.html).toContain('Other app')
    // Nothing of the application works any more, and it left nothing behind.
    expect((await currentUser(accessToken).expect(401)).body.code).toBe('invalid_token')
    expect(await gate.apiKeys.list(ada.id)).toEqual([])
  })

  it('refuses a post without the CSRF token, or from another site', async () => {
    const { gate, app, ada, browser, page } = await signedIn()
    await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    const shown = await page()
    const forged = await browser.post(shown.url, { csrf_token: 'x'.repeat(43), action: 'revoke', app_token: app.appToken })
    expect(forged.status).toBe(403)
    const crossSite = await browser.post(shown.url, { csrf_token: csrfOf(shown), action: 'revoke', app_token: app.appToken }, { 'sec-fetch-site': 'cross-site' })
    expect(crossSite.status).toBe(403)
    expect(await gate.grants.list(ada.id)).toHaveLength(1)
  })

  it('says so after a wrong password, signs out, and is served over https only', async () => {
    const { server, browser, page } = await signedIn()
    const shown = await page()
    const out = await browser.post(shown.url, { csrf_token: csrfOf(shown), action: 'logout' })
    expect(out.status).toBe(303)
    const login = await browser.get(out.location as string)
    expect(login.html).toContain('name="password"')
    const wrong = await browser.post(login.url, { csrf_token: csrfOf(login), username: 'ada', password: 'nope', action: 'login' })
    expect(wrong.status).toBe(401)
    expect(wrong.html).toContain('Wrong username or password.')
    const plainGate = createGate()
    const plain = await listen(nodeGate(plainGate, (_req, res) => res.end()))
    running.push(plain)
    expect((await request(plain.url).get('/oauth/grants')).status).toBe(403)
    expect(server.url.startsWith('https:')).toBe(true)
  })

  it('signs nobody in with an API key id and secret typed into its sign-in form', async () => {
    const { gate, ada, server } = await start()
    const key = await gate.apiKeys.create(ada.id, { name: 'etl' })
    const browser = new Browser()
    const login = await browser.get(`${server.url}/oauth/grants`)
    const refused = await browser.post(login.url, { csrf_token: csrfOf(login), username: key.keyId, password: key.keySecret, action: 'login' })
    expect(refused.status).toBe(401)
    expect(refused.html).toContain('An API key cannot sign in')
    expect(browser.cookies.has('__Host-odg-session')).toBe(false)
    expect((await browser.get(login.url)).html).toContain('name="password"')
  })

  it('sends a signed-out user to the host’s login page, and moves or turns off by option', async () => {
    const { api } = await start({ oauth: { loginUrl: '/login' }, connectedApps: { page: '/account/apps', path: false } })
    const res = await api.get('/account/apps').ca(TEST_CERT).expect(303)
    expect(res.headers.location).toBe('/login?return_to=%2Faccount%2Fapps')
    await api.get('/oauth/grants').ca(TEST_CERT).expect(404)
    await api.get('/api/oauth/grants').ca(TEST_CERT).expect(404)
  })
})
