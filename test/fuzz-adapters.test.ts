/**
 * Generated hostile input through real servers: a sample of the generated requests is
 * sent over real sockets (plain and TLS) to every mount (Express 5 and 4, Koa 3 and 2,
 * node:http, Fastify 5, Hono 4, the Fetch adapter, and Express and Koa behind their body parsers), and each must come to the
 * decision the core makes for the same request. And every redirect the authorize
 * endpoint answers, as a real HTTP client receives its Location, stays inside the
 * client's Callback Prefix when a browser resolves it.
 */
import http, { validateHeaderName, validateHeaderValue, type IncomingHttpHeaders } from 'node:http'
import https from 'node:https'
import tls from 'node:tls'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest'
import { isPromiseLike } from '../src/util/awaitable.js'
import type { GateContext, GateOutcome } from '../src/index.js'
import { redirectUriProblem } from '../src/oauth/redirect-uri.js'
import { FRAMEWORKS, FRAMEWORKS_WITH_BODY_PARSERS, type Framework } from './adapters/frameworks.js'
import { listen, TEST_CERT, type RunningServer } from './adapters/servers.js'
import { callbackPrefix, hostileRequest, passableDataRequest, redirectUriFor } from './fuzz/arbitraries.js'
import { escapesPrefix, normalise } from './fuzz/checks.js'
import { describeRequest, toCoreRequest, type HostileRequest } from './fuzz/requests.js'
import { createWorld, KNOWN, LOGIN_URL, resetWorld, type World, type WorldKind } from './fuzz/world.js'

const SEED = 20261122
/** Requests sent to every mount: each is one real request per mount. */
const CROSS_RUNS = 200
const REDIRECT_RUNS = 60
/** Trickle schedules sent to every mount that reads bodies itself (each takes at least SLOW_BODY_TIMEOUT_MS). */
const SLOW_RUNS = 8
/** The slow-body mounts' `bodyTimeoutMs`: short, so that a schedule takes a fraction of a second. */
const SLOW_BODY_TIMEOUT_MS = 300

const KINDS: readonly WorldKind[] = ['open', 'strict', 'down']
const MOUNTS: ReadonlyArray<Framework & { parsesBodies: boolean }> = [
  ...FRAMEWORKS.map((f) => ({ ...f, parsesBodies: false })),
  ...FRAMEWORKS_WITH_BODY_PARSERS.map((f) => ({ ...f, parsesBodies: true })),
]

interface Mount {
  readonly name: string
  readonly parsesBodies: boolean
  readonly world: World
  readonly plain: RunningServer
  readonly tls: RunningServer
}

const mounts = new Map<WorldKind, Mount[]>()
/** The mounts where the gate reads the body itself (no body parser before it), with a short `bodyTimeoutMs`. */
const slowMounts: Array<{ readonly name: string; readonly world: World; readonly tls: RunningServer }> = []
/** The core's own decision, on a world of its own. */
const cores = new Map<WorldKind, World>()
const agents = { plain: new http.Agent({ keepAlive: true }), tls: new https.Agent({ keepAlive: true, ca: TEST_CERT }) }

/**
 * The gate's one-time warnings the generated requests provoke on purpose: proxy headers
 * from a private peer with no trusted proxy, metadata asked for without a configured issuer,
 * and the outage of the world whose store is down on purpose (and its end, between cases).
 */
const EXPECTED_WARNINGS = new Set(['ODG_UNTRUSTED_PROXY_HEADERS', 'ODG_DERIVED_ISSUER', 'ODG_STORE_ERROR', 'ODG_STORE_RECOVERED'])

let warn: MockInstance<typeof process.emitWarning>
beforeAll(async () => {
  warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
  for (const kind of KINDS) {
    cores.set(kind, await createWorld(kind))
    const list: Mount[] = []
    for (const mount of MOUNTS) {
      const world = await createWorld(kind)
      const listener = mount.listener(world.gate)
      list.push({ name: mount.name, parsesBodies: mount.parsesBodies, world, plain: await listen(listener), tls: await listen(listener, true) })
    }
    mounts.set(kind, list)
  }
  for (const mount of FRAMEWORKS) {
    const world = await createWorld('open', { bodyTimeoutMs: SLOW_BODY_TIMEOUT_MS })
    slowMounts.push({ name: mount.name, world, tls: await listen(mount.listener(world.gate), true) })
  }
})

