/**
 * Near-limit alerts: an application crossing 80%, 90% and 100% of its limit is reported once
 * per threshold per window, by one of the gates sharing a store (two gates on the real
 * Redis), counted by the `open_data_gate.near_limit` metric (the real OpenTelemetry SDK), and
 * delivered to the operator's webhook signed as Standard Webhooks says, checked by that
 * specification's own library (`standardwebhooks`) on a real local HTTP server.
 */
import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { MeterProvider, type SumMetricData } from '@opentelemetry/sdk-metrics'
import { Redis } from 'ioredis'
import { Webhook } from 'standardwebhooks'
import { TestReader } from './support/metric-reader.js'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createGate, limitRateKey, MemoryStore, periodBounds, type Gate, type GateOptions, type NearLimitEvent } from '../src/index.js'
import { RedisStore } from '../src/store/redis/store.js'
import { deletePrefix, randomPrefix, REDIS_URL, sharedRedisAvailable } from './redis/servers.js'
import { coreRequest } from './support/requests.js'

const LIMIT = 10
const HOUR_MS = 3_600_000
const secret = () => `whsec_${randomBytes(32).toString('base64')}`

async function waitFor<T>(read: () => T, done: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = read()
    if (done(value) || Date.now() > deadline) return value
    await sleep(10)
  }
}

