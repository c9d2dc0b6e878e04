/**
 * The authorization server's rules, one by one (SECURITY.md, the OAuth 2.0
 * checklist), over a real TLS server with supertest and, where cookies matter, the test
 * browser.
 */
import request from 'supertest'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { nodeGate } from '../adapters/node.js'
import { createGate, MemoryStore, type CodeReplayedEvent, type GateOptions } from '../src/index.js'
import { headerValue } from '../src/http/request.js'
import { sha256 } from '../src/secrets/tokens.js'
import { listen, TEST_CERT, type RunningServer } from './adapters/servers.js'
import { Browser, csrfOf } from './support/browser.js'
import { coreRequest } from './support/requests.js'
import { captureWarnings } from './support/warnings.js'

const PASSWORD = 'correct horse battery'
const PREFIX = 'https://transit.example/oauth/'
const REDIRECT = `${PREFIX}callback?tab=live`

/** A store whose code writes can be made to fail, for the failure redirects. */
class CodeFailingStore extends MemoryStore {
  failCodes = false
  override insertAuthorizationCode(...args: Parameters<MemoryStore['insertAuthorizationCode']>): void {
    if (this.failCodes) throw new Error('disk full')
    super.insertAuthorizationCode(...args)
  }
  /** Runs once, right after the next getUser has read its answer: a deletion racing a request. */
  afterGetUser: (() => void) | undefined
  override getUser(...args: Parameters<MemoryStore['getUser']>): ReturnType<MemoryStore['getUser']> {
    const user = super.getUser(...args)
    const race = this.afterGetUser
    this.afterGetUser = undefined
    race?.()
    return user
  }
}

const running: RunningServer[] = []
afterEach(async () => {
  vi.useRealTimers()
  await Promise.all(running.splice(0).map((s) => s.close()))
})

/**
 * A gate on a TLS server. The header `x-signed-in: <user id>` plays the host's own
 * session through `oauth.authenticateUser`, so most tests need no login dance.
 */
async function start(options: GateOptions = {}, tls = true) {
  const store = (options.store as CodeFailingStore | undefined) ?? new CodeFailingStore()
  const gate = createGate({
    basic: { scrypt: { logN: 10 } },
    ...options,
    store,
    oauth: { authenticateUser: (req) => headerValue(req.headers, 'x-signed-in'), ...options.oauth },
  })
  const app = await gate.applications.register({ name: 'Transit <dashboard>', callbackPrefix: PREFIX })
  const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada Lovelace', email: 'ada@example.org' })
  const server = await listen(
    nodeGate(gate, (_req, res) => {
      res.statusCode = 404
      res.end()
    }),
    tls,
  )
  running.push(server)
  const http = request(server.url)
  const get = (path: string) => (tls ? http.get(path).ca(TEST_CERT) : http.get(path))
  const post = (path: string) => (tls ? http.post(path).ca(TEST_CERT) : http.post(path))
  const authorizeUrl = (params: Record<string, string> = {}, omit: string[] = []) => {
    const all: Record<string, string> = { client_id: app.appToken, response_type: 'code', redirect_uri: REDIRECT, state: 'xyz', ...params }
    for (const name of omit) delete all[name]
    return `/oauth/authorize?${new URLSearchParams(all)}`
  }
  /** The consent page for ada, then Allow: the code on the callback. */
  const approve = async (url: string, as = ada.id) => {
    const browser = new Browser()
    const consent = await browser.get(`${server.url}${url}`, { 'x-signed-in': as })
    const posted = await browser.post(consent.url, { csrf_token: csrfOf(consent), action: 'approve' }, { 'x-signed-in': as })
    return new URL(posted.location as string)
  }
  const exchange = (fields: Record<string, string>) =>
    post('/oauth/access_token')
      .type('form')
      .send({ grant_type: 'authorization_code', redirect_uri: REDIRECT, client_id: app.appToken, client_secret: app.secretToken, ...fields })
  return { gate, store, app, ada, server, get, post, authorizeUrl, approve, exchange }
}

/** Every authorize response that shows a page to the user instead of redirecting. */
function expectErrorPage(res: request.Response, status: number, text: RegExp) {
  expect(res.status).toBe(status)
  expect(res.headers.location).toBeUndefined()
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
  expect(res.text).toMatch(text)
}

