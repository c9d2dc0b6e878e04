/**
 * Metrics through the real OpenTelemetry SDK (a MeterProvider and a reader collected on
 * demand), and traces through node:diagnostics_channel, as an instrumentation or an APM
 * agent would subscribe to them.
 */
import { spawn } from 'node:child_process'
import diagnosticsChannel from 'node:diagnostics_channel'
import { fileURLToPath } from 'node:url'
import { metrics } from '@opentelemetry/api'
import { DataPointType, MeterProvider, type HistogramMetricData, type MetricData, type SumMetricData } from '@opentelemetry/sdk-metrics'
import { TestReader } from './support/metric-reader.js'
import { afterEach, describe, expect, it } from 'vitest'
import { createGate, MemoryStore, StoreError, type GateOptions, type GateOutcome, type HandleMessage, type StoreCallMessage } from '../src/index.js'
import { RedisStore } from '../src/store/redis/store.js'
import { FlakyStore } from './support/flaky-store.js'
import { coreRequest } from './support/requests.js'
import { deletePrefix, randomPrefix, REDIS_URL, sharedRedisAvailable } from './redis/servers.js'

function sdk() {
  const reader = new TestReader()
  const provider = new MeterProvider({ readers: [reader] })
  return { reader, provider }
}

/** The value of each data point of a counter, keyed by its attributes in a stable order. */
function sums(all: MetricData[], name: string): Record<string, number> {
  const metric = all.find((m) => m.descriptor.name === name) as SumMetricData | undefined
  const result: Record<string, number> = {}
  for (const point of metric?.dataPoints ?? []) {
    result[Object.entries(point.attributes).map(([k, v]) => `${k.replace(/^open_data_gate\./, '')}=${String(v)}`).sort().join(' ')] = point.value
  }
  return result
}

function histogram(all: MetricData[], name: string): HistogramMetricData | undefined {
  return all.find((m) => m.descriptor.name === name) as HistogramMetricData | undefined
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
const status = (outcome: GateOutcome) => (outcome.type === 'next' ? 'next' : outcome.response.status)

async function gateWithEveryone(options: GateOptions) {
  const gate = createGate({ basic: { scrypt: { logN: 10 } }, throttle: { application: { limit: 100, windowMs: 60_000 } }, ...options })
  const { appToken } = await gate.applications.register({ name: 'A' })
  const { appToken: smallToken } = await gate.applications.register({ name: 'small', limit: 2 })
  const user = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'A', email: 'a@example.org' })
  const { keyId, keySecret } = await gate.apiKeys.create(user.id, { name: 'k' })
  const { accessToken } = await gate.tokens.issue({ userId: user.id, appToken })
  const send = async (headers: Record<string, string>) => status(await gate.handle(coreRequest({ headers })))
  return { gate, appToken, smallToken, keyId, keySecret, accessToken, send }
}

