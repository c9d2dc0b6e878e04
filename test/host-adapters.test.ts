/**
 * What the Fetch, Hono and Fastify adapters do beyond the shared suite (test/adapters.test.ts,
 * which holds every mount to the same HTTP behaviour): their setup errors, where the
 * client's address comes from on a host that has no socket, and how the gate's headers and
 * answers meet the host's own response machinery.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { Hono } from 'hono'
import { getRequestListener } from '@hono/node-server'
import { describe, expect, it } from 'vitest'
import { fastifyGate, fastifyGuard } from '../adapters/fastify.js'
import { fetchGate, runFetchGate, withGateHeaders } from '../adapters/fetch.js'
import { honoGate } from '../adapters/hono.js'
import { createGate, type GateContext, type GateOptions } from '../src/index.js'

const LIMITS: GateOptions = { throttle: { application: { limit: 5, windowMs: 60_000 }, anonymous: { limit: 5, windowMs: 60_000, scope: 'ip' } } }

async function gateWithApp(options: GateOptions = {}) {
  const gate = createGate({ ...LIMITS, ...options })
  const app = await gate.applications.register({ name: 'Transit dashboard' })
  return { gate, app }
}

const echo = (_request: Request, context: GateContext) => Response.json(context)

describe('Fetch adapter', () => {
  it('refuses to be set up with createGate options instead of the gate, saying what it got', () => {
    const options = { clientAddress: () => '203.0.113.9', https: true }
    expect(() => fetchGate({ throttle: {} } as never, () => new Response('ok'), options)).toThrow(/takes the gate createGate\(\) returns, got an object with throttle: these are createGate options/)
    expect(() => honoGate(undefined as never, options)).toThrow(/takes the gate createGate\(\) returns, got undefined/)
  })

  it('refuses to be set up without clientAddress or https, naming the option, since a Request carries neither', () => {
    const gate = createGate()
    expect(() => fetchGate(gate, echo)).toThrow(TypeError)
    expect(() => fetchGate(gate, echo)).toThrow(/needs the clientAddress option/)
    expect(() => fetchGate(gate, echo)).toThrow(/server\.requestIP\(request\)\?\.address.*info\.remoteAddr\.hostname/)
    expect(() => fetchGate(gate, echo, { clientAddress: () => '203.0.113.9' })).toThrow(/needs the https option/)
    expect(() => fetchGate(gate, echo, { clientAddress: '203.0.113.9' as never, https: false })).toThrow(/clientAddress must be a function/)
    expect(() => fetchGate(gate, echo, { clientAddress: () => '203.0.113.9', https: 'yes' as never })).toThrow(/https must be true, false, or a function/)
    expect(() => fetchGate(gate, 'handler' as never, { clientAddress: () => '203.0.113.9', https: false })).toThrow(TypeError)
    expect(() => fetchGate(gate, echo, { clientAddress: () => '203.0.113.9', https: false })).not.toThrow()
  })

  it('takes the client and https from a proxy’s headers only when the gate trusts every proxy, never from the URL', async () => {
    expect(() => fetchGate(createGate({ trustProxy: 'loopback' }), echo)).toThrow(/clientAddress/)
    const handler = fetchGate(createGate({ trustProxy: true }), echo)
    const direct = (await (await handler(new Request('https://data.example.org/resource/abcd-1234.json'))).json()) as GateContext
    expect(direct).toMatchObject({ secure: false, clientIp: '' })
    const proxied = await handler(new Request('http://data.example.org/resource/abcd-1234.json', { headers: { 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https' } }))
    expect(await proxied.json()).toMatchObject({ secure: true, clientIp: '203.0.113.9' })
  })

  it('answers 500 and tells the internalError event when clientAddress finds no address, rather than guess one', async () => {
    const gate = createGate()
    const errors: unknown[] = []
    gate.on('internalError', (event) => errors.push(event.error))
    const handler = fetchGate(gate, echo, { clientAddress: () => undefined, https: true })
    const res = await handler(new Request('https://data.example.org/resource/abcd-1234.json'))
    expect(res.status).toBe(500)
    expect(await res.json()).toEqual({ code: 'internal', error: true, message: 'Internal server error' })
    expect(errors).toEqual([expect.objectContaining({ name: 'TypeError', message: expect.stringContaining('client address of GET /resource/abcd-1234.json is unknown') })])
  })

  it('passes what the host hands beside the request to the options and the handler', async () => {
    const { gate, app } = await gateWithApp()
    const server = { requestIP: (_request: Request) => ({ address: '198.51.100.7' }) }
    const handler = fetchGate(gate, (_request, context, host) => Response.json({ ip: context.clientIp, same: host === server }), {
      clientAddress: (request: Request, bun: typeof server) => bun.requestIP(request).address,
      https: true,
    })
    const res = await handler(new Request('https://data.example.org/resource/abcd-1234.json', { headers: { 'x-app-token': app.appToken } }), server)
    expect(await res.json()).toEqual({ ip: '198.51.100.7', same: true })
    expect(res.headers.get('ratelimit')).toMatch(/^"app";r=4;t=\d+$/)
  })

  it('adds the gate’s headers to a response whose headers are immutable by answering a copy, and keeps a header the handler set', async () => {
    const { gate, app } = await gateWithApp()
    const options = { clientAddress: () => '203.0.113.9', https: true }
    const redirect = fetchGate(gate, () => Response.redirect('https://data.example.org/elsewhere', 302), options)
    const res = await redirect(new Request('https://data.example.org/resource/abcd-1234.json', { headers: { 'x-app-token': app.appToken } }))
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toBe('https://data.example.org/elsewhere')
    expect(res.headers.get('ratelimit-policy')).toMatch(/^"app";q=5;w=60/)
    const own = fetchGate(gate, () => new Response('ok', { headers: { ratelimit: 'set by the handler' } }), options)
    const kept = await own(new Request('https://data.example.org/resource/abcd-1234.json', { headers: { 'x-app-token': app.appToken } }))
    expect(kept.headers.get('ratelimit')).toBe('set by the handler')
    expect(kept.headers.get('ratelimit-policy')).toMatch(/^"app"/)
  })

  it('answers a handler that throws with the gate’s JSON 500, and tells the internalError event', async () => {
    const gate = createGate()
    const errors: unknown[] = []
    gate.on('internalError', (event) => errors.push(event.error))
    const handler = fetchGate(gate, () => {
      throw new Error('the handler broke')
    }, { clientAddress: () => '203.0.113.9', https: true })
    const res = await handler(new Request('https://data.example.org/resource/abcd-1234.json'))
    expect(res.status).toBe(500)
    expect(await res.text()).not.toMatch(/handler broke/)
    expect(errors).toHaveLength(1)
  })

  it('runs per call for a router of one’s own: the context and headers to add, or the Response to send', async () => {
    const { gate, app } = await gateWithApp()
    const passed = await runFetchGate(gate, new Request('https://data.example.org/resource/x.json', { headers: { 'x-app-token': app.appToken } }), { clientAddress: '203.0.113.9', https: true })
    expect(passed.type).toBe('next')
    if (passed.type !== 'next') return
    expect(passed.context).toMatchObject({ clientIp: '203.0.113.9', secure: true, application: { name: 'Transit dashboard' } })
    expect(withGateHeaders(new Response('data'), passed.headers).headers.get('ratelimit')).toMatch(/^"app";r=4/)
    const refused = await runFetchGate(gate, new Request('https://data.example.org/resource/x.json', { headers: { 'x-app-token': 'not-registered' } }), { clientAddress: '203.0.113.9', https: true })
    expect(refused.type).toBe('respond')
    if (refused.type !== 'respond') return
    expect(refused.response.status).toBe(403)
    expect(await refused.response.json()).toEqual({ code: 'permission_denied', error: true, message: 'Invalid app_token specified' })
    expect(() => runFetchGate(gate, new Request('https://data.example.org/'), { https: true })).toThrow(/client address .* is unknown/)
  })

  it('reads the token endpoint’s form body from the Request, refusing one past the size limit with 400 and Connection: close', async () => {
    const { gate } = await gateWithApp()
    const handler = fetchGate(gate, echo, { clientAddress: () => '203.0.113.9', https: true })
    const form = { 'content-type': 'application/x-www-form-urlencoded' }
    const small = await handler(new Request('https://data.example.org/oauth/access_token', { method: 'POST', headers: form, body: 'grant_type=authorization_code&code=nope' }))
    expect(small.status).toBe(401)
    expect(await small.json()).toMatchObject({ error: 'invalid_client' })
    let pulled = 0
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++
        controller.enqueue(new Uint8Array(64 * 1024).fill(97))
      },
    })
    const large = await handler(new Request('https://data.example.org/oauth/access_token', { method: 'POST', headers: form, body: endless, duplex: 'half' } as RequestInit))
    expect(large.status).toBe(400)
    expect(large.headers.get('connection')).toBe('close')
    expect(pulled).toBeLessThan(64)
  })
})

describe('Hono adapter', () => {
  it('refuses to be set up without clientAddress, naming the option and Hono’s getConnInfo', () => {
    expect(() => honoGate(createGate())).toThrow(/needs the clientAddress option.*getConnInfo/)
  })

  it('sets c.get(\'gate\') and adds the gate’s headers, to a response with immutable headers too', async () => {
    const { gate, app } = await gateWithApp()
    const hono = new Hono()
    hono.use(honoGate(gate, { clientAddress: () => '203.0.113.9', https: true }))
    hono.get('/resource/:id', (c) => c.json({ app: c.get('gate').application?.name ?? null }))
    hono.get('/moved', () => Response.redirect('https://data.example.org/resource/x', 301))
    const res = await hono.request('https://data.example.org/resource/x', { headers: { 'x-app-token': app.appToken } })
    expect(await res.json()).toEqual({ app: 'Transit dashboard' })
    expect(res.headers.get('ratelimit')).toMatch(/^"app";r=4/)
    const moved = await hono.request('https://data.example.org/moved', { headers: { 'x-app-token': app.appToken } })
    expect(moved.status).toBe(301)
    expect(moved.headers.get('ratelimit')).toMatch(/^"app";r=3/)
    const refused = await hono.request('https://data.example.org/resource/x', { headers: { 'x-app-token': 'not-registered' } })
    expect(refused.status).toBe(403)
  })
})

describe('Hono adapter on @hono/node-server', () => {
  /** One request to a Hono app served by @hono/node-server on a real socket; raw header lines, so two of a name can be sent. */
  async function served(hono: Hono, rawHeaders: string[]): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
    const listener = getRequestListener(hono.fetch)
    const server = http.createServer((req, res) => void listener(req, res))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as AddressInfo
      return await new Promise((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, path: '/resource/x', headers: ['Host', `127.0.0.1:${port}`, ...rawHeaders], agent: false }, (res) => {
          let body = ''
          res.setEncoding('utf8')
          res.on('data', (chunk: string) => (body += chunk))
          res.on('end', () => resolve({ status: res.statusCode as number, headers: res.headers, body }))
        })
        req.on('error', reject)
        req.end()
      })
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  }

  it('reads the Node request’s headers and writes the gate’s on the Node response, under the app-s own of the same name', async () => {
    const { gate, app } = await gateWithApp()
    const hono = new Hono()
    hono.use(honoGate(gate, { clientAddress: () => '203.0.113.9', https: true }))
    hono.get('/resource/:id', (c) => c.json({ app: c.get('gate').application?.name ?? null, user: c.get('gate').user?.username ?? null }))
    const res = await served(hono, ['X-App-Token', app.appToken])
    expect(res.status).toBe(200)
    expect(JSON.parse(res.body)).toEqual({ app: 'Transit dashboard', user: null })
    expect(res.headers.ratelimit).toMatch(/^"app";r=4/)
    expect(res.headers['ratelimit-policy']).toBe('"app";q=5;w=60')
    expect(res.headers['x-request-id']).toMatch(/^[\w-]+-\w+$/)
    expect(res.headers['content-type']).toBe('application/json')

    const own = new Hono()
    own.use(honoGate(gate, { clientAddress: () => '203.0.113.9', https: true }))
    own.get('/resource/:id', (c) => c.json({ ok: true }, 200, { RateLimit: 'the app-s own' }))
    const ownRes = await served(own, ['X-App-Token', app.appToken])
    expect(ownRes.headers.ratelimit).toBe('the app-s own')
    expect(ownRes.headers['ratelimit-policy']).toBe('"app";q=5;w=60')

    // Two Authorization headers are two sets of credentials, seen as the node:http adapter sees them.
    const twice = await served(hono, ['X-App-Token', app.appToken, 'Authorization', 'Basic YWRhOnBhc3N3b3Jk', 'Authorization', 'Basic Ym9iOnBhc3N3b3Jk'])
    expect(twice.status).toBe(400)
  })
})