/** A local endpoint that answers with `statuses` in turn (then 200), keeping what it received. */
async function endpoint(statuses: number[] = []) {
  const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => (body += chunk))
    req.on('end', () => {
      received.push({ headers: req.headers, body })
      res.statusCode = statuses.shift() ?? 200
      res.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/odg`
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

async function gateWithApp(options: GateOptions, appToken?: string): Promise<{ gate: Gate; appToken: string; events: NearLimitEvent[] }> {
  const gate = createGate({ logger: false, throttle: { application: { limit: LIMIT, windowMs: HOUR_MS } }, ...options })
  const events: NearLimitEvent[] = []
  gate.on('nearLimit', (event) => events.push(event))
  const token = appToken ?? (await gate.applications.register({ name: 'busy' })).appToken
  return { gate, appToken: token, events }
}

const send = async (gate: Gate, appToken: string) => {
  const outcome = await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
  return outcome.type === 'next' ? 200 : outcome.response.status
}

describe('near-limit alerts', () => {
  const closing: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const close of closing.splice(0)) await close()
  })

  it('reports 80%, 90% and 100% of the limit once each, with the request that crossed it', async () => {
    const { gate, appToken, events } = await gateWithApp({ store: new MemoryStore() })
    closing.push(() => gate.close())
    for (let i = 0; i < LIMIT + 3; i++) await send(gate, appToken)
    await waitFor(() => events.length, (n) => n >= 3)
    expect(events.map(({ threshold, remaining }) => ({ threshold, remaining }))).toEqual([
      { threshold: 0.8, remaining: 2 },
      { threshold: 0.9, remaining: 1 },
      { threshold: 1, remaining: 0 },
    ])
    expect(events[0]).toMatchObject({ appToken, limit: LIMIT, windowMs: HOUR_MS, requestId: expect.any(String) })
  })

  it('watches each limit of a plan on its own: a daily quota at 80% is told while the hour has fewer requests left, shadow limits never', async () => {
    const store = new MemoryStore()
    const { gate, appToken, events } = await gateWithApp({
      store,
      throttle: {
        application: [
          { name: 'hour', limit: 5, windowMs: HOUR_MS },
          { name: 'day', limit: 100, period: 'day' },
          { name: 'trial', limit: 2, windowMs: HOUR_MS, shadow: true },
        ],
      },
    })
    closing.push(() => gate.close())
    // 85 of the day's 100 already spent (as earlier requests would have): the gate's own key and period.
    const { start, end } = periodBounds('day', 'UTC', Date.now())
    store.consumeLimits([{ kind: 'quota', key: limitRateKey(`app:${appToken}`, 'day'), limit: 100, periodStart: start, periodEnd: end, cost: 85 }])
    expect(await send(gate, appToken)).toBe(200)
    await waitFor(() => events.length, (n) => n >= 1)
    // The hour has 4 left (20% used), the day 14 (86%): only the day is near.
    expect(events).toEqual([expect.objectContaining({ appToken, name: 'day', threshold: 0.8, limit: 100, remaining: 14, windowMs: end - start })])
    await send(gate, appToken)
    await send(gate, appToken)
    await sleep(50)
    // The shadow trial limit (2 a minute) is past 100% and says nothing; the day is past 80% still, told once.
    expect(events.map((event) => `${event.name} ${event.threshold}`)).toEqual(['day 0.8'])
    await send(gate, appToken)
    await send(gate, appToken)
    await waitFor(() => events.length, (n) => n >= 3)
    // The fourth request is 80% of the hour, the fifth all of it; the fifth is 90% of the day.
    expect([...new Set(events.map((event) => `${event.name} ${event.threshold}`))].sort()).toEqual(['day 0.8', 'day 0.9', 'hour 0.8', 'hour 0.9', 'hour 1'])
  })

  it('takes the thresholds it is given, and none with nearLimit: false', async () => {
    const half = await gateWithApp({ store: new MemoryStore(), nearLimit: { thresholds: [0.5] } })
    const off = await gateWithApp({ store: new MemoryStore(), nearLimit: false })
    closing.push(() => half.gate.close(), () => off.gate.close())
    for (let i = 0; i < LIMIT; i++) {
      await send(half.gate, half.appToken)
      await send(off.gate, off.appToken)
    }
    await sleep(50)
    expect(half.events.map((event) => event.threshold)).toEqual([0.5])
    expect(off.events).toEqual([])
  })

  it('refuses thresholds, webhook addresses and secrets it cannot use, naming the option', () => {
    expect(() => createGate({ nearLimit: { thresholds: [80] } })).toThrow(/nearLimit\.thresholds takes fractions above 0 and at most 1/)
    expect(() => createGate({ nearLimit: { thresholds: [] } })).toThrow(/nearLimit\.thresholds must be a list of 1 to 10/)
    expect(() => createGate({ nearLimit: { webhook: { url: 'http://alerts.example.org/hook', secret: secret() } } })).toThrow(/nearLimit\.webhook\.url must be https/)
    expect(() => createGate({ nearLimit: { webhook: { url: 'not a url', secret: secret() } } })).toThrow(/nearLimit\.webhook\.url must be an absolute URL/)
    expect(() => createGate({ nearLimit: { webhook: { url: 'https://alerts.example.org/hook', secret: 'hunter2' } } })).toThrow(/nearLimit\.webhook\.secret must be whsec_/)
    expect(() => createGate({ nearLimit: { webhook: { url: 'https://alerts.example.org/hook', secret: `whsec_${randomBytes(8).toString('base64')}` } } })).toThrow(/24 to 64 random bytes/)
  })

  it('delivers each alert to the webhook, signed as Standard Webhooks says, and retries a failed delivery with the same id', async () => {
    const hook = await endpoint([503])
    const key = secret()
    const { gate, appToken } = await gateWithApp({ store: new MemoryStore(), nearLimit: { thresholds: [0.8], webhook: { url: hook.url, secret: key, retryDelayMs: 20 } } })
    closing.push(() => gate.close(), hook.close)
    for (let i = 0; i < LIMIT; i++) await send(gate, appToken)
    await waitFor(() => hook.received.length, (n) => n >= 2)
    expect(hook.received).toHaveLength(2)
    const [first, retry] = hook.received as [(typeof hook.received)[0], (typeof hook.received)[0]]
    expect(retry.headers['webhook-id']).toBe(first.headers['webhook-id'])
    // The specification's own library verifies the signature, the id and the timestamp.
    const verified = new Webhook(key).verify(retry.body, retry.headers as Record<string, string>) as { type: string; data: Record<string, unknown> }
    expect(verified).toMatchObject({ type: 'application.near_limit', data: { appToken, threshold: 0.8, limit: LIMIT, remaining: 2, windowMs: HOUR_MS } })
    // Signed with another secret, it is refused.
    expect(() => new Webhook(secret()).verify(retry.body, retry.headers as Record<string, string>)).toThrow()
  })

  it('logs a delivery it gave up on, naming the endpoint by its origin only', async () => {
    const hook = await endpoint([500, 500, 500])
    const warnings: Array<{ message: string; fields: unknown }> = []
    const record = (message: string, fields?: unknown) => void warnings.push({ message, fields })
    const { gate, appToken } = await gateWithApp({
      store: new MemoryStore(),
      nearLimit: { thresholds: [0.8], webhook: { url: `${hook.url}?token=s3cret`, secret: secret(), retries: 1, retryDelayMs: 20 } },
      logger: { error: record, warn: record, info() {}, debug() {} },
    })
    closing.push(() => gate.close(), hook.close)
    for (let i = 0; i < LIMIT; i++) await send(gate, appToken)
    const failed = await waitFor(() => warnings.filter((w) => (w.fields as { code?: string } | undefined)?.code === 'ODG_WEBHOOK_FAILED'), (found) => found.length > 0)
    expect(hook.received).toHaveLength(2)
    expect(failed).toHaveLength(1)
    expect(failed[0]?.message).toContain('after 2 attempt(s): answered 500')
    expect(failed[0]?.message).toContain(new URL(hook.url).origin)
    expect(failed[0]?.message).not.toContain('/hooks/odg')
    expect(failed[0]?.message).not.toContain('s3cret')
  })

  it('counts the alerts by threshold in open_data_gate.near_limit', async () => {
    const reader = new TestReader()
    const provider = new MeterProvider({ readers: [reader] })
    const { gate, appToken, events } = await gateWithApp({ store: new MemoryStore(), metrics: { meterProvider: provider } })
    closing.push(() => gate.close(), () => provider.shutdown())
    for (let i = 0; i < LIMIT; i++) await send(gate, appToken)
    await waitFor(() => events.length, (n) => n >= 3)
    const counter = (await reader.metrics()).find((metric) => metric.descriptor.name === 'open_data_gate.near_limit') as SumMetricData | undefined
    const byThreshold = Object.fromEntries((counter?.dataPoints ?? []).map((point) => [point.attributes['open_data_gate.threshold'], point.value]))
    expect(byThreshold).toEqual({ '0.8': 1, '0.9': 1, '1': 1 })
  })
})

describe.runIf(await sharedRedisAvailable('near-limit alerts across instances'))('near-limit alerts on a shared Redis', () => {
  let admin: Redis
  const prefix = randomPrefix('near-limit')
  beforeAll(() => {
    admin = new Redis(REDIS_URL)
  })
  afterAll(async () => {
    await deletePrefix(admin, prefix)
    admin.disconnect()
  })

  it('is reported once per threshold by one of two gates, whichever saw the request that crossed it', async () => {
    const storeA = new RedisStore({ url: REDIS_URL, prefix })
    const storeB = new RedisStore({ url: REDIS_URL, prefix })
    const a = await gateWithApp({ store: storeA })
    const b = await gateWithApp({ store: storeB }, a.appToken)
    try {
      // Both gates see requests past 80% and 90% (a the 9th, b the 8th and the 10th): each would
      // report them, were the store not to decide.
      for (let i = 0; i < LIMIT + 2; i++) await send(i % 2 === 0 ? a.gate : b.gate, a.appToken)
      await waitFor(() => a.events.length + b.events.length, (n) => n >= 3)
      await sleep(200)
      const all = [...a.events, ...b.events].map((event) => event.threshold).sort()
      expect(all).toEqual([0.8, 0.9, 1])
    } finally {
      await a.gate.close()
      await b.gate.close()
      await storeA.close()
      await storeB.close()
    }
  })
})