describe('metrics', () => {
  afterEach(() => metrics.disable())

  it('counts each decision by outcome, budget and how the request authenticated, and times it in seconds', async () => {
    const { reader, provider } = sdk()
    const { appToken, smallToken, keyId, keySecret, accessToken, send } = await gateWithEveryone({ metrics: { meterProvider: provider } })
    expect(await send({})).toBe('next')
    expect(await send({})).toBe('next')
    expect(await send({ 'x-app-token': smallToken })).toBe('next')
    expect(await send({ 'x-app-token': smallToken })).toBe('next')
    expect(await send({ 'x-app-token': smallToken })).toBe(429)
    expect(await send({ 'x-app-token': 'made-up-app-token-000' })).toBe(403)
    expect(await send({ 'x-app-token': appToken, authorization: basic('ada', 'correct horse battery') })).toBe('next')
    expect(await send({ 'x-app-token': appToken, authorization: basic('ada', 'wrong horse') })).toBe(401)
    expect(await send({ 'x-app-token': appToken, authorization: basic(keyId, keySecret) })).toBe('next')
    expect(await send({ authorization: `OAuth ${accessToken}` })).toBe('next')

    const all = await reader.metrics()
    expect(sums(all, 'open_data_gate.requests')).toEqual({
      'auth=none outcome=allowed policy=anonymous': 2,
      'auth=none outcome=allowed policy=application': 2,
      'auth=none outcome=throttled policy=application': 1,
      'auth=none outcome=refused policy=anonymous': 1,
      'auth=password outcome=allowed policy=application': 1,
      'auth=none outcome=refused policy=application': 1,
      'auth=api-key outcome=allowed policy=application': 1,
      'auth=oauth outcome=allowed policy=application': 1,
    })
    const requests = all.find((m) => m.descriptor.name === 'open_data_gate.requests')
    expect(requests?.descriptor.unit).toBe('{request}')
    const duration = histogram(all, 'open_data_gate.decision.duration')
    expect(duration?.descriptor.unit).toBe('s')
    expect(duration?.dataPointType).toBe(DataPointType.HISTOGRAM)
    expect(duration?.dataPoints.reduce((n, p) => n + p.value.count, 0)).toBe(10)
    // Seconds, in buckets made for microseconds to milliseconds: not one bucket for everything.
    const boundaries = duration?.dataPoints[0]?.value.buckets.boundaries ?? []
    expect(boundaries[0]).toBeLessThan(0.0001)
    expect(Math.max(...boundaries)).toBeGreaterThanOrEqual(1)
    for (const point of duration?.dataPoints ?? []) expect(point.value.max).toBeLessThan(10)
  })

  it('counts an answer of its own endpoints with the method that authenticated it', async () => {
    const { reader, provider } = sdk()
    const { gate, appToken, keyId, keySecret } = await gateWithEveryone({ metrics: { meterProvider: provider } })
    const current = (authorization?: string) =>
      gate.handle(coreRequest({ url: '/api/users/current.json', headers: { 'x-app-token': appToken, ...(authorization === undefined ? {} : { authorization }) } }))
    expect(status(await current(basic(keyId, keySecret)))).toBe(200)
    expect(status(await current())).toBe(403)
    expect(sums(await reader.metrics(), 'open_data_gate.requests')).toEqual({
      'auth=api-key outcome=allowed policy=application': 1,
      'auth=none outcome=refused policy=application': 1,
    })
  })

  it('holds no app token, user, key or address in any attribute', async () => {
    const { reader, provider } = sdk()
    const { appToken, keyId, keySecret, accessToken, send } = await gateWithEveryone({ metrics: { meterProvider: provider } })
    await send({ 'x-app-token': appToken, authorization: basic(keyId, keySecret) })
    await send({ authorization: `OAuth ${accessToken}` })
    await send({ authorization: basic('ada', 'wrong horse'), 'x-app-token': appToken })
    const text = JSON.stringify((await reader.metrics()).map((m) => m.dataPoints.map((p) => p.attributes)))
    for (const secret of [appToken, keyId, keySecret, accessToken, 'ada', '203.0.113.5']) expect(text).not.toContain(secret)
  })

  it('records into the global meter provider of @opentelemetry/api, and nothing when none is set', async () => {
    const { reader, provider } = sdk()
    const unmeasured = createGate()
    metrics.setGlobalMeterProvider(provider)
    const measured = createGate()
    await measured.handle(coreRequest())
    await unmeasured.handle(coreRequest())
    metrics.disable()
    // Read when the gate is made: one made once the provider is gone records nothing.
    await createGate().handle(coreRequest())
    expect(sums(await reader.metrics(), 'open_data_gate.requests')).toEqual({ 'auth=none outcome=allowed policy=anonymous': 1 })
  })

  it('records nothing with metrics: false, even with a global provider', async () => {
    const { reader, provider } = sdk()
    metrics.setGlobalMeterProvider(provider)
    const gate = createGate({ metrics: false })
    await gate.handle(coreRequest())
    expect(await reader.metrics()).toEqual([])
  })

  it('adds up the requests of two gates on one provider', async () => {
    const { reader, provider } = sdk()
    const first = createGate({ metrics: { meterProvider: provider } })
    const second = createGate({ metrics: { meterProvider: provider } })
    await first.handle(coreRequest())
    await second.handle(coreRequest())
    await second.handle(coreRequest())
    expect(sums(await reader.metrics(), 'open_data_gate.requests')).toEqual({ 'auth=none outcome=allowed policy=anonymous': 3 })
  })

  it('refuses a meterProvider that is not one, naming the option', () => {
    expect(() => createGate({ metrics: { meterProvider: {} as never } })).toThrow(/metrics\.meterProvider must be an OpenTelemetry MeterProvider/)
    expect(() => createGate({ metrics: { meterProvidr: {} } as never })).toThrow(/unknown option `metrics\.meterProvidr`; did you mean `meterProvider`\?/)
  })

  it('counts failed store calls by why, and the outage as an up-down counter until the store answers again', async () => {
    const { reader, provider } = sdk()
    const store = new FlakyStore()
    const gate = createGate({ store, storeTimeoutMs: 100, throttle: { onStoreError: 'fail-closed' }, metrics: { meterProvider: provider } })
    const request = () => gate.handle(coreRequest())
    store.modes.set('consumeRate', 'reject')
    expect(status(await request())).toBe(503)
    const down = await reader.metrics()
    expect(sums(down, 'open_data_gate.store.unavailable')).toEqual({ 'store.kind=memory store.role=records+rates': 1 })
    expect(sums(down, 'open_data_gate.store.errors')).toEqual({ 'error.type=failure store.kind=memory store.operation=consumeRate': 1 })
    // A call that hangs past storeTimeoutMs is a timeout; the outage is still one.
    store.modes.set('consumeRate', 'hang')
    expect(status(await request())).toBe(503)
    store.modes.set('consumeRate', 'ok')
    // No probe for as long as the timed-out call took (store-health.ts): a request or two may fail at once meanwhile.
    await expect.poll(async () => status(await request()), { interval: 50, timeout: 10_000 }).toBe('next')
    const after = await reader.metrics()
    expect(sums(after, 'open_data_gate.store.unavailable')).toEqual({ 'store.kind=memory store.role=records+rates': 0 })
    expect(sums(after, 'open_data_gate.store.errors')).toMatchObject({
      'error.type=failure store.kind=memory store.operation=consumeRate': 1,
      'error.type=timeout store.kind=memory store.operation=consumeRate': 1,
    })
    expect(sums(after, 'open_data_gate.requests')).toMatchObject({ 'auth=none outcome=allowed policy=anonymous': 1 })
    expect(sums(after, 'open_data_gate.requests')['auth=none outcome=error policy=anonymous']).toBeGreaterThanOrEqual(2)
  })

  it('reports each store up (0) and nothing dropped from the start, so an alert needs no absent()', async () => {
    const { reader, provider } = sdk()
    createGate({ store: new MemoryStore(), metrics: { meterProvider: provider } })
    const all = await reader.metrics()
    expect(sums(all, 'open_data_gate.store.unavailable')).toEqual({ 'store.kind=memory store.role=records+rates': 0 })
    expect(sums(all, 'open_data_gate.usage.dropped')).toEqual({ '': 0 })
    expect(sums(all, 'open_data_gate.usage.backlog.batches')).toEqual({ '': 0 })
    expect(sums(all, 'open_data_gate.usage.backlog.rows')).toEqual({ '': 0 })
  })

  it('measures the usage flush backlog while the store refuses usage, and counts the batches it drops', async () => {
    const { reader, provider } = sdk()
    /** A store whose usage writes fail while `down`. */
    class UsageDown extends MemoryStore {
      down = true
      override addUsage(...args: Parameters<MemoryStore['addUsage']>): ReturnType<MemoryStore['addUsage']> {
        if (this.down) throw new Error('connect ECONNREFUSED')
        return super.addUsage(...args)
      }
    }
    const store = new UsageDown()
    const gate = createGate({ store, usage: { maxPendingFlushes: 2, flushIntervalMs: 3_600_000 }, logger: false, metrics: { meterProvider: provider } })
    const { appToken } = await gate.applications.register({ name: 'A' })
    const figures = async () => {
      const all = await reader.metrics()
      const one = (name: string) => sums(all, `open_data_gate.usage.${name}`)['']
      return { batches: one('backlog.batches'), rows: one('backlog.rows'), dropped: one('dropped') }
    }
    const dropped: number[] = []
    gate.on('usageDropped', (e) => dropped.push(e.flushes))
    // Each flush makes one batch of this application's minute, hour and day rows.
    for (let i = 0; i < 2; i++) {
      await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
      await expect(gate.usage.flush()).rejects.toThrow(StoreError)
    }
    expect(await figures()).toEqual({ batches: 2, rows: 6, dropped: 0 })
    // A third batch is one more than usage.maxPendingFlushes: the oldest is given up.
    await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    await expect(gate.usage.flush()).rejects.toThrow(StoreError)
    expect(await figures()).toEqual({ batches: 2, rows: 6, dropped: 1 })
    expect(dropped).toEqual([1])
    store.down = false
    await gate.usage.flush()
    expect(await figures()).toEqual({ batches: 0, rows: 0, dropped: 1 })
  })

  it('tells a separate rate store by its role, and a store of your own as custom', async () => {
    const { reader, provider } = sdk()
    // A store of one's own: a plain object, here lending a MemoryStore's methods.
    const memory = new MemoryStore()
    const own: Record<string, unknown> = {}
    for (const name of Object.getOwnPropertyNames(MemoryStore.prototype)) {
      const method = (memory as unknown as Record<string, unknown>)[name]
      if (name !== 'constructor' && typeof method === 'function') own[name] = method.bind(memory)
    }
    const rates = new FlakyStore()
    const gate = createGate({ store: own as unknown as MemoryStore, rateStore: rates, metrics: { meterProvider: provider } })
    const { appToken } = await gate.applications.register({ name: 'A' })
    rates.modes.set('consumeRate', 'reject')
    await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    const all = await reader.metrics()
    expect(sums(all, 'open_data_gate.store.unavailable')).toEqual({ 'store.kind=custom store.role=records': 0, 'store.kind=memory store.role=rates': 1 })
    const operations = histogram(all, 'open_data_gate.store.operation.duration')?.dataPoints.map((p) => `${String(p.attributes['open_data_gate.store.kind'])} ${String(p.attributes['open_data_gate.store.operation'])}`)
    expect(operations).toEqual(expect.arrayContaining(['custom insertApplication', 'custom getApplication']))
  })
})

