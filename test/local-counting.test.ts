/**
 * Local-first counting (`throttle.local`): leases of an application's budget, spent in the
 * process (src/pipeline/leases.ts, src/pipeline/steps/lease.ts), on the memory store. The
 * four-process test on a Redis Cluster is test/redis-cluster-leases.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { createGate, MemoryStore, type GateOptions, type GateOutcome, type RateResult } from '../src/index.js'
import { Leases } from '../src/pipeline/leases.js'
import { coreRequest } from './support/requests.js'

const HOUR = 3_600_000
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

/** A clock the test moves, shared by the store and the leases. */
function clock(start = 1_700_000_000_000) {
  let now = start
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms
    },
  }
}

/** A memory store whose rate steps are counted, and N instances' leases of it. */
function instances(n: number, units: number, ttlMs: number, time = clock()) {
  const store = new MemoryStore({ clock: time.now })
  const steps: number[] = []
  const take = (key: string, limit: number, windowMs: number, cost: number): RateResult => {
    steps.push(cost)
    return store.consumeRate(key, limit, windowMs, cost)
  }
  const leases = Array.from({ length: n }, () => new Leases({ units, ttlMs, take, now: time.now }))
  return { store, steps, leases, time }
}

function spent(result: ReturnType<Leases['spend']>): RateResult {
  if (result instanceof Promise) throw new Error('the memory store answers synchronously')
  return result as RateResult
}

/** A deterministic sequence in [0, 1). */
function random(seed: number): () => number {
  let x = seed
  return () => {
    x = (x * 1103515245 + 12345) % 2147483648
    return x / 2147483648
  }
}

