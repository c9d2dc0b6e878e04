/**
 * Usage outcomes of their own: the refusals of a suspended application (`suspended`, a part
 * of `refused`) and, per shadow limit, the requests it would have refused (`shadow`), read
 * from the decision record by `gate.usage.count`, kept by the store and shown by the
 * library, the self-service usage endpoint and the command.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createGate, MemoryStore, type Gate, type GateOptions } from '../src/index.js'
import type { Decision } from '../src/rules/decision.js'
import type { UsageBucket } from '../src/store/usage-contract.js'
import { coreRequest } from './support/requests.js'

const HOUR = 3_600_000
const PASSWORD = 'correct horse battery'
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

const gates: Gate[] = []
afterEach(async () => {
  vi.useRealTimers()
  await Promise.all(gates.splice(0).map((gate) => gate.close()))
})

function gateWith(options: GateOptions = {}): Gate {
  const gate = createGate({ store: new MemoryStore(), usage: { flushIntervalMs: HOUR }, ...options })
  gates.push(gate)
  return gate
}

/** A decision record as the pipeline makes one, `status: null` for a request let through. */
function decision(appToken: string | null, fields: Partial<Decision> = {}): Decision {
  const status = fields.status ?? null
  return {
    requestId: undefined,
    appToken,
    auth: 'none',
    status,
    outcome: status === null ? 'allowed' : status === 429 ? 'throttled' : status >= 500 ? 'error' : status >= 400 ? 'refused' : 'allowed',
    unknownAppToken: false,
    throttle: null,
    error: undefined,
    suspended: false,
    shadowed: [],
    ...fields,
  }
}

/** The application's buckets of `granularity` around now, the empty ones left out. */
async function buckets(gate: Gate, appToken: string | null, granularity: 'minute' | 'hour' | 'day' = 'minute'): Promise<UsageBucket[]> {
  await gate.usage.flush()
  const from = Date.now() - 2 * 86_400_000
  const { buckets: all } = await gate.usage.query({ appToken, from, to: Date.now() + 60_000, granularity })
  return all.filter((b) => b.requests > 0 || b.unknownAppToken > 0)
}

/** Every count of the buckets added up. */
function sum(list: readonly UsageBucket[]) {
  const total = { requests: 0, throttled: 0, refused: 0, suspended: 0, answered: 0, shadow: {} as Record<string, number> }
  for (const b of list) {
    total.requests += b.requests
    total.throttled += b.throttled
    total.refused += b.refused
    total.suspended += b.suspended
    total.answered += b.statuses['2xx'] + b.statuses['3xx'] + b.statuses['4xx'] + b.statuses['5xx']
    for (const [name, count] of Object.entries(b.shadow)) total.shadow[name] = (total.shadow[name] ?? 0) + count
  }
  return total
}

