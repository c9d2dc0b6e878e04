/**
 * A request whose one-trip lookup (`lookupRequest`: the rate step and the credential's
 * records in one Redis script) fails is counted once in Redis, for every credential that
 * takes that path: the throttle's verdict then comes from `throttle.onStoreError`, and no
 * second step is sent. On a redis-server this file starts on its own port (19450), which it
 * pauses with SIGSTOP.
 *
 * Two ways for the lookup to fail after Redis took its step:
 * - the script fails on a record after the step (a user's key holding a string): a data
 *   error, so the store is not marked down and separate calls would reach it at once;
 * - Redis is paused past `storeTimeoutMs` and then resumed: it runs the script late.
 *
 * Both ways a store can serve a request's lookup are run: RedisStore's own one-trip
 * `lookupRequest`, and the lookup the gate composes from a store's separate calls when it has
 * none (the same RedisStore with its `lookupRequest` left out, as a custom store would be).
 *
 * A request is counted by reading its rate key: the GCRA arrival time moves by one
 * emission interval per step (the window is long enough that it stays ahead of the clock).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createGate, type Gate, type GateOutcome, type GateRequest, type GateStore } from '../src/index.js'
import { RedisStore } from '../src/store/redis/store.js'
import { OwnRedisServer, deletePrefix, randomPrefix, redisBinariesAvailable } from './redis/servers.js'
import { coreRequest } from './support/requests.js'

const STORE_TIMEOUT_MS = 500
const LIMIT = 1000
/** A day per thousand requests: one step moves the arrival time 86.4 s ahead of the clock. */
const WINDOW_MS = 86_400_000
const INTERVAL_US = (WINDOW_MS * 1000) / LIMIT
const PASSWORD = 'correct horse battery'
const available = redisBinariesAvailable('a failed request lookup')

type Mode = 'memory' | 'fail-open' | 'fail-closed'
type Credential = 'API key' | 'password (verified earlier)' | 'OAuth token with its app token' | 'OAuth token alone'
const CREDENTIALS: Credential[] = ['API key', 'password (verified earlier)', 'OAuth token with its app token', 'OAuth token alone']

function status(outcome: GateOutcome): number {
  return outcome.type === 'next' ? 200 : outcome.response.status
}

type LookupPath = 'one trip' | 'composed'

/** The store with every method but `lookupRequest`: what a store without one looks like to the gate. */
function withoutLookup(store: RedisStore): GateStore {
  const methods: Record<string, unknown> = {}
  for (let proto: object | null = store; proto !== null && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || name === 'lookupRequest' || name in methods) continue
      const value = (store as unknown as Record<string, unknown>)[name]
      if (typeof value === 'function') methods[name] = (value as (...args: unknown[]) => unknown).bind(store)
    }
  }
  return methods as unknown as GateStore
}