describe('leases of an application’s budget', () => {
  it('cost a cold application one step of one unit per request, and waste nothing', () => {
    const { steps, leases, time, store } = instances(1, 50, 1000)
    for (let i = 0; i < 20; i++) {
      expect(spent(leases[0]!.spend('k', 100, HOUR)).allowed).toBe(true)
      time.advance(2000)
    }
    expect(steps).toEqual(Array(20).fill(1))
    // The store counted exactly the 20 requests (plus what came back in 40 s: 100 per hour).
    expect(store.consumeRate('k', 100, HOUR, 0).remaining).toBe(100 - 20 + Math.floor((40_000 * 100) / HOUR))
  })

  it('grow to L for a hot application: one store step per L requests, the last units of the budget in a smaller lease, and a refusal costs no step until a lease fits', () => {
    const { steps, leases, time } = instances(1, 50, 1000)
    const admitted = Array.from({ length: 5000 }, () => spent(leases[0]!.spend('k', 1000, HOUR)).allowed).filter(Boolean).length
    // 1 + 2 + 4 + 8 + 16 + 32 = 63, then 18 leases of 50 (963); a 19th is refused, and the 37 left are taken at once.
    expect(admitted).toBe(1000)
    expect(steps.slice(0, 7)).toEqual([1, 2, 4, 8, 16, 32, 50])
    expect(steps.slice(24)).toEqual([50, 37, 50])
    expect(steps.length / 5000).toBeLessThan(0.01)
    // The last refusal holds until a whole lease fits again (50 units: 180 s at 1000 per hour), with no step.
    const refused = spent(leases[0]!.spend('k', 1000, HOUR))
    expect(refused).toMatchObject({ allowed: false, remaining: 0 })
    expect(refused.retryAfterMs).toBeGreaterThan(179_000)
    expect(steps.length).toBe(27)
    time.advance(refused.retryAfterMs)
    expect(spent(leases[0]!.spend('k', 1000, HOUR)).allowed).toBe(true)
    expect(steps.length).toBe(28)
  })

  it('shrink to what was spent when one expires with units left', () => {
    const { steps, leases, time } = instances(1, 64, 1000)
    for (let i = 0; i < 100; i++) spent(leases[0]!.spend('k', 10_000, HOUR))
    expect(steps.at(-1)).toBe(64)
    time.advance(1000)
    // That lease of 64 was spent by 100 - 63 = 37 requests when it expired.
    spent(leases[0]!.spend('k', 10_000, HOUR))
    expect(steps.at(-1)).toBe(37)
    expect(leases[0]!.held('k')).toBe(36)
  })

  it('let N instances admit at most min(N × L, ⌈T / I⌉) more than the exact limit in any interval, and never more than the limit over a run from a fresh key', () => {
    const n = 4
    const units = 25
    const ttlMs = 1000
    const limit = 36_000 // per hour: I = 100 ms, ⌈T / I⌉ = 10 < N × L = 100
    const interval = HOUR / limit
    const extra = Math.min(n * units, Math.ceil(ttlMs / interval))
    const { leases, time } = instances(n, units, ttlMs)
    const next = random(7)
    const admittedAt: number[] = []
    const start = time.now()
    // 60 s of a flood of about 40 requests per second per instance (four times the limit's rate), in bursts.
    while (time.now() - start < 60_000) {
      time.advance(Math.floor(next() * 50))
      const burst = 1 + Math.floor(next() * 3)
      for (let b = 0; b < burst; b++) {
        const instance = leases[Math.floor(next() * n)] as Leases
        if (spent(instance.spend('k', limit, HOUR)).allowed) admittedAt.push(time.now() - start)
      }
    }
    const total = time.now() - start
    // From a fresh key: at most the burst plus what came back over the run.
    expect(admittedAt.length).toBeLessThanOrEqual(limit + Math.floor(total / interval))
    // Every interval [a, a + t] beginning at an admission: exact GCRA admits at most limit + ⌊t / I⌋ in it.
    for (const t of [500, 2000, 10_000]) {
      let j = 0
      for (let i = 0; i < admittedAt.length; i++) {
        while (j < admittedAt.length && (admittedAt[j] as number) <= (admittedAt[i] as number) + t) j++
        expect(j - i).toBeLessThanOrEqual(limit + Math.floor(t / interval) + extra)
      }
    }
  })

  it('can get past the limit, by no more than ⌈T / I⌉: a lease taken T before a flood, spent beside the store’s whole burst', () => {
    const limit = 100 // per 10 s: I = 100 ms, ⌈T / I⌉ = 10, N × L = 20
    const windowMs = 10_000
    const { leases, time } = instances(2, 10, 1000)
    const [a, b] = leases as [Leases, Leases]
    // A grows its lease to 10 and spends it, then waits until the budget is whole again.
    for (let i = 0; i < 25; i++) expect(spent(a.spend('k', limit, windowMs)).allowed).toBe(true)
    time.advance(5000)
    // One request takes a lease of 10 from a whole budget; 9 units are held.
    expect(spent(a.spend('k', limit, windowMs)).allowed).toBe(true)
    expect(a.held('k')).toBe(9)
    // Just before it expires, the store has given those 10 back; a flood at one instant.
    time.advance(999)
    let admitted = 0
    while (spent(a.spend('k', limit, windowMs)).allowed) admitted++
    while (spent(b.spend('k', limit, windowMs)).allowed) admitted++
    // Without leases, at most the limit at one instant.
    expect(admitted).toBeGreaterThan(limit)
    expect(admitted).toBeLessThanOrEqual(limit + Math.min(2 * 10, Math.ceil(1000 / (windowMs / limit))))
  })

  it('cost at most L units when an instance is lost with its lease, given back by the store within L × I', () => {
    const limit = 1000
    const units = 50
    const { leases, time, store } = instances(2, units, 1000)
    const [lost, kept] = leases as [Leases, Leases]
    for (let i = 0; i < 64; i++) spent(lost.spend('k', limit, HOUR)) // 63 spent, a lease of 50 taken for the 64th
    expect(lost.held('k')).toBe(units - 1)
    // The instance dies with 49 units; the other one gets the rest of the budget, and no more.
    let admitted = 0
    while (spent(kept.spend('k', limit, HOUR)).allowed) admitted++
    expect(admitted).toBe(limit - 64 - (units - 1))
    // After L × I the store has given back as many units as the lost lease held.
    const before = store.consumeRate('k', limit, HOUR, 0).remaining
    time.advance((units * HOUR) / limit)
    expect(store.consumeRate('k', limit, HOUR, 0).remaining - before).toBeGreaterThanOrEqual(units - 1)
  })

  it('share a lease in flight among the requests that come meanwhile, and take the last units in a smaller one, on a store that answers later', async () => {
    const store = new MemoryStore()
    const steps: number[] = []
    const leases = new Leases({
      units: 30,
      ttlMs: 1000,
      take: (key, limit, windowMs, cost) => {
        steps.push(cost)
        return new Promise<RateResult>((resolve) => setImmediate(() => resolve(store.consumeRate(key, limit, windowMs, cost))))
      },
    })
    const results = await Promise.all(Array.from({ length: 300 }, () => leases.spend('k', 100, HOUR)))
    expect(results.filter((r) => r.allowed)).toHaveLength(100)
    expect(store.consumeRate('k', 100, HOUR, 0).remaining).toBe(0)
    // Leases are taken one at a time: 1, 2, 4, 8, 16, then 30s, the last units in a smaller one.
    expect(steps.slice(0, 6)).toEqual([1, 2, 4, 8, 16, 30])
    expect(steps.length).toBeLessThan(12)
  })

  it('pass a store’s failure to the request that took the lease and to those that waited for it, and take no second step', async () => {
    let calls = 0
    let fail: (error: Error) => void = () => {}
    const leases = new Leases({
      units: 10,
      ttlMs: 1000,
      take: () => {
        calls++
        return new Promise<RateResult>((_resolve, reject) => (fail = reject))
      },
    })
    const first = leases.spend('k', 100, HOUR)
    const second = leases.spend('k', 100, HOUR)
    fail(new Error('store down'))
    await expect(first).rejects.toThrow('store down')
    await expect(second).rejects.toThrow('store down')
    expect(calls).toBe(1)
  })
})

