/**
 * One decision, one record: usage (flushed to the store), the `open_data_gate.requests`
 * counter (the real OpenTelemetry SDK) and the trace events (node:diagnostics_channel) see
 * the same requests in the same classes. A mixed load goes through Express over real HTTP:
 * requests the host answers, throttled ones, refused ones, made-up app tokens, and the
 * gate's own endpoints (the current user, the OAuth token and metadata endpoints, the API
 * key endpoints).
 *
 * The three observers name the classes differently: the counter and the traces by outcome
 * (`allowed`, `throttled`, `refused`, `error`) and budget (`application`, `anonymous`);
 * usage by application, with `requests`, `throttled`, `refused` and the status classes, and
 * made-up app tokens as a number of their own (refused, in the anonymous pool, for the
 * counter). The test maps usage onto the counter's classes and expects all three equal, and
 * equal to what it sent.
 */
import diagnosticsChannel from 'node:diagnostics_channel'
import { MeterProvider, type SumMetricData } from '@opentelemetry/sdk-metrics'
import express from 'express'
import request from 'supertest'
import { TestReader } from './support/metric-reader.js'
import { afterEach, describe, expect, it } from 'vitest'
import { createGate, MemoryStore, type HandleMessage } from '../src/index.js'
import { expressGate } from '../adapters/express.js'

type Outcome = 'allowed' | 'throttled' | 'refused' | 'error'
type Policy = 'application' | 'anonymous'
type Classes = Record<`${Outcome} ${Policy}`, number>

function noClasses(): Classes {
  const classes = {} as Classes
  for (const outcome of ['allowed', 'throttled', 'refused', 'error'] as const) for (const policy of ['application', 'anonymous'] as const) classes[`${outcome} ${policy}`] = 0
  return classes
}

const basic = (user: string, secret: string) => `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`