describe('counting suspended and shadowed requests from the decision record', () => {
  it('counts a suspension refusal as refused and suspended, and each shadow limit by name, in minute, hour and day buckets', async () => {
    const gate = gateWith()
    const { appToken } = await gate.applications.register({ name: 'Transit' })
    const context = { application: { appToken } }
    // Let through: one no shadow limit minded, one that one would have refused, one that two would have.
    for (const shadowed of [[], ['burst-10s'], ['burst-10s', 'daily-cap']]) {
      gate.usage.count(decision(appToken, { shadowed }))
      gate.usage.responded(context, 200)
    }
    gate.usage.count(decision(appToken, { status: 403, suspended: true }))
    gate.usage.count(decision(appToken, { status: 403, suspended: true }))
    gate.usage.count(decision(appToken, { status: 401 }))
    gate.usage.count(decision(appToken, { status: 429, shadowed: ['daily-cap'] }))
    for (const granularity of ['minute', 'hour', 'day'] as const) {
      const total = sum(await buckets(gate, appToken, granularity))
      expect(total, granularity).toEqual({ requests: 7, throttled: 1, refused: 3, suspended: 2, answered: 3, shadow: { 'burst-10s': 2, 'daily-cap': 2 } })
      // Every request in exactly one class: suspended is inside refused, shadow beside them all.
      expect(total.throttled + total.refused + total.answered).toBe(total.requests)
    }
  })

  it('reads a bucket with neither as 0 and {}, and never counts them for a made-up app token', async () => {
    const gate = gateWith()
    const { appToken } = await gate.applications.register({ name: 'Transit' })
    gate.usage.count(decision(appToken))
    gate.usage.count(decision('made-up', { status: 403, unknownAppToken: true, suspended: true, shadowed: ['burst-10s'] }))
    const [bucket] = await buckets(gate, appToken)
    expect(bucket).toMatchObject({ requests: 1, suspended: 0, shadow: {} })
    expect(sum(await buckets(gate, null))).toMatchObject({ requests: 0, suspended: 0, shadow: {} })
    // A whole empty bucket of the range has them too.
    const { buckets: all } = await gate.usage.query({ appToken, from: Date.now() - 3 * HOUR, granularity: 'hour' })
    expect(all[0]).toMatchObject({ requests: 0, suspended: 0, shadow: {} })
  })

  it('keeps at most 10 shadow names per bucket, the first ones seen, and still counts the requests', async () => {
    // All in one minute: the bound is per bucket, and a minute's end would start another.
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.now() - (Date.now() % 60_000) + 30_000)
    const gate = gateWith()
    const { appToken } = await gate.applications.register({ name: 'Transit' })
    const names = Array.from({ length: 12 }, (_, i) => `limit-${String(i + 1).padStart(2, '0')}`)
    gate.usage.count(decision(appToken, { shadowed: names.slice(0, 4) }))
    gate.usage.count(decision(appToken, { shadowed: names.slice(2) }))
    gate.usage.count(decision(appToken, { shadowed: ['limit-12', 'limit-01'] }))
    const total = sum(await buckets(gate, appToken))
    expect(total.requests).toBe(3)
    expect(total.shadow).toEqual({ ...Object.fromEntries(names.slice(0, 10).map((name) => [name, name === 'limit-03' || name === 'limit-04' ? 2 : 1])), 'limit-01': 2 })
  })
})

describe('a suspended application in usage, request by request', () => {
  it("counts its refused requests as suspended, and another refusal or a resumed application's requests not", async () => {
    const gate = gateWith({ throttle: false })
    const { appToken } = await gate.applications.register({ name: 'Transit' })
    const ask = () => gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    expect((await ask()).type).toBe('next')
    await gate.applications.suspend(appToken, { reason: 'Scraping beyond its limit' })
    for (let i = 0; i < 3; i++) expect(await ask()).toMatchObject({ type: 'respond', response: { status: 403 } })
    // Refused for another reason: Basic with a wrong password, while suspended or not, is no suspension's.
    await gate.applications.resume(appToken)
    expect(await gate.handle(coreRequest({ headers: { 'x-app-token': appToken, authorization: basic('nobody', 'wrong password') } }))).toMatchObject({ type: 'respond', response: { status: 401 } })
    expect((await ask()).type).toBe('next')
    expect(sum(await buckets(gate, appToken))).toMatchObject({ requests: 6, refused: 4, suspended: 3 })
  })

  it('shows suspended and shadow on the self-service usage endpoint', async () => {
    const gate = gateWith({ basic: { scrypt: { logN: 10 } } })
    const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada Lovelace', email: 'ada@example.org' })
    const { appToken } = await gate.applications.registerOwn({ ownerId: ada.id, name: 'Mine' })
    await gate.applications.suspend(appToken, { reason: 'Abuse' })
    await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    await gate.applications.resume(appToken)
    gate.usage.count(decision(appToken, { shadowed: ['burst-10s'] }))
    await gate.usage.flush()
    const hour = Date.now() - (Date.now() % HOUR)
    const outcome = await gate.handle(coreRequest({ url: `/api/applications/${appToken}/usage?granularity=hour&from=${hour}&to=${hour + HOUR}`, headers: { authorization: basic('ada', PASSWORD) } }))
    if (outcome.type !== 'respond') throw new Error('let through')
    expect(outcome.response.status).toBe(200)
    const series = JSON.parse(outcome.response.body) as { buckets: UsageBucket[] }
    expect(series.buckets).toEqual([expect.objectContaining({ start: hour, requests: 2, refused: 1, suspended: 1, shadow: { 'burst-10s': 1 } })])
  })
})