afterAll(async () => {
  agents.plain.destroy()
  agents.tls.destroy()
  await Promise.all([...mounts.values()].flat().flatMap((m) => [m.plain.close(), m.tls.close()]))
  await Promise.all(slowMounts.map((m) => m.tls.close()))
  const codes = new Set(warn.mock.calls.map((call) => (call[1] as { code?: string } | undefined)?.code))
  warn.mockRestore()
  expect([...codes].filter((code) => !EXPECTED_WARNINGS.has(code ?? ''))).toEqual([])
})

interface Received {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

/** Sends the request byte for byte (header lines in order, repeats kept) and reads the answer. */
function send(server: RunningServer, request: HostileRequest): Promise<Received> {
  const url = new URL(server.url)
  const lines: string[] = request.headers.flatMap(([n, v]) => [n, v])
  const body = request.body?.kind === 'text' ? Buffer.from(request.body.text, 'utf8') : undefined
  if (body !== undefined) lines.push('Content-Length', String(body.length))
  const client = url.protocol === 'https:' ? https : http
  return new Promise((resolve, reject) => {
    const req = client.request({
      host: url.hostname,
      port: url.port,
      method: request.method,
      path: request.target,
      headers: lines,
      setHost: false,
      agent: url.protocol === 'https:' ? agents.tls : agents.plain,
    })
    req.setTimeout(5000, () => req.destroy(new Error('no answer within 5 s')))
    req.on('error', reject)
    req.on('response', (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', reject)
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }))
    })
    req.end(body)
  })
}