describe.skipIf(!available).each<LookupPath>(['one trip', 'composed'])('a request whose lookup (%s) fails', (path) => {
  const redis = new OwnRedisServer(19450)
  let admin: Redis
  let prefix: string
  let store: RedisStore
  let gate: Gate
  let events: { storeError: number; storeRecovered: number; internalError: number }

  beforeAll(async () => {
    await redis.start()
    admin = new Redis(redis.url, { maxRetriesPerRequest: 0, retryStrategy: () => 50 })
    admin.on('error', () => {})
  })
  afterAll(async () => {
    redis.resume()
    admin?.disconnect()
    await redis.stop()
  })
  beforeEach(() => {
    prefix = randomPrefix('lookup-failure')
  })
  afterEach(async () => {
    redis.resume()
    await gate?.close()
    await store?.close()
    await deletePrefix(admin, prefix)
  })

  /** A gate on this Redis with an application, a user, her API key and an access token; `request` sends one credential. */
  async function start(mode: Mode) {
    // The client's own timeout is longer than the gate's, so the gate's bound decides.
    store = new RedisStore({ url: redis.url, prefix, commandTimeoutMs: 10 * STORE_TIMEOUT_MS })
    gate = createGate({
      store: path === 'one trip' ? store : withoutLookup(store),
      storeTimeoutMs: STORE_TIMEOUT_MS,
      logger: false,
      basic: { scrypt: { logN: 10 } },
      throttle: { application: { limit: LIMIT, windowMs: WINDOW_MS }, anonymous: { limit: LIMIT, windowMs: WINDOW_MS, scope: 'shared' }, oauthTokenBudget: 'application', onStoreError: mode },
    })
    events = { storeError: 0, storeRecovered: 0, internalError: 0 }
    gate.on('storeError', () => events.storeError++)
    gate.on('storeRecovered', () => events.storeRecovered++)
    gate.on('internalError', () => events.internalError++)
    const { appToken } = await gate.applications.register({ name: 'A' })
    const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada', email: 'ada@example.org' })
    const key = await gate.apiKeys.create(ada.id, { name: 'etl' })
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken })
    const basic = (user: string, secret: string) => `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`
    const headers: Record<Credential, Record<string, string>> = {
      'API key': { 'x-app-token': appToken, authorization: basic(key.keyId, key.keySecret) },
      'password (verified earlier)': { 'x-app-token': appToken, authorization: basic('ada', PASSWORD) },
      'OAuth token with its app token': { 'x-app-token': appToken, authorization: `OAuth ${accessToken}` },
      'OAuth token alone': { authorization: `OAuth ${accessToken}` },
    }
    const request = (credential: Credential): Promise<GateOutcome> => Promise.resolve(gate.handle(coreRequest({ headers: headers[credential] }) as GateRequest))
    const rateKey = `${prefix}rate:{app:${appToken}}`
    const userKey = `${prefix}{users}:user:${ada.id}`
    return { request, rateKey, userKey }
  }

  /** The rate key's arrival time (µs): one step moves it by one interval. */
  async function arrival(rateKey: string): Promise<number> {
    return Number(await admin.get(rateKey))
  }
  async function stepsSince(rateKey: string, before: number): Promise<number> {
    return ((await arrival(rateKey)) - before) / INTERVAL_US
  }

  describe.each(['memory', 'fail-open', 'fail-closed'] as const)('onStoreError %s', (mode) => {
    it.each(CREDENTIALS)('%s: the script fails on the user after the step, and the request is counted once', async (credential) => {
      const { request, rateKey, userKey } = await start(mode)
      // Warm: the password is verified (and cached), the token's application is known; a
      // request that passes moves the arrival time by one interval.
      expect(status(await request(credential))).toBe(200)
      const warm = await arrival(rateKey)
      expect(status(await request(credential))).toBe(200)
      expect(await stepsSince(rateKey, warm)).toBe(1)
      const before = await arrival(rateKey)
      // The user's hash becomes a string: the lookup's HGETALL on it fails after the step
      // (WRONGTYPE inside the script: a data error, so the store is not marked down and
      // separate calls made after it would reach Redis at once).
      await admin.del(userKey)
      await admin.set(userKey, 'not a hash')
      // The user cannot be read: the separate read of it fails too (a plain command's
      // WRONGTYPE, which the guard takes for a failing store), so the request gets a 503.
      expect(status(await request(credential))).toBe(503)
      expect(await stepsSince(rateKey, before)).toBe(1)
    })
  })

  it.each(['memory', 'fail-open', 'fail-closed'] as const)(
    'onStoreError %s: Redis paused past the timeout, then resumed: each request counted once, one storeError, one storeRecovered',
    async (mode) => {
      const { request, rateKey } = await start(mode)
      // Warm: the password verified and cached, the token's application known.
      for (const credential of CREDENTIALS) expect(status(await request(credential))).toBe(200)
      const before = await arrival(rateKey)
      redis.pause()
      // Each lookup waits out the timeout, and the records cannot be read either: 503.
      const outcomes = await Promise.all(CREDENTIALS.map((credential) => request(credential)))
      expect(outcomes.map(status)).toEqual(CREDENTIALS.map(() => 503))
      redis.resume()
      // Redis runs what it received while paused: each request's one step. (The composed
      // lookup of an access token that decides its own budget reads the token before it
      // steps: those two requests sent no step, and none is sent for them afterwards.)
      const sent = path === 'one trip' ? CREDENTIALS.length : CREDENTIALS.filter((credential) => !credential.startsWith('OAuth')).length
      await waitFor(async () => (await stepsSince(rateKey, before)) >= sent)
      await sleep(200)
      expect(await stepsSince(rateKey, before)).toBe(sent)
      // Once the store answers again, a request is counted in Redis again, once. (Until the
      // gate tries the store again, a request may pass without it: fail-open, or memory.)
      const counted = await untilCounted(() => request('API key'), () => stepsSince(rateKey, before), sent)
      expect(counted).toEqual({ status: 200, steps: sent + 1 })
      expect(events.storeError).toBe(1)
      expect(events.storeRecovered).toBe(1)
    },
  )
})

/** Sends requests until the count moves past `steps`: the last request's status, and the count then. */
async function untilCounted(send: () => Promise<GateOutcome>, count: () => Promise<number>, steps: number, timeoutMs = 5000): Promise<{ status: number; steps: number }> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const answer = status(await send())
    const now = await count()
    if (now > steps) return { status: answer, steps: now }
    if (Date.now() > deadline) throw new Error('no request was counted in Redis in time')
    await sleep(20)
  }
}

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await condition()) return
    await sleep(20)
  }
  throw new Error('condition not met in time')
}