const redisAvailable = await sharedRedisAvailable('telemetry on the shared Redis')

describe.skipIf(!redisAvailable)('store metrics on Redis', () => {
  it('times every store call the gate makes, by operation, as a redis store', async () => {
    const { reader, provider } = sdk()
    const prefix = randomPrefix('telemetry')
    const store = new RedisStore({ url: REDIS_URL, prefix })
    const gate = createGate({ store, metrics: { meterProvider: provider } })
    try {
      const { appToken } = await gate.applications.register({ name: 'A' })
      for (let i = 0; i < 3; i++) expect(status(await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } })))).toBe('next')
      const duration = histogram(await reader.metrics(), 'open_data_gate.store.operation.duration')
      expect(duration?.descriptor.unit).toBe('s')
      const counts = Object.fromEntries((duration?.dataPoints ?? []).map((p) => [`${String(p.attributes['open_data_gate.store.kind'])} ${String(p.attributes['open_data_gate.store.operation'])}`, p.value.count]))
      expect(counts).toMatchObject({ 'redis insertApplication': 1, 'redis consumeRate': 3 })
      expect(counts['redis getApplication']).toBeGreaterThanOrEqual(1)
      for (const point of duration?.dataPoints ?? []) expect(point.value.sum).toBeLessThan(60)
    } finally {
      await deletePrefix(store.client, prefix)
      await gate.close()
    }
  })
})