describe('Fastify adapter', () => {
  it('refuses to register without a gate', async () => {
    const app = Fastify()
    await expect(app.register(fastifyGate, {} as never)).rejects.toThrow(/app\.register\(fastifyGate, \{ gate \}\)/)
  })

  it('gates the routes of child plugins too, since the plugin is not encapsulated', async () => {
    const { gate, app: registered } = await gateWithApp()
    const app = Fastify()
    await app.register(fastifyGate, { gate })
    await app.register(async (child) => {
      child.get('/v2/resource/:id', async (request) => ({ app: request.gate.application?.name ?? null }))
    })
    const res = await app.inject({ url: '/v2/resource/x', headers: { 'x-app-token': registered.appToken } })
    expect(res.json()).toEqual({ app: 'Transit dashboard' })
    expect(res.headers.ratelimit).toMatch(/^"app";r=4/)
    expect((await app.inject({ url: '/v2/resource/x', headers: { 'x-app-token': 'not-registered' } })).statusCode).toBe(403)
  })

  it('answers the gate’s refusals through reply, so the app’s onSend and onResponse hooks see them', async () => {
    const { gate } = await gateWithApp()
    const app = Fastify()
    const seen: number[] = []
    app.addHook('onSend', async (_request, reply, payload) => {
      reply.header('x-served-by', 'portal')
      return payload
    })
    app.addHook('onResponse', async (_request, reply) => void seen.push(reply.statusCode))
    await app.register(fastifyGate, { gate })
    app.get('/private/:id', { preHandler: fastifyGuard(gate, { auth: 'required' }) }, async () => ({ secret: true }))
    const refused = await app.inject({ url: '/private/x', headers: { 'x-app-token': 'not-registered' } })
    expect(refused.statusCode).toBe(403)
    expect(refused.headers['x-served-by']).toBe('portal')
    expect(refused.headers['content-type']).toMatch(/^application\/json/)
    expect(refused.json()).toEqual({ code: 'permission_denied', error: true, message: 'Invalid app_token specified' })
    const guarded = await app.inject({ url: '/private/x' })
    expect(guarded.statusCode).toBe(403)
    expect(guarded.json()).toMatchObject({ code: 'authentication_required' })
    expect(guarded.headers['x-served-by']).toBe('portal')
    expect(seen).toEqual([403, 403])
  })
})