describe('one decision record', () => {
  const unsubscribe: Array<() => void> = []
  afterEach(() => {
    for (const off of unsubscribe.splice(0)) off()
  })

  it('is seen alike by usage, the requests counter and the traces, request class by request class', async () => {
    const reader = new TestReader()
    const provider = new MeterProvider({ readers: [reader] })
    const store = new MemoryStore()
    const gate = createGate({
      store,
      trustProxy: 'loopback',
      logger: false,
      metrics: { meterProvider: provider },
      basic: { scrypt: { logN: 10 } },
      apiKeyEndpoints: {},
      throttle: { application: { limit: 1000, windowMs: 3_600_000 }, anonymous: { limit: 4, windowMs: 3_600_000, scope: 'shared' } },
      usage: { flushIntervalMs: 3_600_000 },
    })
    const traced = noClasses()
    const channel = diagnosticsChannel.tracingChannel<object, HandleMessage>('open-data-gate:handle')
    const record = (message: HandleMessage) => {
      const decision = message.decision
      if (decision !== undefined) traced[`${decision.outcome} ${decision.policy}`]++
    }
    // A decision is told once: on `end` when it was made at once, on `asyncEnd` when it waited.
    const handlers = {
      end: (message: HandleMessage) => record(message),
      asyncEnd: (message: HandleMessage) => record(message),
    } as unknown as Parameters<typeof channel.subscribe>[0]
    channel.subscribe(handlers)
    unsubscribe.push(() => channel.unsubscribe(handlers))

    const { appToken } = await gate.applications.register({ name: 'busy' })
    const { appToken: small } = await gate.applications.register({ name: 'small', limit: 2 })
    const ada = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'ada@example.org' })
    const key = await gate.apiKeys.create(ada.id, { name: 'etl' })
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken })

    const app = express()
    app.use(expressGate(gate))
    app.get('/resource', (_req, res) => void res.json({ ok: true }))
    const https = { 'x-forwarded-proto': 'https' }
    const get = (path: string, headers: Record<string, string> = {}) => request(app).get(path).set(https).set(headers)
    const sent = noClasses()
    const expectStatus = async (pending: request.Test, status: number, as: `${Outcome} ${Policy}`) => {
      const response = await pending
      expect(response.status, `${as}: ${JSON.stringify(response.body)}`).toBe(status)
      sent[as]++
    }

    for (let i = 0; i < 5; i++) await expectStatus(get('/resource', { 'x-app-token': appToken }), 200, 'allowed application')
    await expectStatus(get('/resource', { 'x-app-token': appToken, authorization: basic(key.keyId, key.keySecret) }), 200, 'allowed application')
    await expectStatus(get('/resource', { authorization: `OAuth ${accessToken}` }), 200, 'allowed application')
    await expectStatus(get('/resource', { 'x-app-token': appToken, authorization: basic('ada', 'correct horse battery') }), 200, 'allowed application')
    for (let i = 0; i < 2; i++) await expectStatus(get('/resource', { 'x-app-token': small }), 200, 'allowed application')
    for (let i = 0; i < 3; i++) await expectStatus(get('/resource', { 'x-app-token': small }), 429, 'throttled application')
    await expectStatus(get('/resource', { 'x-app-token': appToken, authorization: basic('ada', 'wrong password') }), 401, 'refused application')
    await expectStatus(get('/resource', { 'x-app-token': appToken, authorization: 'OAuth not-a-token-anybody-issued' }), 401, 'refused application')
    for (let i = 0; i < 3; i++) await expectStatus(get('/resource', { 'x-app-token': `made-up-token-${i}-0000` }), 403, 'refused anonymous')
    await expectStatus(get('/resource', { authorization: basic(key.keyId, key.keySecret) }), 403, 'refused anonymous')
    // The gate's own endpoints: the current user (after every check), the OAuth endpoints and the API key endpoints (the user's own).
    await expectStatus(get('/api/users/current.json', { 'x-app-token': appToken, authorization: basic(key.keyId, key.keySecret) }), 200, 'allowed application')
    await expectStatus(get('/.well-known/oauth-authorization-server'), 200, 'allowed anonymous')
    await expectStatus(request(app).post('/oauth/access_token').set(https).type('form').send({ grant_type: 'authorization_code' }), 401, 'refused anonymous')
    await expectStatus(get('/api/api_keys', { authorization: basic('ada', 'correct horse battery') }), 200, 'allowed anonymous')
    // The anonymous budget of 4 (the metadata and the API keys took none of it): 4 answered, then throttled.
    for (let i = 0; i < 4; i++) await expectStatus(get('/resource'), 200, 'allowed anonymous')
    for (let i = 0; i < 2; i++) await expectStatus(get('/resource'), 429, 'throttled anonymous')

    await gate.usage.flush()
    const counted = noClasses()
    for (const [token, policy] of [
      [appToken, 'application'],
      [small, 'application'],
      [null, 'anonymous'],
    ] as const) {
      const { buckets } = await gate.usage.query({ appToken: token, granularity: 'minute', from: Date.now() - 600_000 })
      for (const bucket of buckets) {
        counted[`throttled ${policy}`] += bucket.throttled
        counted[`refused ${policy}`] += bucket.refused
        // A made-up app token is refused in the anonymous pool, as one number of its own.
        counted['refused anonymous'] += bucket.unknownAppToken
        counted[`allowed ${policy}`] += bucket.requests - bucket.throttled - bucket.refused - bucket.statuses['5xx']
        counted[`error ${policy}`] += bucket.statuses['5xx']
      }
    }
    const metered = noClasses()
    const requests = (await reader.metrics()).find((metric) => metric.descriptor.name === 'open_data_gate.requests') as SumMetricData | undefined
    for (const point of requests?.dataPoints ?? []) {
      metered[`${point.attributes['open_data_gate.outcome'] as Outcome} ${point.attributes['open_data_gate.policy'] as Policy}`] += point.value
    }

    expect(metered).toEqual(sent)
    expect(traced).toEqual(sent)
    expect(counted).toEqual(sent)
    await gate.close()
    await provider.shutdown()
  })
})
