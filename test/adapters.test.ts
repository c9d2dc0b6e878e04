/**
 * One HTTP behaviour, every mount: each test here runs against a real listening server in
 * Express 5, Express 4, Koa 3, Koa 2, plain node:http, Fastify 5, Hono 4 on
 * @hono/node-server and the Fetch adapter on Node's own Request (test/adapters/frameworks.ts).
 */
import net from 'node:net'
import { DOMParser } from '@xmldom/xmldom'
import request from 'supertest'
import { afterEach, describe, expect, it } from 'vitest'
import { createGate, MemoryStore, type Gate, type GateOptions } from '../src/index.js'
import { expressGate, expressGuard } from '../adapters/express.js'
import { koaGate, koaGuard } from '../adapters/koa.js'
import { nodeGate, nodeGuard } from '../adapters/node.js'
import { sha256 } from '../src/secrets/tokens.js'
import { FRAMEWORKS, FRAMEWORKS_WITH_BODY_PARSERS, type DatasetBody } from './adapters/frameworks.js'
import { listen, requestFrom, TEST_CERT, type RawAnswer, type RunningServer } from './adapters/servers.js'
import { Browser, csrfOf } from './support/browser.js'
import { captureWarnings } from './support/warnings.js'

/** A store whose backend is down. */
class ThrowingStore extends MemoryStore {
  override getApplication(): never {
    throw new Error('connection refused by the custom store')
  }
}

/** A store with a bug: it answers nonsense. */
class GarbageStore extends MemoryStore {
  override consumeRate(): never {
    return null as never
  }
}