describe('traces', () => {
  type Seen = { event: string; message: HandleMessage | StoreCallMessage; decision?: unknown }
  const subscriptions: (() => void)[] = []
  afterEach(() => {
    for (const unsubscribe of subscriptions.splice(0)) unsubscribe()
  })

  /** Subscribes to every event of a channel, keeping a copy of each message's decision as it was at the event. */
  function watch(name: string): Seen[] {
    const seen: Seen[] = []
    const channel = diagnosticsChannel.tracingChannel<object, HandleMessage | StoreCallMessage>(name)
    const handlers = Object.fromEntries(
      (['start', 'end', 'asyncStart', 'asyncEnd', 'error'] as const).map((event) => [
        event,
        (message: HandleMessage | StoreCallMessage) => seen.push({ event, message, decision: 'decision' in message ? structuredClone(message.decision) : undefined }),
      ]),
    ) as unknown as Parameters<typeof channel.subscribe>[0]
    channel.subscribe(handlers)
    subscriptions.push(() => channel.unsubscribe(handlers))
    return seen
  }

  it('publishes start, then end with the decision, around a decision made at once', async () => {
    const { appToken, send } = await gateWithEveryone({})
    const seen = watch('open-data-gate:handle')
    expect(await send({ 'x-app-token': appToken })).toBe('next')
    expect(seen.map((s) => s.event)).toEqual(['start', 'end'])
    expect(seen[0]?.decision).toBeUndefined()
    expect(seen[0]?.message).toMatchObject({ request: { method: 'GET', path: '/resource/abcd-1234.json', headers: { 'x-app-token': appToken } } })
    expect(seen[1]?.decision).toEqual({ status: null, outcome: 'allowed', policy: 'application', auth: 'none' })
  })

  it('names the request by the id the gate answers with, so a trace meets the log line and the response', async () => {
    const { gate } = await gateWithEveryone({})
    const seen = watch('open-data-gate:handle')
    const outcome = await gate.handle(coreRequest({ headers: { 'x-app-token': 'made-up-app-token-000' } }))
    expect(outcome.type).toBe('respond')
    const answered = outcome.type === 'respond' ? outcome.response.headers['x-request-id'] : undefined
    expect(typeof answered).toBe('string')
    expect((seen[0]?.message as HandleMessage).requestId).toBe(answered)
  })

  it('publishes asyncStart and asyncEnd with the decision once a decision that waited on the store is made', async () => {
    const store = new FlakyStore()
    store.modes.set('consumeRate', 'async')
    const gate = createGate({ store, throttle: { anonymous: { limit: 1, windowMs: 60_000 } } })
    const seen = watch('open-data-gate:handle')
    expect(status(await gate.handle(coreRequest()))).toBe('next')
    expect(status(await gate.handle(coreRequest()))).toBe(429)
    expect(seen.map((s) => s.event)).toEqual(['start', 'end', 'asyncStart', 'asyncEnd', 'start', 'end', 'asyncStart', 'asyncEnd'])
    expect(seen[1]?.decision).toBeUndefined()
    expect(seen[2]?.decision).toEqual({ status: null, outcome: 'allowed', policy: 'anonymous', auth: 'none' })
    // A refusal is a decision, not an error.
    expect(seen[6]?.decision).toEqual({ status: 429, outcome: 'throttled', policy: 'anonymous', auth: 'none' })
  })

  it('publishes error with the failure and the decision when the gate answers a 5xx for it', async () => {
    const store = new FlakyStore()
    store.modes.set('consumeRate', 'reject')
    const gate = createGate({ store, throttle: { onStoreError: 'fail-closed' } })
    const seen = watch('open-data-gate:handle')
    expect(status(await gate.handle(coreRequest()))).toBe(503)
    expect(seen.map((s) => s.event)).toEqual(['start', 'end', 'error', 'asyncStart', 'asyncEnd'])
    const error = seen.find((s) => s.event === 'error')
    expect(error?.decision).toEqual({ status: 503, outcome: 'error', policy: 'anonymous', auth: 'none' })
    expect((error?.message as HandleMessage).error).toMatchObject({ name: 'StoreError', operation: 'consumeRate' })
  })

  it('shows no credential: the Authorization and Cookie values are redacted and the query left out', async () => {
    const { appToken, keyId, keySecret, accessToken, send } = await gateWithEveryone({})
    const seen = watch('open-data-gate:handle')
    const authorization = basic(keyId, keySecret)
    expect(await send({ 'x-app-token': appToken, authorization, cookie: 'odg_session=s3cr3t-session' })).toBe('next')
    await send({ authorization: `OAuth ${accessToken}` })
    const start = seen[0]?.message as HandleMessage
    expect(start.request.headers).toMatchObject({ authorization: '[redacted]', cookie: '[redacted]', 'x-app-token': appToken })
    expect(seen[1]?.decision).toMatchObject({ auth: 'api-key' })
    const text = JSON.stringify(seen.map((s) => s.message))
    for (const secret of [keySecret, authorization, accessToken, 's3cr3t-session']) expect(text).not.toContain(secret)
  })

  it('carries the value of no header outside its short list: no CSRF token, no host credential header, no cookie under any name', async () => {
    const { appToken, keyId, keySecret, send } = await gateWithEveryone({})
    const seen = watch('open-data-gate:handle')
    const authorization = basic(keyId, keySecret)
    const secrets = { 'x-csrf-token': 'csrf-0123456789abcdefghijklmnopqrstuvwxyzABCDEFG', 'x-api-key': 'host-api-key-s3cr3t', 'x-auth-session': 'host-session-s3cr3t' }
    await send({ 'x-app-token': appToken, authorization, cookie: '__Host-odg-csrf=csrf-0123456789abcdefghijklmnopqrstuvwxyzABCDEFG', ...secrets, 'user-agent': 'soda-js/4', 'sec-fetch-site': 'same-origin' })
    const start = seen[0]?.message as HandleMessage
    expect(start.request.headers).toEqual({
      'x-app-token': appToken,
      'user-agent': 'soda-js/4',
      'sec-fetch-site': 'same-origin',
      authorization: '[redacted]',
      cookie: '[redacted]',
      'x-csrf-token': '[redacted]',
      'x-api-key': '[redacted]',
      'x-auth-session': '[redacted]',
    })
    const text = JSON.stringify(seen.map((s) => s.message))
    for (const secret of [keySecret, authorization, ...Object.values(secrets)]) expect(text).not.toContain(secret)
  })

  it('publishes each store call on open-data-gate:store, with its operation and store', async () => {
    const store = new FlakyStore()
    store.modes.set('getApplication', 'async')
    const gate = createGate({ store })
    const { appToken } = await gate.applications.register({ name: 'A' })
    const seen = watch('open-data-gate:store')
    await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    const calls = seen.map((s) => `${s.event} ${(s.message as StoreCallMessage).operation} ${(s.message as StoreCallMessage).store}`)
    expect(calls).toEqual([
      'start getApplication memory',
      'end getApplication memory',
      'asyncStart getApplication memory',
      'asyncEnd getApplication memory',
      'start consumeRate memory',
      'end consumeRate memory',
    ])
    store.modes.set('consumeRate', 'throw')
    await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    const failed = seen.filter((s) => s.event === 'error').map((s) => s.message as StoreCallMessage)
    expect(failed).toEqual([expect.objectContaining({ operation: 'consumeRate', store: 'memory', role: 'records+rates', error: expect.objectContaining({ name: 'StoreError' }) })])
  })

  it('makes no message while nobody listens', async () => {
    const { appToken, send } = await gateWithEveryone({})
    const seen = watch('open-data-gate:handle')
    for (const unsubscribe of subscriptions.splice(0)) unsubscribe()
    await send({ 'x-app-token': appToken })
    expect(seen).toEqual([])
  })
})

