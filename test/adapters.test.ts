/**
 * One HTTP behaviour, five mounts: every test here runs against a real listening server
 * in Express 5, Express 4, Koa 3, Koa 2 and plain node:http.
 */
import request from 'supertest'
import { afterEach, describe, expect, it } from 'vitest'
import { createGate, MemoryStore, type GateOptions } from '../src/index.js'
import { FRAMEWORKS, type DatasetBody } from './adapters/frameworks.js'
import { listen, TEST_CERT, type RunningServer } from './adapters/servers.js'

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
    return { gate, app, api: request(server.url) }
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

    it('counts anonymous clients behind a trusted proxy by their own address', async () => {
      const { api } = await start({ trustProxy: 'loopback' })
      await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.1').expect(200)
      await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.1').expect(200)
      await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.1').expect(429)
      await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.2').expect(200)
    })

    it('cannot be talked out of the budget by a spoofed X-Forwarded-For from an untrusted peer', async () => {
      const { api } = await start()
      await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.1').expect(200)
      await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.2').expect(200)
      await api.get('/resource/abcd-1234.json').set('X-Forwarded-For', '203.0.113.3').expect(429)
    })

    it('sees a TLS connection as secure', async () => {
      const gate = createGate()
      const server = await listen(framework.listener(gate), true)
      running.push(server)
      const res = await request(server.url).get('/resource/abcd-1234.json').ca(TEST_CERT).expect(200)
      expect((res.body as DatasetBody).gate.secure).toBe(true)
    })
  })

  describe('failures', () => {
    async function serve(store: MemoryStore) {
      const gate = createGate({ store })
      const internal: unknown[] = []
      gate.on('internalError', (e) => internal.push(e.error))
      const server = await listen(framework.listener(gate))
      running.push(server)
      return { api: request(server.url), internal }
    }

    it('answers a store that throws with 503 service_unavailable, not a 500', async () => {
      const { api, internal } = await serve(new ThrowingStore())
      const res = await api.get('/resource/abcd-1234.json').set('X-App-Token', 'abcdef').expect(503)
      expect(res.body).toMatchObject({ code: 'service_unavailable', error: true })
      expect(JSON.stringify(res.body)).not.toMatch(/custom store/)
      expect(internal).toEqual([])
    })

    it('answers an unexpected failure with a generic JSON 500 and tells the internalError event', async () => {
      const { api, internal } = await serve(new GarbageStore())
      const res = await api.get('/resource/abcd-1234.json').expect(500)
      expect(res.body).toEqual({ code: 'internal', error: true, message: 'Internal server error' })
      expect(internal).toHaveLength(1)
    })
  })
})