describe.each(FRAMEWORKS)('$name adapter', (framework) => {
  const running: RunningServer[] = []
  afterEach(async () => {
    await Promise.all(running.splice(0).map((s) => s.close()))
  })

  async function start(options: GateOptions = {}, tls = false) {
    const gate = createGate({
      throttle: { application: { limit: 3, windowMs: 60_000 }, anonymous: { limit: 2, windowMs: 60_000, scope: 'ip' } },
      ...options,
    })
    const app = await gate.applications.register({ name: 'Transit dashboard' })
    const server = await listen(framework.listener(gate), tls)
    running.push(server)
    return { gate, app, server, api: request(server.url) }
  }

  describe('application tokens', () => {
    it('identifies the application from X-App-Token in any letter case', async () => {
      const { app, api } = await start()
      const res = await api.get('/resource/abcd-1234.json').set('X-APP-TOKEN', app.appToken).expect(200)
      const body = res.body as DatasetBody
      expect(body.dataset).toBe('abcd-1234')
      expect(body.gate.application).toMatchObject({ appToken: app.appToken, name: 'Transit dashboard' })
      expect(body.gate.application).not.toHaveProperty('secretHash')
      expect(body.gate.throttle).toMatchObject({ policy: 'application', limit: 3, remaining: 2 })
    })

    it('identifies the application from $$app_token', async () => {
      const { app, api } = await start()
      const res = await api.get(`/resource/abcd-1234.json?$$app_token=${app.appToken}&$limit=5`).expect(200)
      expect((res.body as DatasetBody).gate.application?.appToken).toBe(app.appToken)
    })

    it('identifies the application from the SODA 1.0 app_token, unless that is turned off', async () => {
      const on = await start()
      const res = await on.api.get(`/resource/abcd-1234.json?app_token=${on.app.appToken}`).expect(200)
      expect((res.body as DatasetBody).gate.application?.appToken).toBe(on.app.appToken)
      const off = await start({ legacyAppTokenParam: false })
      const anon = await off.api.get(`/resource/abcd-1234.json?app_token=${off.app.appToken}`).expect(200)
      expect((anon.body as DatasetBody).gate.application).toBeNull()
    })

    it('refuses a header and a query parameter naming different tokens with 403', async () => {
      const { gate, app, api } = await start()
      const other = await gate.applications.register({ name: 'Other' })
      const res = await api.get(`/resource/abcd-1234.json?$$app_token=${other.appToken}`).set('X-App-Token', app.appToken).expect(403)
      expect(res.body).toMatchObject({ code: 'permission_denied', error: true })
      expect(res.body.message).toMatch(/Conflicting app tokens/)
    })

    it('decodes percent-encoded parameter names as the host does: an unknown token is refused, a known one identified, a conflict seen', async () => {
      const { gate, app, api } = await start()
      await api.get('/resource/abcd-1234.json?app%5Ftoken=not-a-registered-token').expect(403)
      await api.get('/resource/abcd-1234.json?%24%24app%5Ftoken=not-a-registered-token').expect(403)
      const res = await api.get(`/resource/abcd-1234.json?%24%24%61pp_token=${app.appToken}`).expect(200)
      expect((res.body as DatasetBody).gate.application?.appToken).toBe(app.appToken)
      const other = await gate.applications.register({ name: 'Other' })
      const conflict = await api.get(`/resource/abcd-1234.json?$$app%5ftoken=${other.appToken}`).set('X-App-Token', app.appToken).expect(403)
      expect(conflict.body.message).toMatch(/Conflicting app tokens/)
    })

    it('checks a token under every name a query parser reads as an app token: bracketed, in brackets, percent-encoded', async () => {
      const { gate, app, api } = await start({ throttle: false })
      const names = ['$$app_token[]', 'app_token[]', '$$app_token[x]', '$$app_token[0]', '%24%24app_token%5B%5D', '%5B%24%24app_token%5D', 'app%5Ftoken%5Bx%5D']
      for (const name of names) {
        const bogus = await api.get(`/resource/abcd-1234.json?${name}=bogus`)
        expect({ name, status: bogus.status, body: bogus.body }).toEqual({ name, status: 403, body: { code: 'permission_denied', error: true, message: 'Invalid app_token specified' } })
        const known = await api.get(`/resource/abcd-1234.json?${name}=${app.appToken}`)
        expect({ name, status: known.status, application: (known.body as DatasetBody).gate.application?.appToken }).toEqual({ name, status: 200, application: app.appToken })
      }
      const other = await gate.applications.register({ name: 'Other' })
      const conflict = await api.get(`/resource/abcd-1234.json?$$app_token=${app.appToken}&$$app_token[]=${other.appToken}`).expect(403)
      expect(conflict.body.message).toMatch(/Conflicting app tokens/)
    })

    it('refuses an unknown token with the platform body and error headers', async () => {
      const { api } = await start()
      const res = await api.get('/resource/abcd-1234.json').set('X-App-Token', 'not-a-registered-token').expect(403)
      expect(res.body).toEqual({ code: 'permission_denied', error: true, message: 'Invalid app_token specified' })
      expect(res.headers['content-type']).toMatch(/^application\/json/)
      expect(res.headers['x-error-code']).toBe('permission_denied')
      expect(res.headers['x-error-message']).toBe('Invalid app_token specified')
      expect(res.headers.ratelimit).toBeUndefined()
    })

    it('refuses the token of a deleted application', async () => {
      const { gate, app, api } = await start()
      await api.get('/resource/abcd-1234.json').set('X-App-Token', app.appToken).expect(200)
      await gate.applications.delete(app.appToken)
      await api.get('/resource/abcd-1234.json').set('X-App-Token', app.appToken).expect(403)
    })

    it('lets a request without a token through on the anonymous budget', async () => {
      const { api } = await start()
      const res = await api.get('/resource/abcd-1234.json').expect(200)
      expect((res.body as DatasetBody).gate).toMatchObject({ application: null, throttle: { policy: 'anonymous', remaining: 1 } })
    })
  })

  describe('throttling', () => {
    it('announces the budget in RateLimit-Policy and RateLimit', async () => {
      const { app, api } = await start()
      const res = await api.get('/resource/abcd-1234.json').set('X-App-Token', app.appToken).expect(200)
      expect(res.headers['ratelimit-policy']).toBe('"app";q=3;w=60')
      expect(res.headers.ratelimit).toBe('"app";r=2;t=20')
    })

    it('answers 429 with Retry-After and the platform body once an application’s budget is spent', async () => {
      const { app, api } = await start()
      for (let i = 0; i < 3; i++) await api.get('/resource/abcd-1234.json').set('X-App-Token', app.appToken).expect(200)
      const res = await api.get('/resource/abcd-1234.json').set('X-App-Token', app.appToken).expect(429)
      expect(res.body).toMatchObject({ code: 'too_many_requests', error: true })
      expect(res.headers['retry-after']).toBe('20')
      expect(res.headers.ratelimit).toBe('"app";r=0;t=20')
      expect(res.headers['x-error-code']).toBe('too_many_requests')
    })

    it('throttles anonymous requests on their own, lower budget', async () => {
      const { app, api } = await start()
      await api.get('/resource/abcd-1234.json').expect(200)
      await api.get('/resource/abcd-1234.json').expect(200)
      const res = await api.get('/resource/abcd-1234.json').expect(429)
      expect(res.body.message).toMatch(/without an app token/)
      expect(res.headers['ratelimit-policy']).toBe('"anon";q=2;w=60')
      await api.get('/resource/abcd-1234.json').set('X-App-Token', app.appToken).expect(200)
    })

    it('sends the legacy X-RateLimit headers when asked', async () => {
      const { app, api } = await start({ throttle: { application: { limit: 3, windowMs: 60_000 }, legacyHeaders: true } })
      const res = await api.get('/resource/abcd-1234.json').set('X-App-Token', app.appToken).expect(200)
      expect(res.headers['x-ratelimit-limit']).toBe('3')
      expect(res.headers['x-ratelimit-remaining']).toBe('2')
    })
  })

  describe('proxies and https', () => {
    it('believes X-Forwarded-For and X-Forwarded-Proto from a trusted proxy', async () => {
      const { api } = await start({ trustProxy: 'loopback' })
      const res = await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.9').set('X-Forwarded-Proto', 'https').expect(200)
      expect((res.body as DatasetBody).gate).toMatchObject({ clientIp: '203.0.113.9', secure: true })
    })

    it('ignores the same headers from an untrusted peer', async () => {
      const { api } = await start({ trustProxy: ['10.0.0.0/8'] })
      const res = await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.9').set('X-Forwarded-Proto', 'https').expect(200)
      expect((res.body as DatasetBody).gate).toMatchObject({ clientIp: '127.0.0.1', secure: false })
    })

    it('normalises an IPv4-mapped address from a trusted proxy in any spelling to the IPv4 address', async () => {
      const { api } = await start({ trustProxy: 'loopback', throttle: false })
      for (const spelling of ['::FFFF:203.0.113.9', '::ffff:cb00:7109', '0:0:0:0:0:ffff:203.0.113.9', '[::ffff:203.0.113.9]:443', '[::FFFF:CB00:7109]']) {
        const res = await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', spelling).expect(200)
        expect((res.body as DatasetBody).gate.clientIp).toBe('203.0.113.9')
      }
    })

    it('counts anonymous clients behind a trusted proxy by their own address', async () => {
      const { api } = await start({ trustProxy: 'loopback' })
      await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.1').expect(200)
      await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.1').expect(200)
      await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.1').expect(429)
      await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.2').expect(200)
    })

    it('cannot be talked out of the budget by a spoofed X-Forwarded-For from an untrusted peer, and warns once about the headers', async () => {
      const { api } = await start()
      const { warnings } = await captureWarnings(async () => {
        await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.1').expect(200)
        await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.2').expect(200)
        await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.3').expect(429)
      })
      expect(warnings).toEqual([expect.objectContaining({ code: 'ODG_UNTRUSTED_PROXY_HEADERS', message: expect.stringContaining('set trustProxy') })])
    })

    it('sees a TLS connection as secure', async () => {
      const gate = createGate()
      const server = await listen(framework.listener(gate), true)
      running.push(server)
      const res = await request(server.url).get('/resource/abcd-1234.json').ca(TEST_CERT).expect(200)
      expect((res.body as DatasetBody).gate.secure).toBe(true)
    })
  })

  describe('authentication', () => {
    const PASSWORD = 'correct horse battery'
    const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

    /** One gate behind a plain and a TLS server, with a user, an API key and an access token. */
    async function startAuth(options: GateOptions = {}) {
      const gate = createGate({ throttle: false, basic: { scrypt: { logN: 10 } }, ...options })
      const app = await gate.applications.register({ name: 'Transit dashboard' })
      const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada & <Co>', email: 'ada@example.org', rights: ['edit'] })
      const key = await gate.apiKeys.create(ada.id, { name: 'etl' })
      const token = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
      const listener = framework.listener(gate)
      const plain = await listen(listener)
      const tls = await listen(listener, true)
      running.push(plain, tls)
      const secure = request(tls.url)
      return {
        gate,
        app,
        ada,
        key,
        token,
        plain: request(plain.url),
        get: (path: string) => secure.get(path).ca(TEST_CERT),
        post: (path: string) => secure.post(path).ca(TEST_CERT),
      }
    }

    it('authenticates a username and password over https', async () => {
      const { app, ada, get } = await startAuth()
      const res = await get('/resource/abcd-1234.json').set('Authorization', basic('ada', PASSWORD)).set('X-App-Token', app.appToken).expect(200)
      expect((res.body as DatasetBody).gate).toMatchObject({ auth: 'password', user: { id: ada.id, username: 'ada', rights: ['edit'] }, secure: true })
    })

    it('authenticates an API key over https, and refuses it the moment it is revoked', async () => {
      const { gate, app, key, get } = await startAuth()
      const res = await get('/resource/abcd-1234.json').set('Authorization', basic(key.keyId, key.keySecret)).set('X-App-Token', app.appToken).expect(200)
      expect((res.body as DatasetBody).gate).toMatchObject({ auth: 'api-key', apiKeyId: key.keyId })
      await gate.apiKeys.revoke(key.keyId)
      const refused = await get('/resource/abcd-1234.json').set('Authorization', basic(key.keyId, key.keySecret)).set('X-App-Token', app.appToken).expect(401)
      expect(refused.body).toMatchObject({ code: 'invalid_credentials', error: true })
    })

    it('authenticates an OAuth access token over https', async () => {
      const { ada, token, get } = await startAuth()
      const res = await get('/resource/abcd-1234.json').set('Authorization', `OAuth ${token.accessToken}`).expect(200)
      expect((res.body as DatasetBody).gate).toMatchObject({ auth: 'oauth', user: { id: ada.id } })
    })

    it('denies Basic over plain http with 403, and believes a trusted proxy that says https', async () => {
      const plainGate = await startAuth()
      const refused = await plainGate.plain.get('/resource/abcd-1234.json').set('Authorization', basic('ada', PASSWORD)).set('X-App-Token', plainGate.app.appToken).expect(403)
      expect(refused.body).toMatchObject({ code: 'https_required', error: true })
      const proxied = await startAuth({ trustProxy: 'loopback' })
      const res = await proxied.plain
        .get('/resource/abcd-1234.json')
        .set('Authorization', basic('ada', PASSWORD))
        .set('X-App-Token', proxied.app.appToken)
        .set('X-Forwarded-Proto', 'https')
        .expect(200)
      expect((res.body as DatasetBody).gate).toMatchObject({ auth: 'password', secure: true })
    })

    it('does not believe an untrusted peer that claims https', async () => {
      const { app, plain } = await startAuth({ trustProxy: ['10.0.0.0/8'] })
      await plain.get('/resource/abcd-1234.json').set('Authorization', basic('ada', PASSWORD)).set('X-App-Token', app.appToken).set('X-Forwarded-Proto', 'https').expect(403)
    })

    it('answers a forgotten proxy (loopback peer, https claimed, no proxy trusted) with 500 proxy_not_trusted, and revokes nothing', async () => {
      const { gate, app, token, plain, get } = await startAuth()
      const { warnings } = await captureWarnings(async () => {
        const viaToken = await plain.get('/private/abcd-1234.json').set('Authorization', `OAuth ${token.accessToken}`).set('X-Forwarded-Proto', 'https').expect(500)
        expect(viaToken.body).toMatchObject({ code: 'proxy_not_trusted', error: true, message: expect.stringContaining('trustProxy') })
        const viaBasic = await plain
          .get('/resource/abcd-1234.json')
          .set('Authorization', basic('ada', PASSWORD))
          .set('X-App-Token', app.appToken)
          .set('Forwarded', 'for=203.0.113.9;proto=https')
          .expect(500)
        expect(viaBasic.body.code).toBe('proxy_not_trusted')
        expect(viaBasic.body.message).not.toMatch(/insecure/)
      })
      expect(warnings.map((w) => w.code)).toEqual(['ODG_UNTRUSTED_PROXY_HEADERS'])
      // The user's grant survived the deployment mistake.
      await get('/private/abcd-1234.json').set('Authorization', `OAuth ${token.accessToken}`).expect(200)
      // A real plain-http request still costs the token.
      const insecure = await plain.get('/private/abcd-1234.json').set('Authorization', `OAuth ${token.accessToken}`).set('X-Forwarded-Proto', 'http').expect(403)
      expect(insecure.body.message).toMatch(/has been revoked/)
      expect((await gate.tokens.revoke(token.accessToken))).toBe(false)
    })

    it('counts an OAuth request without X-App-Token against the token\'s application, and refuses another application\'s X-App-Token', async () => {
      const { gate, app, token, get } = await startAuth({ throttle: { application: { limit: 5, windowMs: 60_000 }, anonymous: { limit: 1, windowMs: 60_000 } } })
      const res = await get('/resource/abcd-1234.json').set('Authorization', `OAuth ${token.accessToken}`).expect(200)
      expect((res.body as DatasetBody).gate).toMatchObject({ auth: 'oauth', application: { appToken: app.appToken }, throttle: { policy: 'application', limit: 5, remaining: 4 } })
      expect(res.headers.ratelimit).toBe('"app";r=4;t=12')
      const other = await gate.applications.register({ name: 'Other' })
      const mismatch = await get('/resource/abcd-1234.json').set('Authorization', `OAuth ${token.accessToken}`).set('X-App-Token', other.appToken).expect(403)
      expect(mismatch.body).toMatchObject({ code: 'app_token_mismatch', error: true })
      // The literal reading: no X-App-Token, the anonymous pool.
      const literal = await startAuth({ throttle: { anonymous: { limit: 1, windowMs: 60_000 }, oauthTokenBudget: 'anonymous' } })
      const anon = await literal.get('/resource/abcd-1234.json').set('Authorization', `OAuth ${literal.token.accessToken}`).expect(200)
      expect((anon.body as DatasetBody).gate).toMatchObject({ user: { id: literal.ada.id }, application: null, throttle: { policy: 'anonymous' } })
      await literal.get('/resource/abcd-1234.json').set('Authorization', `OAuth ${literal.token.accessToken}`).expect(429)
    })

    it('denies Basic without an application token', async () => {
      const { get } = await startAuth()
      const res = await get('/resource/abcd-1234.json').set('Authorization', basic('ada', PASSWORD)).expect(403)
      expect(res.body.code).toBe('app_token_required')
    })

    it('answers malformed Basic credentials with a 400 JSON body, never a 500', async () => {
      const { app, get } = await startAuth()
      const res = await get('/resource/abcd-1234.json').set('Authorization', 'Basic %%%').set('X-App-Token', app.appToken).expect(400)
      expect(res.body).toMatchObject({ code: 'invalid_request', error: true })
    })

    it('answers a tab or anything but one space after the Basic, OAuth or Bearer scheme with 400, never ignoring it', async () => {
      const { app, token, get } = await startAuth()
      const encoded = Buffer.from(`ada:${PASSWORD}`).toString('base64')
      for (const header of [`Basic\t${encoded}`, `Basic  ${encoded}`, `OAuth\t${token.accessToken}`, `Bearer\t${token.accessToken}`, `OAuth  ${token.accessToken}`]) {
        const res = await get('/resource/abcd-1234.json').set('Authorization', header).set('X-App-Token', app.appToken).expect(400)
        expect(res.body).toMatchObject({ code: 'invalid_request', error: true })
      }
    })

    it('answers Basic and an OAuth token in one request with 400', async () => {
      const { app, token, get } = await startAuth()
      // Two Authorization header lines; superagent's types allow arrays only for Cookie.
      const res = await get('/resource/abcd-1234.json').set('Authorization', [basic('ada', PASSWORD), `OAuth ${token.accessToken}`] as unknown as string).set('X-App-Token', app.appToken).expect(400)
      expect(res.body.message).toMatch(/more than one Authorization header/)
    })

    it('revokes a token used once over plain http; it stays revoked over https', async () => {
      const { token, plain, get } = await startAuth()
      const over = await plain.get('/resource/abcd-1234.json').set('Authorization', `OAuth ${token.accessToken}`).expect(200)
      expect((over.body as DatasetBody).gate).toMatchObject({ auth: 'none', user: null, revokedInsecureToken: true })
      const after = await get('/resource/abcd-1234.json').set('Authorization', `OAuth ${token.accessToken}`).expect(401)
      expect(after.body.code).toBe('invalid_token')
    })

    it('revokes an access token sent in clear in the query, a body field or a malformed header; the request goes on unauthenticated', async () => {
      const { gate, ada, app, plain, get } = await startAuth()
      const forms: Array<{ name: string; send: (t: string) => Promise<unknown>; status: number }> = [
        { name: '?access_token=', send: (t) => plain.get(`/resource/abcd-1234.json?access_token=${t}`), status: 200 },
        { name: '?oauth_token=', send: (t) => plain.get(`/resource/abcd-1234.json?oauth%5Ftoken=${t}`), status: 200 },
        { name: 'OAuth <t>,', send: (t) => plain.get('/resource/abcd-1234.json').set('Authorization', `OAuth ${t},`), status: 400 },
        { name: 'OAuth token="<t>"', send: (t) => plain.get('/resource/abcd-1234.json').set('Authorization', `OAuth token="${t}"`), status: 400 },
        { name: 'OAuth<TAB><t>', send: (t) => plain.get('/resource/abcd-1234.json').set('Authorization', `OAuth\t${t}`), status: 400 },
        { name: 'access_token at the token endpoint', send: (t) => plain.post('/oauth/access_token').type('form').send({ access_token: t }), status: 400 },
        { name: 'token at the revocation endpoint', send: (t) => plain.post('/oauth/revoke').type('form').send({ token: t, client_id: app.appToken }), status: 400 },
      ]
      const revoked: string[] = []
      gate.on('tokenRevoked', (e) => revoked.push(e.reason))
      for (const form of forms) {
        const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
        const res = (await form.send(accessToken)) as { status: number; body: DatasetBody }
        expect({ form: form.name, status: res.status }).toEqual({ form: form.name, status: form.status })
        if (res.status === 200) expect(res.body.gate).toMatchObject({ auth: 'none', user: null, revokedInsecureToken: true })
        const after = await get('/resource/abcd-1234.json').set('Authorization', `OAuth ${accessToken}`)
        expect({ form: form.name, status: after.status }).toEqual({ form: form.name, status: 401 })
      }
      expect(revoked).toEqual(forms.map(() => 'insecure-transport'))
    })

    it('revokes an API key whose right secret came over plain http, and tells the event; a wrong secret revokes nothing', async () => {
      const { gate, ada, app, plain, get } = await startAuth()
      const events: unknown[] = []
      gate.on('apiKeyRevoked', (e) => events.push(e))
      const kept = await gate.apiKeys.create(ada.id, { name: 'kept' })
      await plain.get('/resource/abcd-1234.json').set('Authorization', basic(kept.keyId, 'not the secret')).set('X-App-Token', app.appToken).expect(403)
      await get('/resource/abcd-1234.json').set('Authorization', basic(kept.keyId, kept.keySecret)).set('X-App-Token', app.appToken).expect(200)
      const leaked = await gate.apiKeys.create(ada.id, { name: 'leaked' })
      const res = await plain.get('/resource/abcd-1234.json').set('Authorization', basic(leaked.keyId, leaked.keySecret)).set('X-App-Token', app.appToken).expect(403)
      expect(res.body.code).toBe('https_required')
      await get('/resource/abcd-1234.json').set('Authorization', basic(leaked.keyId, leaked.keySecret)).set('X-App-Token', app.appToken).expect(401)
      expect((await gate.apiKeys.find(leaked.keyId))?.revokedAt).toEqual(expect.any(Number))
      expect(events).toEqual([{ reason: 'insecure-transport', keyId: leaked.keyId, userId: ada.id, ip: '127.0.0.1', requestId: expect.any(String) }])
    })

    it('revokes an API key or access token sent over plain http in any spelling, whatever refuses the request first, and answers as it would have anyway', async () => {
      const { gate, ada, app, plain, get } = await startAuth()
      const other = await gate.applications.register({ name: 'Other' })
      const gone = await gate.applications.register({ name: 'Deleted' })
      await gate.applications.delete(gone.appToken)
      type Sent = { status: number; body: { code?: string; error?: unknown; gate?: { auth: string } } }
      const b64 = (id: string, secret: string) => Buffer.from(`${id}:${secret}`).toString('base64')
      const keyCases: Array<[string, (id: string, secret: string) => Promise<unknown>]> = [
        ['an unknown app token', (id, s) => plain.get('/resource/abcd-1234.json').set('Authorization', basic(id, s)).set('X-App-Token', 'not-a-registered-token')],
        ['a deleted application\'s token', (id, s) => plain.get('/resource/abcd-1234.json').set('Authorization', basic(id, s)).set('X-App-Token', gone.appToken)],
        ['two different app tokens', (id, s) => plain.get(`/resource/abcd-1234.json?$$app_token=${other.appToken}`).set('Authorization', basic(id, s)).set('X-App-Token', app.appToken)],
        ['Basic with two spaces', (id, s) => plain.get('/resource/abcd-1234.json').set('Authorization', `Basic  ${b64(id, s)}`).set('X-App-Token', app.appToken)],
        ['two Authorization headers', (id, s) => plain.get('/resource/abcd-1234.json').set('Authorization', [basic(id, s), basic(id, s)] as unknown as string).set('X-App-Token', app.appToken)],
        ['Basic client authentication at the token endpoint', (id, s) => plain.post('/oauth/access_token').set('Authorization', basic(id, s)).type('form').send({ grant_type: 'authorization_code', code: 'x'.repeat(43) })],
      ]
      for (const [name, send] of keyCases) {
        const key = await gate.apiKeys.create(ada.id, { name })
        const dud = (await send(key.keyId, 'not-the-secret-of-this-key-0123456789abcd')) as Sent
        const leaked = (await send(key.keyId, key.keySecret)) as Sent
        expect({ name, status: leaked.status, code: leaked.body.code ?? leaked.body.error }).toEqual({ name, status: dud.status, code: dud.body.code ?? dud.body.error })
        const after = await get('/resource/abcd-1234.json').set('Authorization', basic(key.keyId, key.keySecret)).set('X-App-Token', app.appToken)
        expect({ name, status: after.status }).toEqual({ name, status: 401 })
      }
      const tokenCases: Array<[string, (t: string) => Promise<unknown>]> = [
        ['Bearer:<t>', (t) => plain.get('/resource/abcd-1234.json').set('Authorization', `Bearer:${t}`)],
        ["OAuth '<t>'", (t) => plain.get('/resource/abcd-1234.json').set('Authorization', `OAuth '${t}'`)],
        ['Bearer <<t>>', (t) => plain.get('/resource/abcd-1234.json').set('Authorization', `Bearer <${t}>`)],
        ['?access_token[]=<t>', (t) => plain.get(`/resource/abcd-1234.json?access_token[]=${t}`)],
        ['?a=1;access_token=<t>', (t) => plain.get(`/resource/abcd-1234.json?a=1;access_token=${t}`)],
      ]
      for (const [name, send] of tokenCases) {
        const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
        const dud = (await send('never-issued-token-0123456789abcdefghijklmno')) as Sent
        const leaked = (await send(accessToken)) as Sent
        expect({ name, status: leaked.status, code: leaked.body.code, auth: leaked.body.gate?.auth }).toEqual({ name, status: dud.status, code: dud.body.code, auth: dud.body.gate?.auth })
        const after = await get('/resource/abcd-1234.json').set('Authorization', `OAuth ${accessToken}`)
        expect({ name, status: after.status }).toEqual({ name, status: 401 })
      }
    })

    it('consumes a code posted over plain http, so it cannot be exchanged over https after', async () => {
      const { gate, ada, plain, post } = await startAuth()
      const client = await gate.applications.register({ name: 'Client', callbackPrefix: 'https://client.example/cb' })
      const code = 'a-code-that-travelled-in-clear-0123456789abc'
      const now = Date.now()
      await gate.store.insertAuthorizationCode({
        codeHash: sha256(code),
        appToken: client.appToken,
        userId: ada.id,
        redirectUri: 'https://client.example/cb',
        codeChallenge: null,
        createdAt: now,
        expiresAt: now + 60_000,
        usedAt: null,
      })
      const exposed: unknown[] = []
      gate.on('clientSecretExposed', (e) => exposed.push(e))
      const form = { grant_type: 'authorization_code', code, redirect_uri: 'https://client.example/cb', client_id: client.appToken, client_secret: client.secretToken }
      const refused = await plain.post('/oauth/access_token').type('form').send(form).expect(400)
      expect(refused.body.error).toBe('invalid_request')
      const later = await post('/oauth/access_token').type('form').send(form).expect(400)
      expect(later.body.error).toBe('invalid_grant')
      // The right client secret was seen in clear: reported, not rotated (the application keeps working).
      expect(exposed).toEqual([{ appToken: client.appToken, secret: 'current', ip: '127.0.0.1', requestId: expect.any(String) }])
      expect(await gate.applications.verifySecret(client.appToken, client.secretToken)).toBe(true)
    })

    it('keeps private data private: anonymous gets 403, a user gets the data', async () => {
      const { app, token, get, plain, gate } = await startAuth()
      const anonymous = await get('/private/abcd-1234.json').expect(403)
      expect(anonymous.body).toMatchObject({ code: 'authentication_required', error: true })
      const res = await get('/private/abcd-1234.json').set('Authorization', `OAuth ${token.accessToken}`).expect(200)
      expect((res.body as DatasetBody).dataset).toBe('abcd-1234')
      const leaked = await gate.tokens.issue({ userId: (res.body as DatasetBody).gate.user?.id as string, appToken: app.appToken })
      const insecure = await plain.get('/private/abcd-1234.json').set('Authorization', `OAuth ${leaked.accessToken}`).expect(403)
      expect(insecure.body.message).toMatch(/insecure connection and has been revoked/)
    })

    it('applies the view-query rule: a user or an application token, not neither', async () => {
      const { app, token, post } = await startAuth()
      const body = [{ column: 'name' }]
      const neither = await post('/api/v3/views/abcd-1234/query.json').send(body).expect(403)
      expect(neither.body.code).toBe('authentication_required')
      await post('/api/v3/views/abcd-1234/query.json').set('X-App-Token', app.appToken).send(body).expect(200)
      await post('/api/v3/views/abcd-1234/query.json').set('Authorization', `OAuth ${token.accessToken}`).send(body).expect(200)
    })

    it('serves the current user as JSON', async () => {
      const { ada, token, get } = await startAuth()
      for (const path of ['/api/users/current.json', '/users/current.json']) {
        const res = await get(path).set('Authorization', `OAuth ${token.accessToken}`).expect(200).expect('content-type', /application\/json/)
        expect(res.body).toEqual({ id: ada.id, screenName: 'Ada & <Co>', displayName: 'Ada & <Co>', email: 'ada@example.org', rights: ['edit'] })
      }
      const anonymous = await get('/api/users/current.json').expect(403)
      expect(anonymous.body.code).toBe('authentication_required')
    })

    it('serves the current user as well-formed XML', async () => {
      const { ada, key, app, get } = await startAuth()
      const res = await get('/users/current.xml').set('Authorization', basic(key.keyId, key.keySecret)).set('X-App-Token', app.appToken).buffer(true).parse((r, done) => {
        let text = ''
        r.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')))
        r.on('end', () => done(null, text))
      }).expect(200).expect('content-type', 'application/xml; charset=utf-8')
      const errors: string[] = []
      const doc = new DOMParser({ onError: (level, message) => errors.push(`${level}: ${message}`) }).parseFromString(res.body as string, 'application/xml')
      expect(errors).toEqual([])
      expect(doc.documentElement?.tagName).toBe('user')
      expect(doc.getElementsByTagName('id')[0]?.textContent).toBe(ada.id)
      expect(doc.getElementsByTagName('displayName')[0]?.textContent).toBe('Ada & <Co>')
    })
  })

  describe('password guessing and scrypt load, from several client addresses', () => {
    const PASSWORD = 'correct horse battery'
    const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

    /** A gate behind a "trusted proxy" that says https, so each loopback address is one secure client. */
    async function startLogin(basicOptions: NonNullable<GateOptions['basic']> = {}) {
      const gate = createGate({ throttle: false, trustProxy: 'loopback', basic: { scrypt: { logN: 10 }, requireAppToken: false, ...basicOptions } })
      await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada', email: 'ada@example.org' })
      const server = await listen(framework.listener(gate))
      running.push(server)
      const signIn = (from: string, user: string, password: string) =>
        requestFrom(server.url, from, { headers: { authorization: basic(user, password), 'x-forwarded-proto': 'https' } })
      return { gate, signIn }
    }
    const statuses = (answers: readonly RawAnswer[]) => answers.map((a) => a.status)

    it('bounds the guesses of one address across usernames, and past the budget refuses even the right password', async () => {
      const { signIn } = await startLogin({ addressFailures: { limit: 5, windowMs: 60_000 } })
      // The victim signs in from a NAT address; its right password is now cached for that address.
      expect((await signIn('127.0.0.2', 'ada', PASSWORD)).status).toBe(200)
      // A neighbour behind the same address guesses at once, across many usernames.
      const burst = await Promise.all(Array.from({ length: 30 }, (_, i) => signIn('127.0.0.2', `user${i}`, `guess number ${i}`)))
      expect(statuses(burst).filter((s) => s === 401).length).toBeLessThanOrEqual(5)
      expect(statuses(burst).every((s) => [401, 429, 503].includes(s))).toBe(true)
      const refused = await signIn('127.0.0.2', 'ada', PASSWORD)
      expect(refused.status).toBe(429)
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'too_many_requests', error: true })
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
      // A quiet address is not affected.
      expect((await signIn('127.0.0.3', 'ada', PASSWORD)).status).toBe(200)
    })

    it('keeps a legitimate user on a quiet address working while guesses from elsewhere lock the username out', async () => {
      const { signIn } = await startLogin({ failures: { limit: 3, windowMs: 60_000 } })
      expect((await signIn('127.0.0.2', 'ada', PASSWORD)).status).toBe(200)
      const guesses = await Promise.all(Array.from({ length: 8 }, (_, i) => signIn('127.0.0.3', 'ada', `guess number ${i}`)))
      expect(statuses(guesses)).toContain(429)
      expect((await signIn('127.0.0.3', 'ada', PASSWORD)).status).toBe(429)
      expect((await signIn('127.0.0.2', 'ada', PASSWORD)).status).toBe(200)
    })

    it('answers no guess for a locked-out username, not even the right password cached for the guessing address', async () => {
      const { signIn } = await startLogin({ failures: { limit: 3, windowMs: 60_000 } })
      expect((await signIn('127.0.0.2', 'ada', PASSWORD)).status).toBe(200)
      const guesses = await Promise.all(Array.from({ length: 12 }, (_, i) => signIn('127.0.0.2', 'ada', `guess number ${i}`)))
      expect(statuses(guesses).filter((s) => s === 401).length).toBeLessThanOrEqual(3)
      expect((await signIn('127.0.0.2', 'ada', PASSWORD)).status).toBe(429)
      expect((await signIn('127.0.0.3', 'ada', PASSWORD)).status).toBe(429)
    })

    it('lets a cold sign-in from a quiet address pass ahead of a flood of guesses from other addresses', async () => {
      const { signIn } = await startLogin({ scrypt: { logN: 12 }, cacheTtlMs: 0, addressFailures: false, hashing: { queuePerAddress: 20 } })
      const flooders = ['127.0.0.2', '127.0.0.3', '127.0.0.4']
      let answered = 0
      let firstAnswer!: () => void
      const started = new Promise<void>((resolve) => (firstAnswer = resolve))
      const flood = flooders.flatMap((from) =>
        Array.from({ length: 12 }, (_, i) =>
          signIn(from, `nobody-${from}-${i}`, 'wrong password here').then((answer) => {
            answered++
            firstAnswer()
            return answer
          }),
        ),
      )
      await started
      const quiet = await signIn('127.0.0.9', 'ada', PASSWORD)
      const answeredBefore = answered
      const floodAnswers = await Promise.all(flood)
      expect(quiet.status).toBe(200)
      expect(statuses(floodAnswers).every((s) => s === 401)).toBe(true)
      // It waited for a turn, not behind every guess queued before it.
      expect(answeredBefore).toBeLessThan(flood.length / 2)
    })

    it('answers 503 busy with Retry-After once too many sign-ins wait, and serves the rest', async () => {
      const { signIn } = await startLogin({ addressFailures: false, hashing: { concurrency: 1, queue: 2, queuePerAddress: 1 } })
      const answers = await Promise.all(
        ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'].flatMap((from) => Array.from({ length: 4 }, (_, i) => signIn(from, `nobody${i}`, 'wrong password here'))),
      )
      const busy = answers.filter((a) => a.status === 503)
      expect(busy.length).toBeGreaterThan(0)
      expect(JSON.parse(busy[0]?.body ?? '{}')).toMatchObject({ code: 'busy', error: true })
      expect(Number(busy[0]?.headers['retry-after'])).toBeGreaterThan(0)
      expect(statuses(answers).filter((s) => s === 401).length).toBeGreaterThanOrEqual(3)
      expect((await signIn('127.0.0.9', 'ada', PASSWORD)).status).toBe(200)
    })
  })

  describe('request bodies the gate reads', () => {
    /**
     * A raw client: the headers of a POST to the token endpoint announcing `declared`
     * bytes, then `send(socket)`; resolves with what came back once the server closed the
     * connection, or with `closed: false` if it had not after `waitMs`.
     */
    async function rawPost(url: string, declared: number, send: (socket: net.Socket) => void, waitMs: number) {
      const { port } = new URL(url)
      const socket = net.connect(Number(port), '127.0.0.1')
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
      let received = ''
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')))
      socket.on('error', () => {}) // a reset after the answer is a close too
      const closed = new Promise<boolean>((resolve) => {
        socket.once('close', () => resolve(true))
        setTimeout(() => resolve(false), waitMs)
      })
      socket.write(`POST /oauth/access_token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${declared}\r\n\r\n`)
      send(socket)
      const wasClosed = await closed
      socket.destroy()
      return { closed: wasClosed, received }
    }

    it('closes the connection after answering a body that is too large, instead of reading the rest', async () => {
      const { server } = await start()
      let sent = 0
      const chunk = Buffer.alloc(64 * 1024, 'a')
      const { closed, received } = await rawPost(server.url, 1024 * 1024 * 1024, (socket) => {
        const pump = () => {
          while (!socket.destroyed && sent < 64 * 1024 * 1024) {
            sent += chunk.length
            if (!socket.write(chunk)) {
              socket.once('drain', pump)
              return
            }
          }
        }
        pump()
      }, 3000)
      expect(received).toMatch(/^HTTP\/1\.1 400 /)
      expect(received.toLowerCase()).toContain('connection: close')
      expect(closed).toBe(true)
      expect(sent).toBeLessThan(64 * 1024 * 1024)
    })

    it('answers a token request whose body has not arrived in time with 408, in RFC 6749’s shape, and closes the connection', async () => {
      const { server } = await start({ bodyTimeoutMs: 200 })
      const { closed, received } = await rawPost(server.url, 100, (socket) => socket.write('grant_type='), 3000)
      expect(received).toMatch(/^HTTP\/1\.1 408 /)
      expect(received.toLowerCase()).toContain('connection: close')
      expect(received).toContain('{"error":"request_timeout","error_description":"The request body did not arrive in time"}')
      expect(closed).toBe(true)
    })
  })

  describe('request ids', () => {
    const ID = /^[A-Za-z0-9_-]{12}-[0-9a-z]+$/

    it('sends X-Request-Id on the host’s answer, equal to req.gate.requestId, and on every answer of the gate’s own', async () => {
      const { app, api } = await start({ oauth: { issuer: 'https://data.example' } })
      const passed = await api.get('/resource/abcd-1234.json').set('X-App-Token', app.appToken).expect(200)
      const id = passed.headers['x-request-id'] as string
      expect(id).toMatch(ID)
      expect((passed.body as DatasetBody).gate.requestId).toBe(id)
      const answers = [
        await api.get('/resource/abcd-1234.json').set('X-App-Token', 'not-a-registered-token').expect(403),
        await api.get('/private/abcd-1234.json').expect(403),
        await api.get('/api/users/current.json').expect(403),
        await api.get('/.well-known/oauth-authorization-server').expect(200),
        await api.post('/oauth/access_token').type('form').send({ grant_type: 'authorization_code' }).expect(400),
        // The anonymous budget of 2 is spent by the guarded and current-user requests above.
        await api.get('/resource/abcd-1234.json').expect(429),
      ]
      const ids = answers.map((res) => res.headers['x-request-id'] as string)
      for (const one of ids) expect(one).toMatch(ID)
      expect(new Set([id, ...ids]).size).toBe(ids.length + 1)
    })

    it('keeps the id a trusted proxy sent, and replaces a client’s own or a malformed one', async () => {
      const trusted = await start({ trustProxy: 'loopback' })
      const kept = await trusted.api.get('/resource/abcd-1234.json').set('X-Request-Id', 'lb-7f3a9c').expect(200)
      expect(kept.headers['x-request-id']).toBe('lb-7f3a9c')
      expect((kept.body as DatasetBody).gate.requestId).toBe('lb-7f3a9c')
      const tooLong = await trusted.api.get('/resource/abcd-1234.json').set('X-Request-Id', 'x'.repeat(129)).expect(200)
      expect(tooLong.headers['x-request-id']).toMatch(ID)
      const untrusted = await start()
      const replaced = await untrusted.api.get('/resource/abcd-1234.json').set('X-Request-Id', 'lb-7f3a9c').expect(200)
      expect(replaced.headers['x-request-id']).toMatch(ID)
    })

    it('sends none with requestId: false, and under another name when asked', async () => {
      const off = await start({ requestId: false })
      const none = await off.api.get('/resource/abcd-1234.json').expect(200)
      expect(none.headers['x-request-id']).toBeUndefined()
      expect((none.body as DatasetBody).gate.requestId).toBeNull()
      const renamed = await start({ requestId: { header: 'X-Correlation-Id' } })
      const other = await renamed.api.get('/resource/abcd-1234.json').set('X-Correlation-Id', 'from-client').expect(200)
      expect(other.headers['x-correlation-id']).toMatch(ID)
      expect(other.headers['x-request-id']).toBeUndefined()
    })
  })

  describe('failures', () => {
    async function serve(store: MemoryStore) {
      // Quiet: the failures here are on purpose (their log lines are test/logger.test.ts's).
      const gate = createGate({ store, logger: false })
      const internal: unknown[] = []
      const ids: unknown[] = []
      gate.on('internalError', (e) => {
        internal.push(e.error)
        ids.push(e.requestId)
      })
      const server = await listen(framework.listener(gate))
      running.push(server)
      return { api: request(server.url), internal, ids }
    }

    it('answers a store that throws with 503 service_unavailable, not a 500', async () => {
      const { api, internal } = await serve(new ThrowingStore())
      const res = await api.get('/resource/abcd-1234.json').set('X-App-Token', 'abcdef').expect(503)
      expect(res.body).toMatchObject({ code: 'service_unavailable', error: true })
      expect(JSON.stringify(res.body)).not.toMatch(/custom store/)
      expect(internal).toEqual([])
    })

    it('tells the client when to retry a store outage: Retry-After on the 503', async () => {
      const { api } = await serve(new ThrowingStore())
      const res = await api.get('/resource/abcd-1234.json').set('X-App-Token', 'abcdef').expect(503)
      expect(res.headers['retry-after']).toBe('1')
      const token = await api.post('/oauth/access_token').type('form').send({ grant_type: 'authorization_code', code: 'c', client_id: 'abcdef', client_secret: 's' }).expect(503)
      expect(token.body).toMatchObject({ error: 'temporarily_unavailable' })
      expect(token.headers['retry-after']).toBe('1')
    })

    it('answers an unexpected failure with a generic JSON 500 and tells the internalError event', async () => {
      const { api, internal, ids } = await serve(new GarbageStore())
      const res = await api.get('/resource/abcd-1234.json').expect(500)
      expect(res.body).toEqual({ code: 'internal', error: true, message: 'Internal server error' })
      expect(internal).toHaveLength(1)
      expect(ids).toEqual([res.headers['x-request-id']])
    })
  })
})