describe('authorize: client and redirect_uri problems are shown, never redirected', () => {
  it('shows an error page for an unknown, missing or OAuth-less client', async () => {
    const { gate, get, authorizeUrl, ada } = await start()
    expectErrorPage(await get(authorizeUrl({ client_id: 'no-such-client' })).set('x-signed-in', ada.id), 400, /No application is registered with this client_id/)
    expectErrorPage(await get(authorizeUrl({}, ['client_id'])).set('x-signed-in', ada.id), 400, /has no client_id/)
    expectErrorPage(await get(authorizeUrl({ client_id: '' })).set('x-signed-in', ada.id), 400, /has no client_id/)
    const plain = await gate.applications.register({ name: 'No OAuth' })
    expectErrorPage(await get(authorizeUrl({ client_id: plain.appToken })).set('x-signed-in', ada.id), 400, /has no Callback Prefix/)
  })

  it.each([
    ['http://transit.example/oauth/callback', 'does not use https'],
    ['https://transit.example.evil.net/oauth/callback', 'host or port differ'],
    ['https://transit.example/oauth/../admin', 'dot segments'],
    ['https://transit.example/oauth/callback#x', 'fragment'],
    ['https://u@transit.example/oauth/callback', 'credentials'],
    ['https://transit.example/elsewhere', 'does not start with'],
    ['https://transit.example/oauth/caf\u00e9', 'not percent-encoded'],
  ])('shows an error page for redirect_uri %s', async (redirectUri, why) => {
    const { get, authorizeUrl, ada } = await start()
    expectErrorPage(await get(authorizeUrl({ redirect_uri: redirectUri })).set('x-signed-in', ada.id), 400, new RegExp(why))
  })

  it('shows an error page when client_id or redirect_uri is sent twice', async () => {
    const { get, authorizeUrl, ada } = await start()
    expectErrorPage(await get(`${authorizeUrl()}&redirect_uri=${encodeURIComponent(REDIRECT)}`).set('x-signed-in', ada.id), 400, /more than once/)
  })

  it('escapes the application name on its pages', async () => {
    const { get, authorizeUrl, ada } = await start()
    const res = await get(authorizeUrl()).set('x-signed-in', ada.id)
    expect(res.text).toContain('Transit &lt;dashboard&gt;')
    expect(res.text).not.toContain('<dashboard>')
  })

  it('redirects to an http loopback callback only with oauth.allowLoopbackCallbacks', async () => {
    const { result: relaxed, warnings } = await captureWarnings(() => start({ oauth: { allowLoopbackCallbacks: true } }))
    expect(warnings.map((w) => w.code)).toEqual(['ODG_LOOPBACK_CALLBACKS'])
    const local = await relaxed.gate.applications.register({ name: 'Laptop app', callbackPrefix: 'http://127.0.0.1:5173/callback' })
    const callback = await relaxed.approve(relaxed.authorizeUrl({ client_id: local.appToken, redirect_uri: 'http://127.0.0.1:5173/callback?from=test' }))
    expect(callback.origin).toBe('http://127.0.0.1:5173')
    expect(callback.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/)
    // The same application, once the option is off again, is not redirected over http.
    const strict = createGate({ store: relaxed.store })
    const query = new URLSearchParams({ client_id: local.appToken, response_type: 'code', redirect_uri: 'http://127.0.0.1:5173/callback' })
    const refused = await strict.handle(coreRequest({ url: `/oauth/authorize?${query}` }))
    expect(refused).toMatchObject({ type: 'respond', response: { status: 400, body: expect.stringContaining('does not use https') } })
    expect(refused.type === 'respond' && refused.response.headers.location).toBeUndefined()
  })

  it('refuses to serve the flow over plain http, and believes only a trusted proxy about https', async () => {
    const plain = await start({}, false)
    expectErrorPage(await plain.get(plain.authorizeUrl()).set('x-signed-in', plain.ada.id), 403, /secure connection/)
    // A loopback peer vouching for https while no proxy is trusted: a deployment mistake, said as such.
    const { result: untrusted, warnings } = await captureWarnings(() => plain.get(plain.authorizeUrl()).set('x-signed-in', plain.ada.id).set('X-Forwarded-Proto', 'https'))
    // A person is at this endpoint: the refusal is a page, as every other at authorize.
    expectErrorPage(untrusted, 500, /trustProxy/)
    expect(untrusted.text).toContain('proxy_not_trusted')
    expect(warnings.map((w) => w.code)).toEqual(['ODG_UNTRUSTED_PROXY_HEADERS'])
    const proxied = await start({ trustProxy: 'loopback' }, false)
    const res = await proxied.get(proxied.authorizeUrl()).set('x-signed-in', proxied.ada.id).set('X-Forwarded-Proto', 'https')
    expect(res.status).toBe(200)
    expect(res.text).toContain('value="approve"')
  })
})

describe('authorize: the user is authenticated before any redirect', () => {
  it.each(['https:transit.example/oauth/callback', 'https:/transit.example/oauth/callback', 'https://transit.example/oauth/..;/admin', 'https://transit.example/oauth/cb//evil.example', 'https://transit.example/oauth/cb?code=planted'])(
    'shows an error page for the redirect_uri %s, signed in or not, and never puts it in a Location',
    async (redirectUri) => {
      const { get, authorizeUrl, ada } = await start()
      expectErrorPage(await get(authorizeUrl({ redirect_uri: redirectUri })).set('x-signed-in', ada.id), 400, /This sign-in link does not work/)
    },
  )

  it('shows the login page, not an error redirect, to a signed-out user with a bad request', async () => {
    const { get, authorizeUrl } = await start()
    const res = await get(authorizeUrl({ response_type: 'token' }))
    expect(res.status).toBe(200)
    expect(res.headers.location).toBeUndefined()
    expect(res.text).toContain('name="password"')
  })

  it('sends a signed-out user to the host’s login page when there is one', async () => {
    const { get, authorizeUrl } = await start({ oauth: { loginUrl: '/login' } })
    const res = await get(authorizeUrl())
    expect(res.status).toBe(303)
    const location = new URL(res.headers.location as string, 'https://x')
    expect(location.pathname).toBe('/login')
    expect(location.searchParams.get('return_to')).toBe(authorizeUrl())
  })
})

/** The link back to the application on an error page shown instead of a redirect. */
function backLinkParams(res: request.Response): URLSearchParams {
  expectErrorPage(res, 400, /Back to Transit &lt;dashboard&gt;/)
  const href = /<a class="button" href="([^"]+)">/.exec(res.text)?.[1] as string
  const location = href.replace(/&amp;/g, '&').replace(/&#39;/g, "'").replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>')
  expect(location.startsWith(`${REDIRECT}&`)).toBe(true)
  return new URL(location).searchParams
}