/** A gate on a memory store with the default plan counting locally, and what a request needs. */
async function leasedGate(options: GateOptions = {}) {
  const store = new MemoryStore()
  const gate = createGate({
    store,
    basic: { scrypt: { logN: 10 } },
    usage: false,
    throttle: { application: { limit: 1000, windowMs: HOUR }, local: { units: 50, plans: ['default'] } },
    ...options,
  })
  const app = await gate.applications.register({ name: 'Hot' })
  const ada = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'ada@example.org' })
  const key = await gate.apiKeys.create(ada.id, { name: 'nightly' })
  const token = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
  const ask = (headers: Record<string, string>) => gate.handle(coreRequest({ headers }))
  return { store, gate, app, ada, key, token, ask }
}

function throttleOf(outcome: GateOutcome) {
  if (outcome.type !== 'next') throw new Error(`expected the request through, got ${outcome.response.status} ${outcome.response.body}`)
  return { info: outcome.context.throttle, ratelimit: outcome.headers.ratelimit }
}

describe('throttle.local in the gate', () => {
  it('is off by default: every request is decided by the store', async () => {
    const gate = createGate({ usage: false })
    const app = await gate.applications.register({ name: 'A' })
    const outcome = await gate.handle(coreRequest({ headers: { 'x-app-token': app.appToken } }))
    expect(throttleOf(outcome).info).toMatchObject({ source: 'store' })
  })

  it('decides a leased application’s requests in the process, with RateLimit headers of the store’s count at the lease plus the units not spent yet', async () => {
    const { store, app, ask } = await leasedGate()
    const counted: number[] = []
    const consume = store.consumeRate.bind(store)
    store.consumeRate = (key, limit, windowMs, cost) => {
      counted.push(cost)
      return consume(key, limit, windowMs, cost)
    }
    const seen = []
    for (let i = 0; i < 200; i++) seen.push(throttleOf(await ask({ 'x-app-token': app.appToken })))
    expect(seen.every((s) => s.info?.source === 'lease')).toBe(true)
    // One instance: the count it reports is the store's, exactly.
    expect(seen.map((s) => s.info?.remaining)).toEqual(Array.from({ length: 200 }, (_, i) => 999 - i))
    expect(seen[199]?.ratelimit).toMatch(/^"app";r=800;t=\d+$/)
    expect(counted.length).toBeLessThan(12)
  })

  it('is turned on for one application by its app token, and for the plans it names', async () => {
    const store = new MemoryStore()
    const setup = createGate({ store, usage: false })
    const hot = await setup.applications.register({ name: 'Hot' })
    const partner = await setup.applications.register({ name: 'Partner' })
    const cold = await setup.applications.register({ name: 'Cold' })
    const gate = createGate({ store, usage: false, throttle: { plans: { partner: { limit: 5000, windowMs: HOUR } }, local: { units: 20, plans: ['partner'], applications: [hot.appToken] } } })
    await gate.applications.update(partner.appToken, { plan: 'partner' })
    const sourceOf = async (appToken: string) => throttleOf(await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))).info?.source
    expect(await sourceOf(hot.appToken)).toBe('lease')
    expect(await sourceOf(partner.appToken)).toBe('lease')
    expect(await sourceOf(cold.appToken)).toBe('store')
  })

  it('refuses a plan it cannot lease, a plan it does not know, and a lease shorter than the store timeout', () => {
    const plans = { daily: { limit: 10, period: 'day' as const }, partner: { limit: 100, windowMs: HOUR } }
    expect(() => createGate({ throttle: { plans, local: { units: 10, plans: ['daily'] } } })).toThrow(/not one rolling limit per application/)
    expect(() => createGate({ throttle: { plans, local: { units: 10, plans: ['gold'] } } })).toThrow(/not a plan of throttle.plans/)
    expect(() => createGate({ throttle: { local: { units: 10 } } })).toThrow(/names no plan and no application/)
    expect(() => createGate({ storeTimeoutMs: 2000, throttle: { local: { units: 10, plans: ['default'], ttlMs: 1000 } } })).toThrow(/at least storeTimeoutMs/)
    expect(() => createGate({ throttle: { local: { units: 0, plans: ['default'] } } })).toThrow(/units/)
  })

  it('still reads every credential per request: a revoked API key and a revoked token are refused on the very next request while the lease has units', async () => {
    const { gate, app, key, token, ask } = await leasedGate()
    const withKey = { 'x-app-token': app.appToken, authorization: basic(key.keyId, key.keySecret) }
    const withToken = { authorization: `Bearer ${token.accessToken}` }
    for (let i = 0; i < 10; i++) {
      expect(throttleOf(await ask(withKey)).info?.source).toBe('lease')
      expect(throttleOf(await ask(withToken)).info?.source).toBe('lease')
    }
    await gate.apiKeys.revoke(key.keyId)
    const refused = await ask(withKey)
    expect(refused.type === 'respond' && refused.response.status).toBe(401)
    await gate.tokens.revoke(token.accessToken)
    const gone = await ask(withToken)
    expect(gone.type === 'respond' && gone.response.status).toBe(401)
  })

  it('refuses a suspended application on the very next request, whatever its lease holds', async () => {
    const { gate, app, ask } = await leasedGate()
    for (let i = 0; i < 10; i++) throttleOf(await ask({ 'x-app-token': app.appToken }))
    await gate.applications.suspend(app.appToken, { reason: 'flooding' })
    const outcome = await ask({ 'x-app-token': app.appToken })
    expect(outcome.type === 'respond' && outcome.response.headers['x-error-code']).toBe('application_suspended')
  })

  it('answers a flood past the limit with 429s from the process, Retry-After until a lease fits', async () => {
    const { app, ask } = await leasedGate({ throttle: { application: { limit: 100, windowMs: HOUR }, local: { units: 10, plans: ['default'] } } })
    const outcomes = []
    for (let i = 0; i < 300; i++) outcomes.push(await ask({ 'x-app-token': app.appToken }))
    const admitted = outcomes.filter((o) => o.type === 'next').length
    expect(admitted).toBeLessThanOrEqual(100)
    expect(admitted).toBe(100)
    const last = outcomes.at(-1) as GateOutcome
    if (last.type !== 'respond') throw new Error('expected a 429')
    expect(last.response.status).toBe(429)
    expect(Number(last.response.headers['retry-after'])).toBeGreaterThan(0)
    expect(last.response.headers.ratelimit).toMatch(/r=0/)
  })
})