describe('the Prometheus example', () => {
  it('serves the decision counter on /metrics, as Prometheus scrapes it', async () => {
    const root = fileURLToPath(new URL('..', import.meta.url))
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/prometheus/server.ts'], { cwd: root, env: { ...process.env, PORT: '0', METRICS_PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    try {
      await expect.poll(() => output, { timeout: 30_000, interval: 100 }).toMatch(/metrics on http:\/\/127\.0\.0\.1:\d+\/metrics/)
      const api = (output.match(/API on (http:\/\/127\.0\.0\.1:\d+)/) as RegExpMatchArray)[1] as string
      const scrape = (output.match(/metrics on (http:\S+)/) as RegExpMatchArray)[1] as string
      const appToken = (output.match(/X-App-Token: (\S+)'/) as RegExpMatchArray)[1] as string
      expect((await fetch(`${api}/resource/bike-racks.json`, { headers: { 'x-app-token': appToken } })).status).toBe(200)
      expect((await fetch(`${api}/resource/bike-racks.json`, { headers: { 'x-app-token': appToken } })).status).toBe(200)
      expect((await fetch(`${api}/resource/bike-racks.json`, { headers: { 'x-app-token': 'made-up-app-token-000' } })).status).toBe(403)
      const response = await fetch(scrape)
      expect(response.headers.get('content-type')).toMatch(/^text\/plain/)
      const lines = (await response.text()).split('\n')
      const requests = lines.filter((line) => line.startsWith('open_data_gate_requests_total{'))
      expect(requests).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^open_data_gate_requests_total\{open_data_gate_outcome="allowed",open_data_gate_policy="application",open_data_gate_auth="none",.*\} 2$/),
          expect.stringMatching(/^open_data_gate_requests_total\{open_data_gate_outcome="refused",open_data_gate_policy="anonymous",open_data_gate_auth="none",.*\} 1$/),
        ]),
      )
      expect(requests).toHaveLength(2)
      expect(lines).toContain('# TYPE open_data_gate_requests_total counter')
      expect(lines.some((line) => line.startsWith('open_data_gate_decision_duration_bucket{'))).toBe(true)
      expect(lines.join('\n')).not.toContain(appToken)
    } finally {
      child.kill('SIGTERM')
    }
  }, 60_000)
})