/** Whether a real client can send it, and every mount gets it as the core does. */
function sendable(request: HostileRequest): boolean {
  if (!/^\/[\x21-\x7e]*$/.test(request.target) || request.body?.kind === 'parsed') return false
  // Node's own limit on the request head (16 KB) answers 431 before any framework runs.
  if (request.target.length + request.headers.reduce((n, [name, value]) => n + name.length + value.length + 4, 0) > 12_000) return false
  if (!['GET', 'POST', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PATCH'].includes(request.method)) return false
  return request.headers.every(([name, value]) => {
    try {
      validateHeaderName(name)
      validateHeaderValue(name, value)
      return /^[\t\x20-\x7e\x80-\xff]*$/.test(value) && !/^(content-length|transfer-encoding|connection|expect|upgrade)$/i.test(name)
    } catch {
      return false
    }
  })
}

/** A body a framework's parser reads the way the gate reads it raw (a parser that refuses answers before the gate runs). */
function parsersAgree(request: HostileRequest): boolean {
  const body = request.body
  if (body?.kind !== 'text') return true
  const type = (request.headers.find(([n]) => n.toLowerCase() === 'content-type')?.[1] ?? '').toLowerCase()
  if (type.includes('json')) {
    try {
      const value: unknown = JSON.parse(body.text)
      // @koa/bodyparser refuses `__proto__` and `constructor.prototype` keys itself (secure JSON parsing).
      return typeof value === 'object' && value !== null && Buffer.byteLength(body.text) <= 16 * 1024 && !/"(__proto__|constructor)"/.test(body.text)
    } catch {
      return false
    }
  }
  return !type.includes('urlencoded') || Buffer.byteLength(body.text) <= 16 * 1024
}

/**
 * Fastify answers 400 itself, before any hook runs, to a path that is not valid
 * percent-encoding (its router cannot decode it): a refusal, but not the gate's.
 */
function refusedBeforeHooks(mount: { name: string }, request: HostileRequest): boolean {
  if (!mount.name.startsWith('Fastify')) return false
  try {
    decodeURI(request.target.split('?')[0] as string)
    return false
  } catch {
    return true
  }
}

/** The request as it arrives: a Host line if it had none, from 127.0.0.1. */
function asSent(request: HostileRequest): HostileRequest {
  const headers = request.headers.some(([n]) => n.toLowerCase() === 'host') ? request.headers : [['Host', 'gate.example'] as const, ...request.headers]
  return { ...request, headers, peer: '127.0.0.1' }
}

const DATASET = /^\/(resource|private)\/[a-z0-9-]+\.json$/
const VIEW_QUERY = /^\/api\/v3\/views\/[a-z0-9-]+\/query\.json$/

/** The context with what depends on the clock removed, and the request id, which is each request's own. */
function stableContext(context: GateContext): unknown {
  const { throttle, ...rest } = JSON.parse(JSON.stringify(context)) as Omit<GateContext, 'throttle'> & { throttle: Record<string, unknown> | null }
  if (throttle !== null) delete throttle.resetMs
  return { ...rest, requestId: typeof rest.requestId, throttle }
}

/** What every mount must answer, from the core's outcome: the gate's own answer, or the route behind it. */
function expected(world: World, outcome: GateOutcome, request: HostileRequest): { text: string; context?: unknown } | 'not-compared' {
  const head = request.method === 'HEAD'
  if (outcome.type === 'respond') return { text: normalise(outcome.response.status, outcome.response.headers, outcome.response.body, head) }
  const path = request.target.split('?')[0] as string
  const rule = request.method === 'GET' && DATASET.test(path) ? (path.startsWith('/private/') ? { auth: 'required' as const } : null) : request.method === 'POST' && VIEW_QUERY.test(path) ? { auth: 'user-or-app-token' as const } : undefined
  // Not one of the routes behind the gate: each framework answers its own 404.
  if (rule === undefined) return 'not-compared'
  const refusal = rule === null ? undefined : world.gate.guard(rule)(outcome.context)
  if (refusal !== undefined) {
    const response = world.gate.errorResponse(refusal)
    return { text: normalise(response.status, response.headers, response.body, head) }
  }
  return { text: '200', context: stableContext(outcome.context) }
}

async function coreOutcome(world: World, request: HostileRequest): Promise<GateOutcome> {
  await resetWorld(world)
  const outcome = world.gate.handle(toCoreRequest(request))
  return isPromiseLike(outcome) ? await outcome : outcome
}

describe('hostile input, generated, through every adapter', () => {
  it(`answers a body trickled slower than bodyTimeoutMs with 408 request_timeout and closes the connection, at the token endpoint and the API key POST (${SLOW_RUNS} schedules x ${FRAMEWORKS.length} mounts)`, async () => {
    const basic = `Basic ${Buffer.from(`${KNOWN.users.ada.username}:${KNOWN.users.ada.password}`).toString('base64')}`
    const targets = {
      token: {
        head: 'POST /oauth/access_token HTTP/1.1\r\nHost: gate.example\r\n',
        fields: { grant_type: 'authorization_code', code: KNOWN.codes.live, redirect_uri: KNOWN.redirect, client_id: KNOWN.apps.oauth.appToken, client_secret: KNOWN.apps.oauth.secret },
      },
      apiKey: { head: `POST /api/api_keys HTTP/1.1\r\nHost: gate.example\r\nAuthorization: ${basic}\r\nX-App-Token: ${KNOWN.apps.plain.appToken}\r\n`, fields: { keyName: 'a key sent slowly' } },
    }
    const schedule = fc.record({
      target: fc.constantFrom<keyof typeof targets>('token', 'apiKey'),
      json: fc.boolean(),
      first: fc.integer({ min: 0, max: 12 }),
      bytes: fc.integer({ min: 1, max: 3 }),
      intervalMs: fc.integer({ min: 40, max: 250 }),
    })
    await fc.assert(
      fc.asyncProperty(schedule, async ({ target, json, first, bytes, intervalMs }) => {
        const { head, fields } = targets[target]
        const body = json ? JSON.stringify(fields) : new URLSearchParams(fields).toString()
        const type = `Content-Type: ${json ? 'application/json' : 'application/x-www-form-urlencoded'}\r\n`
        const answers = await Promise.all(
          slowMounts.map(async (mount) => {
            await resetWorld(mount.world)
            return { mount, got: await trickle(mount.tls, head + type, body, { first, bytes, intervalMs }) }
          }),
        )
        for (const { mount, got } of answers) {
          const where = `${mount.name}: ${target}, ${json ? 'JSON' : 'form'}, ${first} bytes then ${bytes} every ${intervalMs} ms\n${got.head}\n${got.body}`
          expect(got.status, where).toBe(408)
          // The token endpoint answers in RFC 6749's shape, the API key endpoint in the platform's.
          if (target === 'token') expect(got.body, where).toContain('"error":"request_timeout"')
          else expect(got.head.toLowerCase(), where).toContain('x-error-code: request_timeout')
          expect(got.head.toLowerCase(), where).toContain('connection: close')
          expect(got.closed, where).toBe(true)
          // Not before the deadline, and within bounds after it: generous, the machine may be busy.
          expect(got.answeredMs, where).toBeGreaterThanOrEqual(SLOW_BODY_TIMEOUT_MS - 20)
          expect(got.answeredMs, where).toBeLessThan(SLOW_BODY_TIMEOUT_MS + 5000)
          expect(mount.world.store.writes, where).toEqual([])
        }
      }),
      { seed: SEED, numRuns: SLOW_RUNS },
    )
  }, 120_000)

  it(`comes to the core's decision on every mount, plain and TLS (${CROSS_RUNS} requests x ${MOUNTS.length} mounts x the world kinds)`, async () => {
    const kind = fc.constantFrom(...KINDS)
    // Half of them near the data routes, let through more often than not: what each adapter hands the application must match too.
    const cases = fc.oneof(hostileRequest, passableDataRequest).filter(sendable)
    await fc.assert(
      fc.asyncProperty(kind, cases, async (kind, generated) => {
        const request = asSent(generated)
        const want = expected(cores.get(kind) as World, await coreOutcome(cores.get(kind) as World, request), request)
        for (const mount of mounts.get(kind) as Mount[]) {
          if (mount.parsesBodies && !parsersAgree(request)) continue
          await resetWorld(mount.world)
          const got = await send(request.tls ? mount.tls : mount.plain, request)
          const where = `${mount.name}, world ${kind}\n${describeRequest(request)}`
          if (refusedBeforeHooks(mount, request)) {
            expect(got.status, where).toBe(400)
            continue
          }
          if (want === 'not-compared') {
            // The gate let it through to a path it does not answer: it must not have answered it.
            expect(got.headers['x-error-code'], where).toBeUndefined()
            continue
          }
          if (want.context === undefined) {
            expect(normalise(got.status, got.headers, got.body, request.method === 'HEAD'), where).toBe(want.text)
          } else {
            expect(got.status, where).toBe(200)
            expect(stableContext((JSON.parse(got.body) as { gate: GateContext }).gate), where).toEqual(want.context)
          }
          if (got.status === 303) checkRealLocation(request, got, mount)
        }
      }),
      { seed: SEED, numRuns: CROSS_RUNS },
    )
  }, 120_000)

  it(`sends every admitted redirect_uri back inside its Callback Prefix, by the Location a real client receives (${REDIRECT_RUNS} approvals x ${MOUNTS.length} mounts)`, async () => {
    const admitted = callbackPrefix
      .chain((prefix) => fc.tuple(fc.constant(prefix), redirectUriFor(prefix)))
      .filter(([prefix, uri]) => redirectUriProblem(uri, prefix) === undefined && /^[\x21-\x7e]+$/.test(uri))
    await fc.assert(
      fc.asyncProperty(admitted, fc.constantFrom('approve', 'deny'), async ([prefix, uri], action) => {
        for (const mount of mounts.get('open') as Mount[]) {
          await resetWorld(mount.world)
          // A tenant registers this prefix (the next reset takes the application away again).
          const clientId = (await mount.world.gate.applications.register({ name: 'Prefix test', callbackPrefix: prefix })).appToken
          const form = `csrf_token=${KNOWN.csrf}&action=${action}`
          const request: HostileRequest = {
            method: 'POST',
            target: `/oauth/authorize?${new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: uri, state: 'st' })}`,
            headers: [
              ['Host', 'gate.example'],
              ['Cookie', `__Host-odg-session=${KNOWN.sessions.ada}; __Host-odg-csrf=${KNOWN.csrf}`],
              ['Content-Type', 'application/x-www-form-urlencoded'],
            ],
            body: { kind: 'text', text: form },
            peer: '127.0.0.1',
            tls: true,
          }
          const got = await send(mount.tls, request)
          expect(got.status, `${mount.name}: ${uri} ${got.body.slice(0, 200)}`).toBe(303)
          checkRealLocation(request, got, mount, prefix)
        }
      }),
      { seed: SEED, numRuns: REDIRECT_RUNS },
    )
  }, 120_000)
})

/** What a client trickling a body got back, and when. */
interface Trickled {
  readonly status: number
  readonly head: string
  readonly body: string
  /** From the request's first byte to the answer's head, in ms. */
  readonly answeredMs: number
  /** Whether the server closed the connection after answering. */
  readonly closed: boolean
}

/**
 * Sends a request head announcing `declared` body bytes, then the body a few bytes at a
 * time, every `intervalMs`, never all of it in time; stops writing once the answer comes,
 * and waits (a few seconds at most) for the server to close the connection.
 */
function trickle(server: RunningServer, head: string, body: string, schedule: { first: number; bytes: number; intervalMs: number }): Promise<Trickled> {
  const url = new URL(server.url)
  const bytes = Buffer.from(body, 'utf8')
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const socket = tls.connect({ host: url.hostname, port: Number(url.port), ca: TEST_CERT, servername: 'localhost' })
    let received = ''
    let answeredMs = -1
    let sent = 0
    let timer: NodeJS.Timeout | undefined
    const giveUp = setTimeout(() => finish(false), SLOW_BODY_TIMEOUT_MS + 10_000)
    const finish = (closed: boolean) => {
      clearInterval(timer)
      clearTimeout(giveUp)
      socket.destroy()
      const [headText = '', bodyText = ''] = received.split('\r\n\r\n')
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(headText)?.[1] ?? 0)
      resolve({ status, head: headText, body: bodyText, answeredMs, closed })
    }
    socket.on('secureConnect', () => {
      socket.write(`${head}Content-Length: ${bytes.length}\r\n\r\n`)
      socket.write(bytes.subarray(0, schedule.first))
      sent = schedule.first
      timer = setInterval(() => {
        // Never the last byte: the body is still incomplete when the deadline passes.
        if (answeredMs !== -1 || sent >= bytes.length - 1) return
        const next = Math.min(bytes.length - 1, sent + schedule.bytes)
        socket.write(bytes.subarray(sent, next))
        sent = next
      }, schedule.intervalMs)
    })
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('utf8')
      if (answeredMs === -1 && received.includes('\r\n\r\n')) answeredMs = performance.now() - started
    })
    socket.on('end', () => finish(true))
    socket.on('close', () => finish(true))
    socket.on('error', (error) => (answeredMs === -1 ? reject(error) : finish(true)))
  })
}