describe('authorize: other problems go back to the application, by a link the user follows', () => {
  it.each([
    [{ response_type: 'token' }, [], 'unsupported_response_type'],
    [{}, ['response_type'], 'invalid_request'],
    [{ response_type: '' }, [], 'invalid_request'],
    [{ code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'plain' }, [], 'invalid_request'],
    [{ code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM' }, [], 'invalid_request'],
    [{ code_challenge_method: 'S256' }, [], 'invalid_request'],
    [{ code_challenge: 'too-short', code_challenge_method: 'S256' }, [], 'invalid_request'],
  ])('%j without %j → %s, with the state', async (params, omit, error) => {
    const { get, authorizeUrl, ada } = await start()
    const back = backLinkParams(await get(authorizeUrl(params, omit)).set('x-signed-in', ada.id))
    expect(back.get('error')).toBe(error)
    expect(back.get('error_description')).toBeTruthy()
    expect(back.get('state')).toBe('xyz')
    expect(back.get('code')).toBeNull()
  })

  it('answers a repeated parameter with invalid_request, and echoes no state when state itself repeats', async () => {
    const { get, authorizeUrl, ada } = await start()
    const twice = backLinkParams(await get(`${authorizeUrl()}&response_type=code`).set('x-signed-in', ada.id))
    expect(twice.get('error')).toBe('invalid_request')
    expect(twice.get('error_description')).toMatch(/response_type was sent more than once/)
    const states = backLinkParams(await get(`${authorizeUrl()}&state=other`).set('x-signed-in', ada.id))
    expect(states.get('error')).toBe('invalid_request')
    expect(states.get('state')).toBeNull()
  })

  it('requires PKCE when configured', async () => {
    const { get, authorizeUrl, ada } = await start({ oauth: { requirePkce: true } })
    const back = backLinkParams(await get(authorizeUrl()).set('x-signed-in', ada.id))
    expect(back.get('error')).toBe('invalid_request')
    expect(back.get('error_description')).toMatch(/PKCE is required/)
  })

  it('never redirects a signed-in user on a GET from elsewhere, but does answer the consent form’s own post', async () => {
    const { server, get, authorizeUrl, ada } = await start()
    // A link planted on another site: no Location, whatever the redirect_uri.
    const planted = await get(authorizeUrl({ response_type: 'token' })).set('x-signed-in', ada.id).set('sec-fetch-site', 'cross-site')
    expect(planted.status).toBe(400)
    expect(planted.headers.location).toBeUndefined()
    // The user's own post of the consent form, with its CSRF token, is answered with the redirect.
    const browser = new Browser()
    const consent = await browser.get(`${server.url}${authorizeUrl()}`, { 'x-signed-in': ada.id })
    const posted = await browser.post(`${server.url}${authorizeUrl({ response_type: 'token' })}`, { csrf_token: csrfOf(consent), action: 'approve' }, { 'x-signed-in': ada.id })
    expect(posted.status).toBe(303)
    expect(new URL(posted.location as string).searchParams.get('error')).toBe('unsupported_response_type')
  })

  it('answers Deny with access_denied and the state', async () => {
    const { server, authorizeUrl, ada } = await start()
    const browser = new Browser()
    const consent = await browser.get(`${server.url}${authorizeUrl({ state: 'a b&c' })}`, { 'x-signed-in': ada.id })
    const posted = await browser.post(consent.url, { csrf_token: csrfOf(consent), action: 'deny' }, { 'x-signed-in': ada.id })
    const back = new URL(posted.location as string)
    expect(back.searchParams.get('error')).toBe('access_denied')
    expect(back.searchParams.get('state')).toBe('a b&c')
  })

  it('answers a store failure while issuing the code with temporarily_unavailable', async () => {
    const { store, server, authorizeUrl, ada, gate } = await start()
    const errors: unknown[] = []
    gate.on('storeError', (e) => errors.push(e.operation))
    const browser = new Browser()
    const consent = await browser.get(`${server.url}${authorizeUrl()}`, { 'x-signed-in': ada.id })
    store.failCodes = true
    const posted = await browser.post(consent.url, { csrf_token: csrfOf(consent), action: 'approve' }, { 'x-signed-in': ada.id })
    const back = new URL(posted.location as string)
    expect(back.searchParams.get('error')).toBe('temporarily_unavailable')
    expect(back.searchParams.get('state')).toBe('xyz')
    expect(errors).toEqual(['insertAuthorizationCode'])
  })
})

describe('authorize: approval', () => {
  it('adds code and the exact state after the query the redirect_uri already has', async () => {
    const { approve, authorizeUrl } = await start()
    const state = 'ünïcode & spaces/=?#'
    const callback = await approve(authorizeUrl({ state }))
    expect(callback.href.startsWith(`${REDIRECT}&code=`)).toBe(true)
    expect(callback.searchParams.get('tab')).toBe('live')
    expect(callback.searchParams.get('state')).toBe(state)
    expect(callback.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/)
  })

  it('omits state when none was sent', async () => {
    const { approve, authorizeUrl } = await start()
    const callback = await approve(authorizeUrl({}, ['state']))
    expect(callback.searchParams.has('state')).toBe(false)
  })

  it('stores the code only as a hash, bound to client, user, redirect_uri and challenge, for the configured lifetime', async () => {
    const { approve, authorizeUrl, store, app, ada } = await start({ oauth: { codeTtlMs: 30_000 } })
    const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'
    const code = (await approve(authorizeUrl({ code_challenge: challenge, code_challenge_method: 'S256' }))).searchParams.get('code') as string
    const record = store.getAuthorizationCode(sha256(code))
    expect(record).toMatchObject({ appToken: app.appToken, userId: ada.id, redirectUri: REDIRECT, codeChallenge: challenge, usedAt: null })
    expect((record?.expiresAt ?? 0) - (record?.createdAt ?? 0)).toBe(30_000)
    expect(JSON.stringify(record)).not.toContain(code)
  })

  it('refuses a code lifetime over ten minutes at construction', () => {
    expect(() => createGate({ oauth: { codeTtlMs: 600_001 } })).toThrow(/oauth.codeTtlMs must be at most 600000/)
  })
})

describe('who the consent page says is signed in', () => {
  it('shows the username beside the display name, which another account may copy, with invisible characters written out', async () => {
    const { gate, store, server, authorizeUrl } = await start()
    const copy = await gate.users.create({ username: 'lovelace', displayName: 'Ada Lovelace', email: 'l@example.org' })
    // An account saved before usernames followed RFC 8265 may hold an invisible character.
    store.insertUser({ id: 'old1-0001', username: 'ada\u200b', screenName: 'Ada', displayName: 'Ada Lovelace', email: 'o@example.org', rights: [], passwordHash: null, createdAt: 1, updatedAt: 1 })
    const shown: string[] = []
    for (const id of [copy.id, 'old1-0001']) {
      const consent = await new Browser().get(`${server.url}${authorizeUrl()}`, { 'x-signed-in': id })
      shown.push((consent.html.match(/Signed in as (.*?)\./) as RegExpMatchArray)[1] as string)
    }
    expect(shown).toEqual(['<strong>Ada Lovelace</strong> (<bdi>lovelace</bdi>)', '<strong>Ada Lovelace</strong> (<bdi>ada[U+200B]</bdi>)'])
  })
})

describe('sessions of the gate’s own sign-in', () => {
  async function signedIn() {
    const ctx = await start({ oauth: {} })
    const browser = new Browser()
    const consent = await browser.signIn(`${ctx.server.url}${ctx.authorizeUrl()}`, 'ada', PASSWORD)
    expect(consent.html).toContain('value="approve"')
    return { ...ctx, browser, consent }
  }

  it('ends when the password changes', async () => {
    const { gate, ada, browser, consent } = await signedIn()
    await gate.users.setPassword(ada.id, 'a completely new password')
    const again = await browser.get(consent.url)
    expect(again.html).toContain('name="password"')
  })

  it('keeps at most maxSessionsPerUser live sign-ins per user, ending the oldest', async () => {
    const { server, authorizeUrl } = await start({ oauth: { maxSessionsPerUser: 2 } })
    const browsers = [new Browser(), new Browser(), new Browser()]
    const consents = []
    for (const browser of browsers) consents.push(await browser.signIn(`${server.url}${authorizeUrl()}`, 'ada', PASSWORD))
    expect((await browsers[0]!.get(consents[0]!.url)).html).toContain('name="password"')
    expect((await browsers[1]!.get(consents[1]!.url)).html).toContain('value="approve"')
    expect((await browsers[2]!.get(consents[2]!.url)).html).toContain('value="approve"')
  })

  it('ends with “Not you? Sign out”, and the session is gone from the store', async () => {
    const { gate, browser, consent } = await signedIn()
    const session = browser.cookies.get('__Host-odg-session') as string
    const out = await browser.post(consent.url, { csrf_token: csrfOf(consent), action: 'logout' })
    expect(out.status).toBe(303)
    expect(await gate.store.getSession(sha256(session))).toBeUndefined()
    expect((await browser.get(out.location as string)).html).toContain('name="password"')
  })
})

describe('the login and consent pages', () => {
  it('carry a CSRF token, refuse framing and referrers, and load nothing from elsewhere', async () => {
    const { get, authorizeUrl, ada } = await start()
    for (const res of [await get(authorizeUrl()), await get(authorizeUrl()).set('x-signed-in', ada.id)]) {
      expect(res.status).toBe(200)
      expect(res.text).toMatch(/<input type="hidden" name="csrf_token" value="[A-Za-z0-9_-]{43}">/)
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'")
      expect(res.headers['content-security-policy']).toContain("default-src 'none'")
      expect(res.headers['x-frame-options']).toBe('DENY')
      expect(res.headers['referrer-policy']).toBe('no-referrer')
      expect(res.headers['cache-control']).toBe('no-store')
      expect(res.text).not.toMatch(/(src|href)=["']?(https?:)?\/\//)
      expect(String(res.headers['set-cookie'])).toMatch(/^__Host-odg-csrf=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=\d+; Secure; HttpOnly; SameSite=Strict/)
    }
  })

  it('signs in with a username and password and answers the post with 303, then shows consent', async () => {
    const { server, authorizeUrl, gate } = await start({ oauth: {} })
    const browser = new Browser()
    const login = await browser.get(`${server.url}${authorizeUrl()}`)
    const posted = await browser.post(login.url, { csrf_token: csrfOf(login), username: 'ADA', password: PASSWORD, action: 'login' })
    expect(posted.status).toBe(303)
    expect(posted.location).toBe(`${server.url}${authorizeUrl()}`)
    expect(posted.headers.getSetCookie().join()).toMatch(/__Host-odg-session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=3600; Secure; HttpOnly; SameSite=Lax/)
    const session = browser.cookies.get('__Host-odg-session') as string
    expect(await gate.store.getSession(sha256(session))).toBeDefined()
    const consent = await browser.get(posted.location as string)
    expect(consent.html).toContain('Ada Lovelace')
    expect(consent.headers.get('content-security-policy')).toContain("form-action 'self' https://transit.example")
  })

  it('sends the user back with access_denied and the state when they cancel on the login page', async () => {
    const { server, authorizeUrl } = await start({ oauth: {} })
    const browser = new Browser()
    const login = await browser.get(`${server.url}${authorizeUrl()}`)
    expect(login.html).toMatch(/<button type="submit" class="secondary" name="action" value="deny" formnovalidate>Cancel<\/button>/)
    const cancelled = await browser.post(login.url, { csrf_token: csrfOf(login), action: 'deny' })
    expect(cancelled.status).toBe(303)
    const back = new URL(cancelled.location as string)
    expect(`${back.origin}${back.pathname}`).toBe(`${PREFIX}callback`)
    expect(Object.fromEntries(back.searchParams)).toMatchObject({ tab: 'live', error: 'access_denied', state: 'xyz' })
    // Without the page's CSRF token, a cancel is refused like any other post.
    const forged = await new Browser().post(login.url, { action: 'deny' })
    expect(forged.status).toBe(403)
  })

  it('says on the consent page who registered the application: a user by display name and username, escaped and isolated, or the portal\'s operators', async () => {
    const { gate, get, authorizeUrl, ada } = await start({ oauth: { pages: { siteName: 'City <Open> Data' } } })
    const mallory = await gate.users.create({ username: 'mallory', password: PASSWORD, displayName: 'City <Open> Data \u202eteam', email: 'm@example.org' })
    const lookalike = await gate.applications.register({ name: 'City Open Data', callbackPrefix: PREFIX, ownerId: mallory.id })
    const theirs = await get(authorizeUrl({ client_id: lookalike.appToken })).set('x-signed-in', ada.id).expect(200)
    expect(theirs.text).toContain(
      '<p class="registered-by">Registered by <strong><bdi>City &lt;Open&gt; Data \u202eteam</bdi></strong> (<bdi>mallory</bdi>), a user of City &lt;Open&gt; Data, not by City &lt;Open&gt; Data itself.</p>',
    )
    const operators = await get(authorizeUrl()).set('x-signed-in', ada.id).expect(200)
    expect(operators.text).toContain('<p class="registered-by">Registered by the operators of City &lt;Open&gt; Data.</p>')
    await gate.users.delete(mallory.id)
    const orphan = await get(authorizeUrl({ client_id: lookalike.appToken })).set('x-signed-in', ada.id).expect(200)
    expect(orphan.text).toContain('Registered by a user of City &lt;Open&gt; Data whose account no longer exists')
  })

  it('shows the portal\'s name (oauth.pages.siteName) in the title and heading of every page', async () => {
    const { server, authorizeUrl, get, ada } = await start({ oauth: { pages: { siteName: 'City <Open> Data' } } })
    const login = await new Browser().get(`${server.url}${authorizeUrl()}`)
    expect(login.html).toContain('<title>Sign in · City &lt;Open&gt; Data</title>')
    expect(login.html).toContain('<h1>Sign in to City &lt;Open&gt; Data</h1>')
    const consent = await get(authorizeUrl()).set('x-signed-in', ada.id)
    expect(consent.text).toContain('<title>Allow Transit &lt;dashboard&gt;? · City &lt;Open&gt; Data</title>')
    expect(consent.text).toContain('<p class="site">City &lt;Open&gt; Data</p>')
    const error = await get(authorizeUrl({ client_id: 'no-such-client' })).set('x-signed-in', ada.id)
    expect(error.text).toContain('<title>This sign-in link does not work · City &lt;Open&gt; Data</title>')
  })

  it('tells the user in plain words what went wrong, and folds the developer\'s detail away', async () => {
    const { get, authorizeUrl, ada } = await start()
    const res = await get(authorizeUrl({ redirect_uri: 'https://transit.example.evil.net/oauth/callback' })).set('x-signed-in', ada.id)
    const [visible, details] = res.text.split('<details>') as [string, string]
    expect(visible).toContain('<h1>This sign-in link does not work</h1>')
    expect(visible).toContain('Go back to the application and try again')
    expect(visible).not.toMatch(/redirect_uri|Callback Prefix|client_id/)
    expect(details).toMatch(/<summary>Technical details for the application's developer<\/summary>\n<p>The redirect_uri is not allowed for Transit &lt;dashboard&gt;: its scheme, host or port differ from the registered Callback Prefix.<\/p>/)
  })

  it('shows the login page again with an error after a wrong password, and 429 once the budget is spent', async () => {
    const { server, authorizeUrl } = await start({ basic: { failures: { limit: 2, windowMs: 60_000 } } })
    const browser = new Browser()
    const login = await browser.get(`${server.url}${authorizeUrl()}`)
    for (let i = 0; i < 2; i++) {
      const wrong = await browser.post(login.url, { csrf_token: csrfOf(login), username: 'ada', password: 'not the password', action: 'login' })
      expect(wrong.status).toBe(401)
      expect(wrong.html).toContain('role="alert"')
      expect(wrong.html).toContain('Wrong username or password.')
      expect(wrong.html).toContain('value="ada"')
    }
    const locked = await browser.post(login.url, { csrf_token: csrfOf(login), username: 'ada', password: PASSWORD, action: 'login' })
    expect(locked.status).toBe(429)
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  it('signs nobody in with an API key id and secret typed into the sign-in form, and says to use the password', async () => {
    const { gate, server, authorizeUrl, ada } = await start()
    const key = await gate.apiKeys.create(ada.id, { name: 'etl' })
    const browser = new Browser()
    const login = await browser.get(`${server.url}${authorizeUrl()}`)
    const refused = await browser.post(login.url, { csrf_token: csrfOf(login), username: key.keyId, password: key.keySecret, action: 'login' })
    expect(refused.status).toBe(401)
    expect(refused.html).toContain('An API key cannot sign in')
    expect(refused.html).not.toContain(key.keySecret)
    expect(browser.cookies.has('__Host-odg-session')).toBe(false)
    // Still the sign-in page, not the consent page.
    expect((await browser.get(login.url)).html).toContain('name="password"')
  })

  it('refuses a post without the CSRF token, with a wrong one, or from another site', async () => {
    const { server, authorizeUrl, ada } = await start()
    const browser = new Browser()
    const consent = await browser.get(`${server.url}${authorizeUrl()}`, { 'x-signed-in': ada.id })
    const token = csrfOf(consent)
    for (const [form, headers] of [
      [{ action: 'approve' }, {}],
      [{ action: 'approve', csrf_token: `${token.slice(0, -1)}x` }, {}],
      [{ action: 'approve', csrf_token: token }, { 'sec-fetch-site': 'cross-site' }],
    ] as const) {
      const res = await browser.post(consent.url, form, { 'x-signed-in': ada.id, ...headers })
      expect(res.status).toBe(403)
      expect(res.location).toBeUndefined()
    }
    const stranger = new Browser()
    const res = await stranger.post(consent.url, { action: 'approve', csrf_token: token }, { 'x-signed-in': ada.id })
    expect(res.status).toBe(403)
  })

  it('renders the host’s own pages, still unframeable', async () => {
    const { get, authorizeUrl, ada } = await start({
      oauth: { pages: { consent: (v) => `<p>Custom consent for ${v.application.name} <input name="csrf_token" value="${v.csrfToken}"></p>` } },
    })
    const res = await get(authorizeUrl()).set('x-signed-in', ada.id)
    expect(res.text).toContain('Custom consent for Transit <dashboard>')
    expect(res.headers['content-security-policy']).toBe("frame-ancestors 'none'")
    expect(res.headers['x-frame-options']).toBe('DENY')
  })
})

describe('token endpoint', () => {
  it('answers {access_token, token_type, expires_in}, never cached, and the token reads the current user', async () => {
    const { approve, authorizeUrl, exchange, get, ada, store } = await start({ oauth: { accessTokenTtlMs: 7_200_000 } })
    const code = (await approve(authorizeUrl())).searchParams.get('code') as string
    const res = await exchange({ code }).expect(200)
    expect(res.body).toEqual({ access_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), token_type: 'bearer', expires_in: 7200 })
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.headers.pragma).toBe('no-cache')
    expect(store.getAccessToken(sha256(res.body.access_token))?.userId).toBe(ada.id)
    const me = await get('/api/users/current.json').set('Authorization', `OAuth ${res.body.access_token}`).expect(200)
    expect(me.body.id).toBe(ada.id)
  })

  it('accepts the five parameters as query parameters, as the spec shows them', async () => {
    const { approve, authorizeUrl, post, app } = await start()
    const code = (await approve(authorizeUrl())).searchParams.get('code') as string
    const query = new URLSearchParams({ client_id: app.appToken, client_secret: app.secretToken, grant_type: 'authorization_code', redirect_uri: REDIRECT, code })
    await post(`/oauth/access_token?${query}`).expect(200)
  })

  it('accepts a JSON body', async () => {
    const { approve, authorizeUrl, post, app } = await start()
    const code = (await approve(authorizeUrl())).searchParams.get('code') as string
    await post('/oauth/access_token').send({ client_id: app.appToken, client_secret: app.secretToken, grant_type: 'authorization_code', redirect_uri: REDIRECT, code }).expect(200)
  })

  it('accepts POST only', async () => {
    const { get } = await start()
    const res = await get('/oauth/access_token').expect(400)
    expect(res.body.error).toBe('invalid_request')
    expect(res.headers.allow).toBe('POST')
  })

  it('refuses plain http, even when the secret is right', async () => {
    const { exchange } = await start({}, false)
    const res = await exchange({ code: 'x' }).expect(400)
    expect(res.body).toEqual({ error: 'invalid_request', error_description: expect.stringMatching(/https is required/) })
  })

  it('answers an unknown grant type with unsupported_grant_type, and a missing one with invalid_request', async () => {
    const { exchange } = await start()
    expect((await exchange({ grant_type: 'password', code: 'x' }).expect(400)).body.error).toBe('unsupported_grant_type')
    expect((await exchange({ grant_type: '', code: 'x' }).expect(400)).body.error).toBe('invalid_request')
  })

  it('exchanges a code with the secret a rotation replaced while its grace lasts, and refuses that secret once it is over', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const start0 = Date.now()
    const { gate, app, approve, exchange, authorizeUrl } = await start({ applications: { secretGraceMs: 3_600_000 } })
    const next = await gate.applications.rotateSecret(app.appToken)
    const code = (await approve(authorizeUrl())).searchParams.get('code')!
    const withOld = await exchange({ code }).expect(200)
    expect(withOld.body.access_token).toEqual(expect.any(String))
    vi.setSystemTime(start0 + 3_600_000 + 1)
    const refused = await exchange({ code: 'x' }).expect(401)
    expect(refused.body.error).toBe('invalid_client')
    // The new secret authenticates (the unknown code is then the only problem).
    expect((await exchange({ code: 'x', client_secret: next }).expect(400)).body.error).toBe('invalid_grant')
  })

  it('retires a previous client secret seen over plain http and reports it; it issues no token over https after, and the new one does', async () => {
    const { gate, app, approve, exchange, authorizeUrl } = await start()
    const next = await gate.applications.rotateSecret(app.appToken)
    const exposed: unknown[] = []
    gate.on('clientSecretExposed', (event) => exposed.push(event))
    const fields = { grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT, client_id: app.appToken }
    const basic = `Basic ${Buffer.from(`${app.appToken}:${app.secretToken}`).toString('base64')}`
    // Posted, then in Basic.
    for (const [headers, body] of [[{}, { ...fields, client_secret: app.secretToken }], [{ authorization: basic }, fields]] as const) {
      const inClear = await gate.handle(coreRequest({ method: 'POST', url: '/oauth/access_token', tls: false, headers, readBody: async () => ({ kind: 'parsed', value: body }) }))
      expect(inClear.type === 'respond' && inClear.response.status).toBe(400)
    }
    // Reported once: the second time it was no longer a secret of the application.
    expect(exposed).toEqual([{ appToken: app.appToken, secret: 'previous', ip: '203.0.113.5', requestId: expect.any(String) }])
    expect((await gate.applications.find(app.appToken))?.previousSecretExpiresAt).toBeNull()
    const code = (await approve(authorizeUrl())).searchParams.get('code')!
    expect((await exchange({ code }).expect(401)).body.error).toBe('invalid_client')
    expect((await exchange({ code, client_secret: next }).expect(200)).body.access_token).toEqual(expect.any(String))
  })

  it('answers bad client credentials with 401 invalid_client and a Basic challenge', async () => {
    const { exchange, post, app } = await start()
    const wrong = await exchange({ code: 'x', client_secret: 'wrong' }).expect(401)
    expect(wrong.body.error).toBe('invalid_client')
    expect(wrong.headers['www-authenticate']).toBe('Basic realm="api"')
    const basic = await post('/oauth/access_token').auth(app.appToken, 'wrong').type('form').send({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT }).expect(401)
    expect(basic.headers['www-authenticate']).toBe('Basic realm="api"')
    const none = await post('/oauth/access_token').type('form').send({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT }).expect(401)
    expect(none.body.error).toBe('invalid_client')
  })

  it('accepts client_secret_basic, and refuses two authentication methods at once', async () => {
    const { approve, authorizeUrl, post, app } = await start()
    const code = (await approve(authorizeUrl())).searchParams.get('code') as string
    const both = await post('/oauth/access_token').auth(app.appToken, app.secretToken).type('form').send({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_secret: app.secretToken }).expect(400)
    expect(both.body.error_description).toMatch(/one client authentication method/)
    await post('/oauth/access_token').auth(app.appToken, app.secretToken).type('form').send({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT }).expect(200)
  })

  it('refuses a parameter sent twice, in the body or across query and body', async () => {
    const { post, app } = await start()
    const inBody = await post('/oauth/access_token').type('form').send(`grant_type=authorization_code&code=a&code=b&client_id=${app.appToken}&client_secret=${app.secretToken}&redirect_uri=x`).expect(400)
    expect(inBody.body.error_description).toBe('code was sent more than once')
    const across = await post('/oauth/access_token?code=a').type('form').send({ grant_type: 'authorization_code', code: 'a', client_id: app.appToken, client_secret: app.secretToken, redirect_uri: 'x' }).expect(400)
    expect(across.body.error_description).toBe('code was sent more than once')
  })

  it('refuses a body that is too large, or of another type', async () => {
    const { post } = await start()
    expect((await post('/oauth/access_token').type('form').send(`code=${'x'.repeat(20_000)}`).expect(400)).body.error_description).toMatch(/too large/)
    expect((await post('/oauth/access_token').set('content-type', 'text/plain').send('code=x').expect(400)).body.error_description).toMatch(/x-www-form-urlencoded or application\/json/)
  })

  it('answers unauthorized_client for an application without a Callback Prefix', async () => {
    const { gate, post } = await start()
    const plain = await gate.applications.register({ name: 'No OAuth' })
    const res = await post('/oauth/access_token').type('form').send({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT, client_id: plain.appToken, client_secret: plain.secretToken }).expect(400)
    expect(res.body.error).toBe('unauthorized_client')
  })

  it('refuses a code issued to another client, an unknown code, and a different redirect_uri with invalid_grant', async () => {
    const { gate, approve, authorizeUrl, exchange, post } = await start()
    const code = (await approve(authorizeUrl())).searchParams.get('code') as string
    const other = await gate.applications.register({ name: 'Other', callbackPrefix: PREFIX })
    const stolen = await post('/oauth/access_token').type('form').send({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: other.appToken, client_secret: other.secretToken }).expect(400)
    expect(stolen.body).toEqual({ error: 'invalid_grant', error_description: expect.stringMatching(/another application/) })
    expect((await exchange({ code: 'not-a-code' }).expect(400)).body.error).toBe('invalid_grant')
    expect((await exchange({ code, redirect_uri: `${PREFIX}callback` }).expect(400)).body.error_description).toMatch(/not identical/)
    // None of these used the code up: the rightful exchange still works.
    await exchange({ code }).expect(200)
  })

  it('refuses an expired code', async () => {
    const { approve, authorizeUrl, exchange } = await start({ oauth: { codeTtlMs: 1 } })
    const code = (await approve(authorizeUrl())).searchParams.get('code') as string
    await new Promise((r) => setTimeout(r, 5))
    expect((await exchange({ code }).expect(400)).body.error_description).toMatch(/expired/)
  })

  it('checks the PKCE verifier: required with a challenge, matching, and refused without one', async () => {
    const { approve, authorizeUrl, exchange } = await start()
    const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
    const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM' // RFC 7636 appendix B
    const code = (await approve(authorizeUrl({ code_challenge: challenge, code_challenge_method: 'S256' }))).searchParams.get('code') as string
    expect((await exchange({ code }).expect(400)).body).toEqual({ error: 'invalid_grant', error_description: expect.stringMatching(/code_verifier is missing/) })
    expect((await exchange({ code, code_verifier: `${verifier.slice(0, -1)}A` }).expect(400)).body.error).toBe('invalid_grant')
    await exchange({ code, code_verifier: verifier }).expect(200)
    const plain = (await approve(authorizeUrl())).searchParams.get('code') as string
    expect((await exchange({ code: plain, code_verifier: verifier }).expect(400)).body.error_description).toMatch(/had no code_challenge/)
  })

  it('refuses a code exchanged twice and revokes the token it issued', async () => {
    const { gate, approve, authorizeUrl, exchange, get, app, ada } = await start()
    const replays: CodeReplayedEvent[] = []
    gate.on('codeReplayed', (e) => replays.push(e))
    const code = (await approve(authorizeUrl())).searchParams.get('code') as string
    const first = await exchange({ code }).expect(200)
    await get('/api/users/current.json').set('Authorization', `OAuth ${first.body.access_token}`).expect(200)
    const second = await exchange({ code }).expect(400)
    expect(second.body).toEqual({ error: 'invalid_grant', error_description: expect.stringMatching(/already been used/) })
    await get('/api/users/current.json').set('Authorization', `OAuth ${first.body.access_token}`).expect(401)
    expect(replays).toEqual([{ appToken: app.appToken, userId: ada.id, ip: '127.0.0.1', revokedTokens: 1, requestId: expect.any(String) }])
  })

  it('lets exactly one of 50 concurrent exchanges of one code have a token, and the replays revoke it', async () => {
    const { approve, authorizeUrl, exchange, get, store } = await start()
    const code = (await approve(authorizeUrl())).searchParams.get('code') as string
    const results = await Promise.all(Array.from({ length: 50 }, () => exchange({ code })))
    const won = results.filter((r) => r.status === 200)
    expect(won).toHaveLength(1)
    expect(results.filter((r) => r.status === 400 && r.body.error === 'invalid_grant')).toHaveLength(49)
    const token = won[0]?.body.access_token as string
    expect(store.getAccessToken(sha256(token))?.revokedAt).toEqual(expect.any(Number))
    await get('/api/users/current.json').set('Authorization', `OAuth ${token}`).expect(401)
  })

  it('refuses further client authentications from an address once its budget for the client is spent', async () => {
    const { exchange, approve, authorizeUrl } = await start({ trustProxy: 'loopback', oauth: { clientFailures: { limit: 3, windowMs: 60_000 } } })
    for (let i = 0; i < 3; i++) await exchange({ code: 'x', client_secret: 'wrong' }).set('X-Forwarded-For', '198.51.100.66').expect(401)
    const locked = await exchange({ code: 'x' }).set('X-Forwarded-For', '198.51.100.66').expect(401)
    expect(locked.body.error_description).toMatch(/Too many failed client authentications/)
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0)
    // The client_id is public: an attacker elsewhere cannot lock the real client out.
    const code = (await approve(authorizeUrl())).searchParams.get('code') as string
    await exchange({ code }).set('X-Forwarded-For', '203.0.113.10').expect(200)
  })

  it('lets a busy client exchange more codes at once than its failure budget, with the right secret', async () => {
    // Rate steps answer a turn later, as a shared store's do, so the exchanges interleave.
    class NetworkedRates extends CodeFailingStore {
      override consumeRate(...args: Parameters<CodeFailingStore['consumeRate']>) {
        return new Promise((resolve) => setTimeout(() => resolve(super.consumeRate(...args)), 50)) as never
      }
      override resetRate(key: string) {
        return new Promise<void>((resolve) => setTimeout(() => resolve(super.resetRate(key)), 50)) as never
      }
    }
    const { exchange } = await start({ store: new NetworkedRates(), oauth: { clientFailures: { limit: 3, windowMs: 60_000 }, throttle: false } })
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => exchange({ code: `unknown-${i}` })))
    // The client authenticated every time: each code is judged, none is refused as invalid_client.
    expect(answers.map((a) => a.body.error)).toEqual(Array(12).fill('invalid_grant'))
  })

  it('gives made-up client ids no budget at all', async () => {
    const { gate, exchange } = await start()
    const throttled: unknown[] = []
    gate.on('throttled', (e) => throttled.push(e))
    for (let i = 0; i < 15; i++) {
      const res = await exchange({ code: 'x', client_id: `made-up-${'x'.repeat(200)}-${i}` }).expect(401)
      expect(res.body.error_description).toMatch(/unknown client_id or wrong client_secret/)
    }
    expect(throttled).toEqual([])
  })

  it('answers a client or a user deleted during the exchange with an RFC 6749 error, never the platform’s 404', async () => {
    const { gate, store, app, ada, approve, authorizeUrl, exchange } = await start()
    const code = (await approve(authorizeUrl())).searchParams.get('code') as string
    store.afterGetUser = () => store.deleteApplication(app.appToken)
    const clientGone = await exchange({ code }).expect(401)
    expect(clientGone.body).toEqual({ error: 'invalid_client', error_description: 'The client was deleted during the request' })
    expect(clientGone.headers['www-authenticate']).toMatch(/^Basic realm="/)
    expect(clientGone.headers['cache-control']).toBe('no-store')

    const other = await gate.applications.register({ name: 'Other', callbackPrefix: PREFIX })
    const otherCode = (await approve(authorizeUrl({ client_id: other.appToken }))).searchParams.get('code') as string
    store.afterGetUser = () => store.deleteUser(ada.id)
    const userGone = await exchange({ code: otherCode, client_id: other.appToken, client_secret: other.secretToken }).expect(400)
    expect(userGone.body).toEqual({ error: 'invalid_grant', error_description: 'The user who approved the request no longer exists' })
  })

  it('refuses a code replayed by another application without revoking the rightful token', async () => {
    const { gate, approve, authorizeUrl, exchange, post, get } = await start()
    const code = (await approve(authorizeUrl())).searchParams.get('code') as string
    const token = (await exchange({ code }).expect(200)).body.access_token as string
    const other = await gate.applications.register({ name: 'Other', callbackPrefix: PREFIX })
    await post('/oauth/access_token').type('form').send({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: other.appToken, client_secret: other.secretToken }).expect(400)
    await get('/api/users/current.json').set('Authorization', `OAuth ${token}`).expect(200)
  })
})

describe('the budget of the OAuth endpoints', () => {
  it('counts token requests per authenticated client, so neighbours on one address do not throttle each other', async () => {
    const { gate, exchange, post } = await start({ oauth: { throttle: { limit: 3, windowMs: 60_000 } } })
    for (let i = 0; i < 3; i++) await exchange({ code: 'x' }).expect(400)
    const refused = await exchange({ code: 'x' }).expect(429)
    expect(refused.body).toMatchObject({ code: 'too_many_requests', error: true })
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
    // Another client's backend behind the same address is not affected.
    const neighbour = await gate.applications.register({ name: 'Neighbour', callbackPrefix: PREFIX })
    const theirs = await post('/oauth/access_token').type('form').send({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT, client_id: neighbour.appToken, client_secret: neighbour.secretToken })
    expect(theirs.status).toBe(400)
    expect(theirs.body.error).toBe('invalid_grant')
  })

  it('counts unauthenticated token requests per address', async () => {
    const { app, post } = await start({ oauth: { throttle: { limit: 3, windowMs: 60_000 }, clientFailures: false } })
    const wrong = () => post('/oauth/access_token').type('form').send({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT, client_id: app.appToken, client_secret: 'wrong' })
    for (let i = 0; i < 3; i++) await wrong().expect(401)
    await wrong().expect(429)
  })

  it('answers sign-in posts over the per-address budget with a 429 page', async () => {
    const { server, authorizeUrl } = await start({ oauth: { throttle: { limit: 3, windowMs: 60_000 } } })
    const browser = new Browser()
    const login = await browser.get(`${server.url}${authorizeUrl()}`)
    for (let i = 0; i < 3; i++) await browser.post(login.url, { csrf_token: csrfOf(login), username: 'ada', password: 'wrong password here', action: 'login' })
    const page = await browser.post(login.url, { csrf_token: csrfOf(login), username: 'ada', password: PASSWORD, action: 'login' })
    expect(page.status).toBe(429)
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(page.html).toContain('Too many attempts')
  })
})

describe('revocation endpoint (RFC 7009)', () => {
  async function withToken() {
    const ctx = await start()
    const code = (await ctx.approve(ctx.authorizeUrl())).searchParams.get('code') as string
    const token = (await ctx.exchange({ code }).expect(200)).body.access_token as string
    return { ...ctx, token }
  }

  it('revokes the client’s own token, which stops working at once', async () => {
    const { post, get, app, token } = await withToken()
    const res = await post('/oauth/revoke').type('form').send({ token, token_type_hint: 'access_token', client_id: app.appToken, client_secret: app.secretToken }).expect(200)
    expect(res.headers['cache-control']).toBe('no-store')
    await get('/api/users/current.json').set('Authorization', `OAuth ${token}`).expect(401)
  })

  it('answers 200 for an unknown token, and refuses another client’s token', async () => {
    const { gate, post, get, app, token } = await withToken()
    await post('/oauth/revoke').auth(app.appToken, app.secretToken).type('form').send({ token: 'unknown' }).expect(200)
    const other = await gate.applications.register({ name: 'Other', callbackPrefix: PREFIX })
    const res = await post('/oauth/revoke').auth(other.appToken, other.secretToken).type('form').send({ token }).expect(400)
    expect(res.body.error).toBe('unauthorized_client')
    await get('/api/users/current.json').set('Authorization', `OAuth ${token}`).expect(200)
  })

  it('requires client authentication and the token', async () => {
    const { post, app, token } = await withToken()
    expect((await post('/oauth/revoke').type('form').send({ token }).expect(401)).body.error).toBe('invalid_client')
    expect((await post('/oauth/revoke').auth(app.appToken, app.secretToken).type('form').send({}).expect(400)).body.error).toBe('invalid_request')
  })
})

describe('metadata (RFC 8414) and paths', () => {
  it('announces the endpoints under the configured issuer', async () => {
    const { get } = await start({ oauth: { issuer: 'https://data.example/' } })
    const res = await get('/.well-known/oauth-authorization-server').expect(200)
    expect(res.body).toMatchObject({
      issuer: 'https://data.example',
      authorization_endpoint: 'https://data.example/oauth/authorize',
      token_endpoint: 'https://data.example/oauth/access_token',
      revocation_endpoint: 'https://data.example/oauth/revoke',
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      code_challenge_methods_supported: ['S256'],
    })
  })

  it('moves endpoints and turns them off', async () => {
    const { get, post, app } = await start({ oauth: { issuer: 'https://data.example', paths: { token: '/api/oauth/token', revoke: false } } })
    const meta = await get('/.well-known/oauth-authorization-server').expect(200)
    expect(meta.body.token_endpoint).toBe('https://data.example/api/oauth/token')
    expect(meta.body).not.toHaveProperty('revocation_endpoint')
    expect((await post('/api/oauth/token').auth(app.appToken, app.secretToken).type('form').send({}).expect(400)).body.error).toBe('invalid_request')
    await post('/oauth/revoke').expect(404)
  })

  it('derives the issuer only from a well-formed Host', async () => {
    // Plain http: a TLS client would check the certificate against the Host sent.
    const { get } = await start({}, false)
    const { result: derived, warnings } = await captureWarnings(() => get('/.well-known/oauth-authorization-server').set('Host', 'data.example:8443').expect(200))
    expect(derived.body.issuer).toBe('https://data.example:8443')
    expect(warnings).toEqual([expect.objectContaining({ code: 'ODG_DERIVED_ISSUER', message: expect.stringContaining('set oauth.issuer') })])
    expect((await get('/.well-known/oauth-authorization-server').set('Host', 'evil.example/path?x').expect(400)).body.error).toBe('invalid_request')
  })

  it('refuses an issuer that is not an https URL', () => {
    expect(() => createGate({ oauth: { issuer: 'http://data.example' } })).toThrow(/oauth.issuer must be an https URL/)
  })
})