describe('mounting an adapter', () => {
  const handler = () => {}
  const mounts: Array<[string, (gate: unknown) => unknown]> = [
    ['expressGate', (gate) => expressGate(gate as Gate)],
    ['koaGate', (gate) => koaGate(gate as Gate)],
    ['nodeGate', (gate) => nodeGate(gate as Gate, handler)],
    ['expressGuard', (gate) => expressGuard(gate as Gate, { auth: 'required' })],
    ['koaGuard', (gate) => koaGuard(gate as Gate, { auth: 'required' })],
    ['nodeGuard', (gate) => nodeGuard(gate as Gate, { auth: 'required' })],
  ]
  const wrong: Array<[string, unknown, RegExp]> = [
    ['nothing', undefined, /got undefined/],
    ['null', null, /got null/],
    ['the options', { throttle: {} }, /got an object with throttle: these are createGate options; mount the gate createGate\(options\) returns/],
    ['a store', new MemoryStore(), /got a MemoryStore/],
    ['a string', 'gate', /got a string/],
  ]

  it.each(mounts.flatMap(([name, mount]) => wrong.map(([what, value, message]) => [name, what, mount, value, message] as const)))(
    'refuses at mount, with a TypeError saying what it got, anything but a gate: %s(%s)',
    (name, _, mount, value, message) => {
      expect(() => mount(value)).toThrow(TypeError)
      expect(() => mount(value)).toThrow(new RegExp(`^open-data-gate: ${name}\\(gate.*\\) takes the gate createGate\\(\\) returns`))
      expect(() => mount(value)).toThrow(message)
    },
  )

  it('mounts a gate, whichever build made it (a gate-shaped object from the other module format)', () => {
    const gate = createGate()
    const shaped = { handle: gate.handle.bind(gate), errorResponse: gate.errorResponse.bind(gate), guard: gate.guard.bind(gate) }
    for (const [, mount] of mounts) {
      expect(typeof mount(gate)).toBe('function')
      expect(typeof mount(shaped)).toBe('function')
    }
  })
})