/**
 * Where a browser goes with the Location the client received: resolved against the URL
 * it asked for (WHATWG), it must be this URL again, or inside the prefix of the client.
 */
function checkRealLocation(request: HostileRequest, got: Received, mount: Mount, prefixOf?: string): void {
  const location = got.headers.location ?? ''
  const base = `${mount.tls.url}${request.target}`
  const resolved = new URL(location, base)
  // Back to this URL after a sign-in, or to the host's own login page: the gate's origin.
  if (location.startsWith('?') || location.startsWith(`${LOGIN_URL}?`)) {
    expect(resolved.origin).toBe(new URL(base).origin)
    return
  }
  const params = new URLSearchParams(request.target.slice(request.target.indexOf('?') + 1))
  const prefix = prefixOf ?? { [KNOWN.apps.oauth.appToken]: KNOWN.prefixes.oauth, [KNOWN.apps.root.appToken]: KNOWN.prefixes.root }[params.get('client_id') ?? '']
  expect(prefix, `a redirect for a client without a prefix: ${location}`).toBeDefined()
  expect(escapesPrefix(location, prefix as string), `${mount.name}: Location ${location} for ${params.get('redirect_uri')}`).toBeUndefined()
  // The browser's view with the real base, not the stand-in one of the pure property.
  const basePath = new URL(prefix as string).pathname
  expect(resolved.origin, `${mount.name}: Location ${location}`).toBe(new URL(prefix as string).origin)
  expect(resolved.pathname === basePath || resolved.pathname.startsWith(basePath.endsWith('/') ? basePath : `${basePath}/`), `${mount.name}: Location ${location}`).toBe(true)
}