describe.each(FRAMEWORKS_WITH_BODY_PARSERS)('$name', (framework) => {
  it('revokes an access token in the body a body parser already read, over plain http', async () => {
    const gate = createGate({ throttle: false })
    const app = await gate.applications.register({ name: 'Transit dashboard' })
    const user = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'ada@example.org' })
    const { accessToken } = await gate.tokens.issue({ userId: user.id, appToken: app.appToken })
    const server = await listen(framework.listener(gate))
    try {
      const res = await request(server.url).post('/api/v3/views/abcd-1234/query.json').set('X-App-Token', app.appToken).send({ access_token: accessToken }).expect(200)
      expect((res.body as DatasetBody).gate).toMatchObject({ auth: 'none', revokedInsecureToken: true })
      expect((await gate.store.getAccessToken(sha256(accessToken)))?.revokedAt).toEqual(expect.any(Number))
    } finally {
      await server.close()
    }
  })
})

/**
 * The platform's API key endpoints and connected apps, in every mount, those with a body
 * parser in front of the gate included: who may do what, and the shapes.
 */
describe.each([...FRAMEWORKS, ...FRAMEWORKS_WITH_BODY_PARSERS])('$name: API keys and connected apps', (framework) => {
  const PASSWORD = 'correct horse battery'
  const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
  const running: RunningServer[] = []
  afterEach(async () => {
    await Promise.all(running.splice(0).map((s) => s.close()))
  })

  async function start() {
    const gate = createGate({ throttle: false, basic: { scrypt: { logN: 10 } } })
    const app = await gate.applications.register({ name: 'Transit dashboard' })
    const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada Lovelace', email: 'ada@example.org' })
    const key = await gate.apiKeys.create(ada.id, { name: 'etl' })
    const token = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    const tls = await listen(framework.listener(gate), true)
    const plain = await listen(framework.listener(gate))
    running.push(tls, plain)
    const api = request(tls.url)
    const password = { authorization: basic('ada', PASSWORD), 'x-app-token': app.appToken }
    const apiKey = { authorization: basic(key.keyId, key.keySecret), 'x-app-token': app.appToken }
    const oauth = { authorization: `OAuth ${token.accessToken}` }
    /** Signs in on the connected-apps page, as a browser would: the session and CSRF cookies. */
    const signIn = async () => {
      const browser = new Browser()
      const page = await browser.get(`${tls.url}/oauth/grants`)
      const posted = await browser.post(page.url, { csrf_token: csrfOf(page), username: 'ada', password: PASSWORD, action: 'login' })
      expect(posted.status).toBe(303)
      return [...browser.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
    }
    return {
      gate,
      app,
      ada,
      key,
      token,
      ownOrigin: tls.url,
      password,
      apiKey,
      oauth,
      signIn,
      plain: request(plain.url),
      get: (path: string, headers: Record<string, string> = {}) => api.get(path).ca(TEST_CERT).set(headers),
      post: (path: string, headers: Record<string, string> = {}) => api.post(path).ca(TEST_CERT).set(headers),
      del: (path: string, headers: Record<string, string> = {}) => api.delete(path).ca(TEST_CERT).set(headers),
      patch: (path: string, headers: Record<string, string> = {}) => api.patch(path).ca(TEST_CERT).set(headers),
    }
  }

  it('creates a key with a JSON body, lists it, shows it, deletes it, and the key stops working', async () => {
    const { ada, app, password, get, post, del } = await start()
    const created = await post('/api/api_keys', password).send({ keyName: 'Nightly ETL' }).expect(200).expect('content-type', /application\/json/)
    expect(created.body).toMatchObject({ keyName: 'Nightly ETL', owner: { id: ada.id, displayName: 'Ada Lovelace', email: 'ada@example.org' } })
    const { keyId, keySecret } = created.body as { keyId: string; keySecret: string }
    const newKey = { authorization: basic(keyId, keySecret), 'x-app-token': app.appToken }
    await get('/private/abcd-1234.json', newKey).expect(200)

    const listed = await get('/api/api_keys?sortBy=name', password).expect(200)
    expect((listed.body as Array<Record<string, unknown>>).map((k) => k.keyName)).toEqual(['Nightly ETL', 'etl'])
    expect(JSON.stringify(listed.body)).not.toMatch(/keySecret/)
    const shown = await get(`/api/api_keys/${keyId}`, password).expect(200)
    expect(shown.body).not.toHaveProperty('keySecret')

    const deleted = await del(`/api/api_keys/${keyId}`, password).expect(200)
    expect((deleted.body as { deletedAtTimestamp: string }).deletedAtTimestamp).toMatch(/Z$/)
    await get('/private/abcd-1234.json', newKey).expect(401)
    expect(((await get('/api/api_keys', password).expect(200)).body as unknown[]).length).toBe(1)
    expect(((await get('/api/api_keys?includeDeleted=true', password).expect(200)).body as unknown[]).length).toBe(2)
  })

  it('answers a create without keyName with the platform’s error body', async () => {
    const { password, post } = await start()
    const res = await post('/api/api_keys', password).send({ name: 'wrong field' }).expect(400)
    expect(res.body).toEqual({ code: 'API_KEY.MISSING_FIELD', error: true, message: 'keyName is required' })
    expect(res.headers['x-error-code']).toBe('API_KEY.MISSING_FIELD')
  })

  it('refuses an OAuth token and an API key on every API key and connected-apps endpoint, reading included', async () => {
    const { gate, ada, app, key, apiKey, oauth, get, post, del } = await start()
    for (const [name, credentials] of [
      ['an OAuth token', oauth],
      ['an API key', apiKey],
    ] as const) {
      for (const [what, request] of [
        ['list keys', () => get('/api/api_keys', credentials)],
        ['show a key', () => get(`/api/api_keys/${key.keyId}`, credentials)],
        ['create a key', () => post('/api/api_keys', credentials).send({ keyName: 'minted' })],
        ['delete a key', () => del(`/api/api_keys/${key.keyId}`, credentials)],
        ['list connected apps', () => get('/api/oauth/grants', credentials)],
        ['revoke a connected app', () => del(`/api/oauth/grants/${app.appToken}`, credentials)],
      ] as const) {
        const res = await request()
        expect([name, what, res.status, res.body]).toEqual([name, what, 403, { code: 'first_party_credentials_required', error: true, message: expect.stringMatching(/password/) }])
        expect(res.headers['x-error-code']).toBe('first_party_credentials_required')
      }
    }
    // Nothing changed: no key minted, the key not deleted, the app still connected, the token still working.
    expect((await gate.apiKeys.list(ada.id)).map((k) => [k.name, k.revokedAt])).toEqual([['etl', null]])
    expect((await gate.grants.list(ada.id)).map((g) => g.appToken)).toEqual([app.appToken])
    await get('/api/users/current.json', oauth).expect(200)
  })

  it('refuses anonymous requests, and anything over plain http', async () => {
    const { password, get, plain } = await start()
    const anonymous = await get('/api/api_keys').expect(403)
    expect(anonymous.body.code).toBe('authentication_required')
    expect((await get('/api/oauth/grants').expect(403)).body.code).toBe('authentication_required')
    expect((await plain.get('/api/api_keys').expect(403)).body.code).toBe('https_required')
    expect((await plain.get('/api/api_keys').set(password).expect(403)).body.code).toBe('https_required')
  })

  it('takes the gate’s login session, and a change on it only with the CSRF header', async () => {
    const { signIn, get, post, del, key } = await start()
    const cookie = await signIn()
    const listed = await get('/api/api_keys', { cookie }).expect(200)
    expect(listed.headers.vary).toMatch(/Cookie/)
    const csrf = listed.headers['x-csrf-token'] as string
    expect(csrf).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const forged = await post('/api/api_keys', { cookie }).send({ keyName: 'forged' }).expect(403)
    expect(forged.body.code).toBe('permission_denied')
    await post('/api/api_keys', { cookie, 'x-csrf-token': 'not-the-token' }).send({ keyName: 'forged' }).expect(403)
    await post('/api/api_keys', { cookie, 'x-csrf-token': csrf, 'sec-fetch-site': 'cross-site' }).send({ keyName: 'forged' }).expect(403)
    await post('/api/api_keys', { cookie, 'x-csrf-token': csrf, 'sec-fetch-site': 'same-origin' }).send({ keyName: 'from the page' }).expect(200)
    await del(`/api/api_keys/${key.keyId}`, { cookie, 'x-csrf-token': csrf }).expect(200)
  })

  it('refuses a change sent by a page of another site or origin, whatever the credentials, and lets scripts and the gate’s own pages through', async () => {
    const { gate, ada, app, key, ownOrigin, password, signIn, get, post, del, patch } = await start()
    const mine = await gate.applications.register({ name: 'Mine', ownerId: ada.id })
    const foreign = [
      { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
      { 'sec-fetch-site': 'same-site', origin: 'https://user-content.127.0.0.1.example' },
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site' },
    ]
    const cookie = await signIn()
    const csrf = (await get('/api/api_keys', { cookie }).expect(200)).headers['x-csrf-token'] as string
    for (const [who, credentials] of [
      ['Basic', password],
      ['a session', { cookie, 'x-csrf-token': csrf }],
    ] as const) {
      for (const site of foreign) {
        for (const [what, request] of [
          ['create a key (form body)', () => post('/api/api_keys', { ...credentials, ...site }).type('form').send('keyName=forged')],
          ['create a key (JSON)', () => post('/api/api_keys', { ...credentials, ...site }).send({ keyName: 'forged' })],
          ['delete a key', () => del(`/api/api_keys/${key.keyId}`, { ...credentials, ...site })],
          ['revoke a connected app', () => del(`/api/oauth/grants/${app.appToken}`, { ...credentials, ...site })],
          ['register an application', () => post('/api/applications', { ...credentials, ...site }).type('form').send('name=forged')],
          ['rename an application', () => patch(`/api/applications/${mine.appToken}`, { ...credentials, ...site }).send({ name: 'forged' })],
          ['rotate a secret', () => post(`/api/applications/${mine.appToken}/secret`, { ...credentials, ...site })],
          ['delete an application', () => del(`/api/applications/${mine.appToken}`, { ...credentials, ...site })],
        ] as const) {
          const res = await request()
          expect([who, site, what, res.status, res.body?.code]).toEqual([who, site, what, 403, 'same_origin_required'])
        }
      }
    }
    // Nothing changed: no key, no application, the secret and the grant as they were.
    expect((await gate.apiKeys.list(ada.id)).map((k) => [k.name, k.revokedAt])).toEqual([['etl', null]])
    expect((await gate.applications.list({ ownerId: ada.id })).map((a) => [a.name, a.previousSecretExpiresAt])).toEqual([['Mine', null]])
    expect((await gate.grants.list(ada.id)).map((g) => g.appToken)).toEqual([app.appToken])
    // Reading from another site is not refused (no CORS header lets the page see the answer).
    await get('/api/api_keys', { ...password, 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' }).expect(200)
    // A script (no Origin, no Sec-Fetch-*), the gate's own pages, the user's own navigation, the own Origin.
    await post('/api/api_keys', password).send({ keyName: 'script' }).expect(200)
    await post('/api/api_keys', { ...password, 'sec-fetch-site': 'same-origin', origin: ownOrigin }).send({ keyName: 'page' }).expect(200)
    await post('/api/api_keys', { ...password, 'sec-fetch-site': 'none' }).send({ keyName: 'typed' }).expect(200)
    await post('/api/api_keys', { ...password, origin: ownOrigin }).send({ keyName: 'older browser' }).expect(200)
    await post('/api/applications', { cookie, 'x-csrf-token': csrf, 'sec-fetch-site': 'same-origin' }).send({ name: 'from the portal' }).expect(201)
  })

  it('lists connected apps as JSON and revokes one: its token is refused from then on', async () => {
    const { app, oauth, password, get, del } = await start()
    const listed = await get('/api/oauth/grants', password).expect(200)
    expect(listed.body).toEqual([{ appToken: app.appToken, name: 'Transit dashboard', firstAuthorizedAt: expect.any(Number), lastUsedAt: expect.any(Number), liveTokens: 1 }])
    await del(`/api/oauth/grants/${app.appToken}`, password).expect(204)
    const refused = await get('/api/users/current.json', oauth).expect(401)
    expect(refused.body.code).toBe('invalid_token')
    expect((await get('/api/oauth/grants', password).expect(200)).body).toEqual([])
    expect((await del(`/api/oauth/grants/${app.appToken}`, password).expect(404)).body.code).toBe('not_found')
  })
})
