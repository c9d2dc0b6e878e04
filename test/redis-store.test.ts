import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { nodeGate } from '../adapters/node.js'
import { createGate, limitRateKey, type ApiKeyRecord } from '../src/index.js'
import { describeStore } from '../src/testing/index.js'
import { RedisStore, redisClientDefaults } from '../src/store/redis/store.js'
import { RECORD_COPIES, RecordCopies } from '../src/store/redis/record-copies.js'
import { listen } from './adapters/servers.js'
import { pagesOf, userWithManyKeys } from './redis/key-pages.js'
import { monitorCommands } from './redis/monitor.js'
import { countWrites } from './redis/socket-writes.js'
import { describeSameAsMemoryStore } from './redis/same-as-memory.js'
import { coreRequest } from './support/requests.js'
import { deletePrefix, randomPrefix, REDIS_URL, sharedRedisAvailable } from './redis/servers.js'

const available = await sharedRedisAvailable('RedisStore on the shared Redis')
const prefix = randomPrefix('store')

describe.skipIf(!available)('RedisStore', () => {
  let admin: Redis
  beforeAll(() => {
    admin = new Redis(REDIS_URL)
  })
  afterAll(async () => {
    await deletePrefix(admin, prefix)
    await admin.quit()
  })

  describeStore('RedisStore', () => new RedisStore({ url: REDIS_URL, prefix }), { describe, it, after: afterAll, cleanup: (store) => store.close() })

  it('keeps records as hashes, and lets Redis expire tokens and codes itself', async () => {
    const store = new RedisStore({ url: REDIS_URL, prefix })
    try {
      const now = Date.now()
      await store.insertAccessToken({ tokenHash: 'ttl-token', userId: 'u1', appToken: 'app1', codeHash: null, createdAt: now, expiresAt: now + 60_000, revokedAt: null })
      expect(await admin.type(`${prefix}token:{ttl-token}`)).toBe('hash')
      const ttl = await admin.pttl(`${prefix}token:{ttl-token}`)
      expect(ttl).toBeGreaterThan(50_000)
      expect(ttl).toBeLessThanOrEqual(60_000)
      await store.insertSession({ sessionHash: 'ttl-session', userId: 'u1', passwordStamp: 'x', createdAt: now, expiresAt: now + 30_000 })
      expect(await admin.pttl(`${prefix}{sessions}:s:ttl-session`)).toBeGreaterThan(20_000)
    } finally {
      await store.close()
    }
  })

  it('gives users saved before skeletons existed theirs on first need: a look-alike of one is refused', async () => {
    const own = randomPrefix('legacy')
    const store = new RedisStore({ url: REDIS_URL, prefix: own })
    try {
      // As an earlier release saved them: the hash and the username index, no skeleton.
      for (const [id, username] of [['old1-0001', 'ada'], ['old1-0002', 'ada\u200b']] as const) {
        await admin.hset(`${own}{users}:user:${id}`, { id, username, screenName: 'Ada', displayName: 'Ada', email: 'a@example.org', rights: '[]', createdAt: '1', updatedAt: '1' })
        await admin.hset(`${own}{users}:names`, username, id)
      }
      const gate = createGate({ store })
      await expect(gate.users.create({ username: '\u0430da', displayName: 'Mallory', email: 'm@example.org' })).rejects.toMatchObject({ code: 'conflict' })
      expect(await admin.hget(`${own}{users}:user:old1-0002`, 'usernameSkeleton')).toBe('ada')
      // A user who looks like nobody is created, and deleting frees its skeleton.
      const bob = await gate.users.create({ username: 'bob', displayName: 'Bob', email: 'b@example.org' })
      expect((await store.getUserBySkeleton('bob'))?.id).toBe(bob.id)
      await gate.users.delete(bob.id)
      expect(await store.getUserBySkeleton('bob')).toBeUndefined()
    } finally {
      await store.close()
      await deletePrefix(admin, own)
    }
  })

  it('serves an application saved before suspensions as active, suspends it, and leaves no trace of the suspension once resumed', async () => {
    const own = randomPrefix('legacy-app')
    const store = new RedisStore({ url: REDIS_URL, prefix: own })
    const gate = createGate({ store })
    try {
      // As an earlier release saved it: no suspension fields in the hash.
      const fields = { appToken: 'legacyApp123', name: 'Legacy', secretHash: 'a'.repeat(64), createdAt: '1', updatedAt: '1' }
      await admin.hset(`${own}{apps}:app:legacyApp123`, fields)
      const ask = () => gate.handle(coreRequest({ headers: { 'x-app-token': 'legacyApp123' } }))
      expect(await ask()).toMatchObject({ type: 'next' })
      expect(await gate.applications.find('legacyApp123')).toMatchObject({ suspended: null })
      await gate.applications.suspend('legacyApp123', { reason: 'Abuse' })
      expect(await admin.hget(`${own}{apps}:app:legacyApp123`, 'suspensionReason')).toBe('Abuse')
      expect(await ask()).toMatchObject({ type: 'respond', response: { status: 403 } })
      await gate.applications.resume('legacyApp123')
      expect(Object.keys(await admin.hgetall(`${own}{apps}:app:legacyApp123`)).sort()).toEqual(Object.keys(fields).sort())
      expect(await ask()).toMatchObject({ type: 'next' })
    } finally {
      await gate.close()
      await deletePrefix(admin, own)
    }
  })

  it('reads an application saved before plans as on the default plan, and puts it on one and back', async () => {
    const own = randomPrefix('legacy-plan')
    const store = new RedisStore({ url: REDIS_URL, prefix: own })
    try {
      // As an earlier release saved it: no plan field in the hash.
      const fields = { appToken: 'legacyPlan123', name: 'Legacy', secretHash: 'a'.repeat(64), limit: '40', createdAt: '1', updatedAt: '1' }
      await admin.hset(`${own}{apps}:app:legacyPlan123`, fields)
      expect(await store.getApplication('legacyPlan123')).toMatchObject({ limit: 40, plan: null })
      expect(await store.updateApplication('legacyPlan123', { plan: 'partner' })).toMatchObject({ limit: 40, plan: 'partner' })
      expect(await admin.hget(`${own}{apps}:app:legacyPlan123`, 'plan')).toBe('partner')
      await store.updateApplication('legacyPlan123', { plan: null })
      expect(Object.keys(await admin.hgetall(`${own}{apps}:app:legacyPlan123`)).sort()).toEqual(Object.keys(fields).sort())
    } finally {
      await store.close()
      await deletePrefix(admin, own)
    }
  })

  it('sends exactly one command per rate step', async () => {
    const store = new RedisStore({ url: REDIS_URL, prefix })
    const monitor = await monitorCommands(admin)
    try {
      await store.consumeRate('monitored', 10, 60_000, 1)
      const ran = await monitor.during(async () => {
        for (let i = 0; i < 5; i++) await store.consumeRate('monitored', 10, 60_000, 1)
      })
      const ours = ran.filter(({ args }) => args.some((a) => a.startsWith(prefix) && a.includes('rate:{monitored}')))
      // Only top-level commands: a script's inner GET/SET show as "lua" entries, filtered out by name.
      expect(ours.filter(({ args }) => /^evalsha$/i.test(args[0] as string))).toHaveLength(5)
      expect(ours.filter(({ args }) => /^eval$/i.test(args[0] as string))).toHaveLength(0)
    } finally {
      monitor.stop()
      await store.close()
    }
  })

  /** Counts the commands a store's client sends (what MONITOR shows; a script's inner calls are not sent). */
  function countCommands(store: RedisStore): { readonly sent: number } {
    const counter = { sent: 0 }
    const client = store.client as Redis
    const send = client.sendCommand.bind(client)
    client.sendCommand = (command, stream) => {
      counter.sent++
      return send(command, stream)
    }
    return counter
  }

  it('sends Redis one command per request, whatever the credential, once the application and the password are known', async () => {
    const store = new RedisStore({ url: REDIS_URL, prefix })
    const counter = countCommands(store)
    const gate = createGate({ store, trustProxy: 'loopback', usage: false, throttle: { application: { limit: 1000, windowMs: 60_000 }, anonymous: { limit: 1000, windowMs: 60_000 } } })
    const http = await listen(nodeGate(gate, (req, res) => res.end(req.gate.auth)))
    try {
      const { appToken } = await gate.applications.register({ name: 'commands' })
      const password = 'correct horse battery staple'
      const user = await gate.users.create({ username: `commands-${Date.now()}`, password, displayName: 'A', email: 'a@example.org' })
      const { accessToken } = await gate.tokens.issue({ userId: user.id, appToken })
      const { keyId, keySecret } = await gate.apiKeys.create(user.id, { name: 'commands' })
      const basic = (name: string, secret: string) => `Basic ${Buffer.from(`${name}:${secret}`).toString('base64')}`
      const https = { 'x-forwarded-proto': 'https' }
      const perRequest = async (headers: Record<string, string>, auth: string) => {
        const first = await fetch(`${http.url}/x`, { headers })
        expect([first.status, await first.text()]).toEqual([200, auth])
        // The first use of a token or key also notes its use, in the background (at most daily).
        await sleep(100)
        const before = counter.sent
        for (let i = 0; i < 10; i++) {
          const response = await fetch(`${http.url}/x`, { headers })
          expect([response.status, await response.text()]).toEqual([200, auth])
        }
        return (counter.sent - before) / 10
      }
      expect(await perRequest({}, 'none')).toBe(1)
      expect(await perRequest({ 'x-app-token': appToken }, 'none')).toBe(1)
      // The token, its user and the rate step: one script.
      expect(await perRequest({ ...https, 'x-app-token': appToken, authorization: `OAuth ${accessToken}` }, 'oauth')).toBe(1)
      // Without an app token the token's application is the budget: known from the token's first use.
      expect(await perRequest({ ...https, authorization: `Bearer ${accessToken}` }, 'oauth')).toBe(1)
      expect(await perRequest({ ...https, 'x-app-token': appToken, authorization: basic(keyId, keySecret) }, 'api-key')).toBe(1)
      expect(await perRequest({ ...https, 'x-app-token': appToken, authorization: basic(user.username, password) }, 'password')).toBe(1)
    } finally {
      await http.close()
      await gate.close()
    }
  })

  it('answers a request lookup as the separate calls would: a token that is not live takes the other step, a refused step reads nothing', async () => {
    const store = new RedisStore({ url: REDIS_URL, prefix })
    try {
      const lookup = store.lookupRequest
      if (lookup === undefined) throw new Error('a single Redis server has lookupRequest')
      const now = Date.now()
      const userId = `lookup-${now}`
      await store.insertUser({ id: userId, username: userId, usernameSkeleton: null, screenName: 'L', displayName: 'L', email: 'l@example.org', rights: [], passwordHash: null, createdAt: now, updatedAt: now })
      const token = (tokenHash: string, extra: object = {}) => ({ tokenHash, userId, appToken: 'appA', codeHash: null, createdAt: now, expiresAt: now + 60_000, revokedAt: null, ...extra })
      await store.insertAccessToken(token(`live-${now}`))
      await store.insertAccessToken(token(`revoked-${now}`, { revokedAt: now }))
      await store.insertAccessToken(token(`expired-${now}`, { expiresAt: now + 1 }))
      const user = await store.getUser(userId)
      const rate = (key: string, limit = 10) => ({ key: `${key}-${now}`, limit, windowMs: 60_000, cost: 1 })
      const byToken = (tokenHash: string, appToken: string) =>
        lookup({ credential: { kind: 'accessToken', tokenHash, now: now + 2 }, budget: 'token', rate: rate('a'), otherwise: rate('b'), appToken })

      const live = await byToken(`live-${now}`, 'appA')
      expect(live).toMatchObject({ stepped: 'rate', result: { allowed: true, remaining: 9 }, accessToken: await store.getAccessToken(`live-${now}`), user })
      for (const hash of [`revoked-${now}`, `expired-${now}`, `unknown-${now}`]) {
        const other = await byToken(hash, 'appA')
        expect(other).toMatchObject({ stepped: 'otherwise', result: { allowed: true } })
        expect(other.accessToken).toEqual(await store.getAccessToken(hash))
        expect('user' in other).toBe(false)
      }
      // A live token of another application: no step at all (the gate refuses the request).
      expect(await byToken(`live-${now}`, 'appB')).toMatchObject({ stepped: null, result: null })
      expect(await store.consumeRate(`a-${now}`, 10, 60_000, 0)).toMatchObject({ remaining: 9 })
      expect(await store.consumeRate(`b-${now}`, 10, 60_000, 0)).toMatchObject({ remaining: 7 })

      // A fixed budget: the step first, the records only when it is allowed.
      const key = { keyId: `k${String(now).padStart(24, '0')}`.slice(0, 25), userId, name: 'k', secretHash: 'h', createdAt: now, lastUsedAt: null, revokedAt: null }
      await store.insertApiKey(key)
      const byKey = (keyId: string, limit: number, budget = 'c') => lookup({ credential: { kind: 'apiKey', keyId }, budget: 'fixed', rate: rate(budget, limit) })
      expect(await byKey(key.keyId, 1)).toMatchObject({ stepped: 'rate', result: { allowed: true }, apiKey: await store.getApiKey(key.keyId), user })
      const refused = await byKey(key.keyId, 1)
      expect(refused).toMatchObject({ stepped: 'rate', result: { allowed: false } })
      expect(['apiKey' in refused, 'user' in refused]).toEqual([false, false])
      const unknown = await byKey('k'.padEnd(25, 'x'), 10, 'e')
      expect(['apiKey' in unknown, unknown.apiKey, 'user' in unknown]).toEqual([true, undefined, false])
      await store.revokeApiKey(key.keyId, now, now + 60_000)
      const revoked = await byKey(key.keyId, 10, 'e')
      expect(revoked.apiKey).toEqual(await store.getApiKey(key.keyId))
      expect('user' in revoked).toBe(false)
      expect(await lookup({ credential: { kind: 'user', userId }, budget: 'fixed', rate: rate('d') })).toMatchObject({ stepped: 'rate', user })
      const gone = await lookup({ credential: { kind: 'user', userId: 'nobody' }, budget: 'fixed', rate: rate('d') })
      expect(['user' in gone, gone.user]).toEqual([true, undefined])
    } finally {
      await store.close()
    }
  })

  it('costs Redis one read per made-up app token, and serves a token registered later on another instance at once', async () => {
    const own = randomPrefix('unknown')
    const storeA = new RedisStore({ url: REDIS_URL, prefix: own })
    const storeB = new RedisStore({ url: REDIS_URL, prefix: own })
    const counter = countCommands(storeB)
    // Usage off: its flushes would be commands too.
    const a = createGate({ store: storeA, usage: false })
    const b = createGate({ store: storeB, usage: false })
    const http = await listen(nodeGate(b, (_req, res) => res.end('ok')))
    try {
      const status = async (token: string) => (await fetch(`${http.url}/x`, { headers: { 'x-app-token': token } })).status
      // The connection's own first commands (its ready check) are not the requests'.
      await status('warmUpAbcdefghijklmnop')
      const before = counter.sent
      for (let i = 0; i < 20; i++) expect(await status(`madeUp${i}abcdefghijklmnop`)).toBe(403)
      expect((counter.sent - before) / 20).toBe(1)
      // The same made-up token again: one read again, never more.
      const again = counter.sent
      expect(await status('madeUp0abcdefghijklmnop')).toBe(403)
      expect(counter.sent - again).toBe(1)
      // Whether or not B has heard the change message yet: its request reads after register returned.
      await a.applications.register({ name: 'later', appToken: 'madeUp0abcdefghijklmnop' })
      expect(await status('madeUp0abcdefghijklmnop')).toBe(200)
    } finally {
      await http.close()
      await a.close()
      await b.close()
      await deletePrefix(admin, own)
    }
  })

  it('serves a token registered on another instance at once, though this instance never hears the change message', async () => {
    const own = randomPrefix('unheard')
    const storeA = new RedisStore({ url: REDIS_URL, prefix: own })
    const storeB = new RedisStore({ url: REDIS_URL, prefix: own })
    // B's subscriber never connects: every change message is lost to it.
    storeB.attach = () => {}
    const a = createGate({ store: storeA, usage: false })
    const b = createGate({ store: storeB, usage: false, applicationCacheMs: 60_000 })
    const http = await listen(nodeGate(b, (_req, res) => res.end('ok')))
    try {
      const status = async (token: string) => (await fetch(`${http.url}/x`, { headers: { 'x-app-token': token } })).status
      expect(await status('unheardAbcdefghijklmnop')).toBe(403)
      expect(await status('unheardAbcdefghijklmnop')).toBe(403)
      await a.applications.register({ name: 'later', appToken: 'unheardAbcdefghijklmnop' })
      expect(await status('unheardAbcdefghijklmnop')).toBe(200)
    } finally {
      await http.close()
      await a.close()
      await b.close()
      await deletePrefix(admin, own)
    }
  })

  it('refuses a token, key or user revoked through another instance on the very next request, in its one round trip', async () => {
    const other = createGate({ store: new RedisStore({ url: REDIS_URL, prefix }) })
    const gate = createGate({ store: new RedisStore({ url: REDIS_URL, prefix }), trustProxy: 'loopback' })
    const http = await listen(nodeGate(gate, (req, res) => res.end(req.gate.auth)))
    try {
      const { appToken } = await other.applications.register({ name: 'revoked' })
      const password = 'correct horse battery staple'
      const user = await other.users.create({ username: `revoked-${Date.now()}`, password, displayName: 'A', email: 'a@example.org' })
      const { accessToken } = await other.tokens.issue({ userId: user.id, appToken })
      const { keyId, keySecret } = await other.apiKeys.create(user.id, { name: 'revoked' })
      const https = { 'x-forwarded-proto': 'https' }
      const token = { ...https, authorization: `Bearer ${accessToken}` }
      const key = { ...https, 'x-app-token': appToken, authorization: `Basic ${Buffer.from(`${keyId}:${keySecret}`).toString('base64')}` }
      const pass = { ...https, 'x-app-token': appToken, authorization: `Basic ${Buffer.from(`${user.username}:${password}`).toString('base64')}` }
      const status = async (headers: Record<string, string>) => (await fetch(`${http.url}/x`, { headers })).status
      for (let i = 0; i < 3; i++) expect([await status(token), await status(key), await status(pass)]).toEqual([200, 200, 200])
      await other.tokens.revoke(accessToken)
      await other.apiKeys.revoke(keyId)
      expect([await status(token), await status(key), await status(pass)]).toEqual([401, 401, 200])
      await other.users.delete(user.id)
      expect(await status(pass)).toBe(401)
    } finally {
      await http.close()
      await gate.close()
      await other.close()
    }
  })

  it('answers a client over its limit without asking Redis until it may retry', async () => {
    const store = new RedisStore({ url: REDIS_URL, prefix })
    const counter = countCommands(store)
    const gate = createGate({ store, throttle: { anonymous: { limit: 2, windowMs: 60_000, scope: 'shared' } } })
    const http = await listen(nodeGate(gate, (_req, res) => res.end('ok')))
    try {
      const statuses: number[] = []
      const get = async () => statuses.push((await fetch(`${http.url}/x`)).status)
      for (let i = 0; i < 3; i++) await get()
      const before = counter.sent
      for (let i = 0; i < 20; i++) await get()
      expect(statuses).toEqual([200, 200, ...Array.from({ length: 21 }, () => 429)])
      expect(counter.sent - before).toBe(0)
    } finally {
      await http.close()
      await gate.close()
    }
  })

  it('tells every attached gate on every instance when an application changes', async () => {
    const own = randomPrefix('pubsub')
    const a = new RedisStore({ url: REDIS_URL, prefix: own })
    const b = new RedisStore({ url: REDIS_URL, prefix: own })
    const heardByA: string[] = []
    const heardByB: string[] = []
    const heardByB2: string[] = []
    a.attach({ rateKeyEvicted: () => {}, applicationChanged: (t: string) => heardByA.push(t) })
    b.attach({ rateKeyEvicted: () => {}, applicationChanged: (t: string) => heardByB.push(t) })
    b.attach({ rateKeyEvicted: () => {}, applicationChanged: (t: string) => heardByB2.push(t) })
    try {
      // Both stores' subscribers listen before anything changes.
      while (((await admin.pubsub('NUMSUB', `${own}application-changed`)) as [string, number])[1] < 2) await sleep(20)
      const record = { appToken: `pubsub${Date.now()}`, name: 'x', secretHash: 'a'.repeat(64), callbackPrefix: null, limit: null, ownerId: null, previousSecretHash: null, previousSecretExpiresAt: null, suspendedAt: null, suspensionReason: null, plan: null, createdAt: 1, updatedAt: 1 }
      await a.insertApplication(record)
      await a.updateApplication(record.appToken, { limit: 5 })
      await a.deleteApplication(record.appToken)
      const deadline = Date.now() + 2000
      while (heardByB.length < 3 && Date.now() < deadline) await sleep(10)
      expect(heardByB).toEqual([record.appToken, record.appToken, record.appToken])
      expect(heardByB2).toEqual(heardByB)
      expect(heardByA.length).toBeGreaterThanOrEqual(3)
    } finally {
      await Promise.all([a.close(), b.close()])
    }
  })

  it('quits a client it made, and never closes a client it was given', async () => {
    const own = new RedisStore({ url: REDIS_URL, prefix })
    await own.consumeRate('close', 10, 1000, 1)
    await own.close()
    await expect(own.client.ping()).rejects.toThrow()

    const client = new Redis(REDIS_URL)
    const given = new RedisStore({ client, prefix })
    const gate = createGate({ store: given })
    await given.consumeRate('close', 10, 1000, 1)
    await gate.close()
    expect(await client.ping()).toBe('PONG')
    await client.quit()
  })

  it('sends the rate steps of one turn of the event loop in one write, on a client of yours without auto-pipelining too', async () => {
    for (const enableAutoPipelining of [true, false]) {
      const client = new Redis(REDIS_URL, { ...redisClientDefaults(), enableAutoPipelining })
      const store = new RedisStore({ client, prefix })
      const key = `one-write-${String(enableAutoPipelining)}`
      try {
        await store.consumeRate(key, 1000, 60_000, 1)
        const writes = countWrites(client)
        // 15: from the 16th on, a turn's first scripts leave early (the next test).
        const steps = await Promise.all(Array.from({ length: 15 }, () => store.consumeRate(key, 1000, 60_000, 1)))
        expect(steps.map((s) => s.allowed)).toEqual(Array(15).fill(true))
        expect(writes.count).toBe(1)
      } finally {
        await client.quit()
      }
    }
  })

  it('keeps the records its lookups read, yet never answers with one that changed since, on this instance or another', async () => {
    const own = randomPrefix('copies')
    const a = new RedisStore({ url: REDIS_URL, prefix: own })
    const b = new RedisStore({ url: REDIS_URL, prefix: own })
    try {
      const now = Date.now()
      const userId = `copied-${now}`
      await a.insertUser({ id: userId, username: userId, usernameSkeleton: null, screenName: 'C', displayName: 'Before', email: 'c@example.org', rights: ['read'], passwordHash: 'h1', createdAt: now, updatedAt: now })
      const token = { tokenHash: `copied-${now}`, userId, appToken: 'appA', codeHash: 'code', createdAt: now, expiresAt: now + 60_000, revokedAt: null }
      await a.insertAccessToken(token)
      const keyId = `c${String(now).padStart(24, '0')}`.slice(0, 25)
      await a.insertApiKey({ keyId, userId, name: 'k', secretHash: 's1', createdAt: now, lastUsedAt: null, revokedAt: null })
      let step = 0
      const rate = () => ({ key: `copies-${now}-${step++}`, limit: 10, windowMs: 60_000, cost: 1 })
      const byToken = (store: RedisStore) => store.lookupRequest!({ credential: { kind: 'accessToken', tokenHash: token.tokenHash, now: Date.now() }, budget: 'fixed', rate: rate() })
      const byKey = (store: RedisStore) => store.lookupRequest!({ credential: { kind: 'apiKey', keyId }, budget: 'fixed', rate: rate() })
      const byUser = (store: RedisStore) => store.lookupRequest!({ credential: { kind: 'user', userId }, budget: 'fixed', rate: rate() })
      /** Every lookup of both instances answers what the getters answer now. */
      const same = async () => {
        const [user, key, found] = [await b.getUser(userId), await b.getApiKey(keyId), await b.getAccessToken(token.tokenHash)]
        for (const store of [a, b]) {
          const [t, k, u] = [await byToken(store), await byKey(store), await byUser(store)]
          expect(t.accessToken).toEqual(found)
          expect(t.user).toEqual(found !== undefined && found.revokedAt === null ? user : undefined)
          expect(k.apiKey).toEqual(key)
          expect(k.user).toEqual(key !== undefined && key.revokedAt === null ? user : undefined)
          expect(u.user).toEqual(user)
          expect('user' in t).toBe(found !== undefined && found.revokedAt === null)
        }
      }
      await same()
      // The copies are used: the same objects again, the record not sent.
      const [first, second] = [await byToken(a), await byToken(a)]
      expect(second.user).toBe(first.user)
      expect(second.accessToken).toBe(first.accessToken)

      await b.updateUser(userId, { displayName: 'After', updatedAt: now + 1 })
      await same()
      expect((await byToken(a)).user).toMatchObject({ displayName: 'After' })
      await a.updateUser(userId, { rights: ['read', 'write'] })
      await same()
      await b.updateUser(userId, { passwordHash: 'h2' })
      expect((await byUser(a)).user).toMatchObject({ passwordHash: 'h2' })
      await b.updateApiKey(keyId, { secretHash: 's2' })
      expect((await byKey(a)).apiKey).toMatchObject({ secretHash: 's2' })
      await same()
      // A change by a writer that knows nothing of versions (an older release): its updatedAt, or the key's secret, tells.
      await new Redis(REDIS_URL).pipeline().hset(`${own}{users}:user:${userId}`, 'displayName', 'Older', 'updatedAt', String(now + 5)).hset(`${own}{u:${userId}}:key:${keyId}`, 'secretHash', 's3').quit().exec()
      expect((await byToken(a)).user).toMatchObject({ displayName: 'Older' })
      expect((await byKey(a)).apiKey).toMatchObject({ secretHash: 's3' })
      await same()

      await b.revokeAccessToken(token.tokenHash, now + 2)
      expect(await byToken(a)).toMatchObject({ accessToken: { revokedAt: now + 2 } })
      await same()
      await b.revokeApiKey(keyId, now + 3, now + 60_000)
      expect((await byKey(a)).apiKey).toMatchObject({ revokedAt: now + 3 })
      await same()
      await b.deleteUser(userId)
      expect((await byUser(a)).user).toBeUndefined()
      await same()
      // Made again under the same id: never the copy of the one deleted.
      await b.insertUser({ id: userId, username: userId, usernameSkeleton: null, screenName: 'C', displayName: 'Again', email: 'c@example.org', rights: [], passwordHash: null, createdAt: now, updatedAt: now })
      expect((await byUser(a)).user).toMatchObject({ displayName: 'Again' })
      await same()
    } finally {
      await a.close()
      await b.close()
      await deletePrefix(admin, own)
    }
  })

  it('reads a user saved before versions whole on every lookup, and keeps no copy of it until it is written again', async () => {
    const own = randomPrefix('unversioned')
    const store = new RedisStore({ url: REDIS_URL, prefix: own })
    try {
      const id = `old-${Date.now()}`
      const key = `${own}{users}:user:${id}`
      await admin.hset(key, { id, username: id, screenName: 'O', displayName: 'Old', email: 'o@example.org', rights: '[]', createdAt: '1', updatedAt: '1' })
      const byUser = () => store.lookupRequest!({ credential: { kind: 'user', userId: id }, budget: 'fixed', rate: { key: `${own}-r`, limit: 1e6, windowMs: 60_000, cost: 1 } })
      expect((await byUser()).user).toMatchObject({ displayName: 'Old' })
      // Changed in place, its updatedAt too: the same as before would be read in a copy.
      await admin.hset(key, 'displayName', 'Changed')
      expect((await byUser()).user).toMatchObject({ displayName: 'Changed' })
      await store.updateUser(id, { displayName: 'Written' })
      expect(await admin.hexists(key, 'v')).toBe(1)
      const [x, y] = [await byUser(), await byUser()]
      expect(y.user).toBe(x.user)
      expect(y.user).toEqual(await store.getUser(id))
    } finally {
      await store.close()
      await deletePrefix(admin, own)
    }
  })

  it('keeps at most RECORD_COPIES copies of each kind, and none of a credential that does not exist', async () => {
    const copies = new RecordCopies()
    const now = Date.now()
    for (let i = 0; i < RECORD_COPIES + 50; i++) {
      const hash = `h${i}`
      copies.token(hash, '+', undefined, '-', ['tokenHash', hash, 'userId', 'u', 'appToken', 'a', 'createdAt', String(now), 'expiresAt', String(now + 1)])
      copies.user(`u${i}`, '+', undefined, ['id', `u${i}`, 'username', 'x', 'updatedAt', '1', 'v', 'v1'])
      copies.apiKey(`k${i}`, '+', undefined, ['keyId', `k${i}`, 'userId', 'u', 'secretHash', 's', 'v', 'v1'])
    }
    expect(copies.sizes).toEqual({ tokens: RECORD_COPIES, keys: RECORD_COPIES, users: RECORD_COPIES })
    const empty = new RecordCopies()
    for (let i = 0; i < 100; i++) {
      empty.token(`made-up-${i}`, '-', undefined, '-', undefined)
      empty.apiKey(`made-up-${i}`, '-', undefined, undefined)
      empty.user(`made-up-${i}`, '-', undefined, undefined)
    }
    expect(empty.sizes).toEqual({ tokens: 0, keys: 0, users: 0 })
  })

  it('returns a request lookup\'s records exactly as stored, whatever characters they hold (the script answers in one JSON string)', async () => {
    const store = new RedisStore({ url: REDIS_URL, prefix })
    try {
      const now = Date.now()
      const userId = `odd-${now}`
      const odd = 'quote " backslash \\ slash / nul \u0000 newline \n tab \t bell \u0007 é 漢 🦄 \u2028 end'
      await store.insertUser({ id: userId, username: userId, usernameSkeleton: null, screenName: odd, displayName: odd, email: 'odd@example.org', rights: ['read', odd], passwordHash: null, createdAt: now, updatedAt: now })
      const token = { tokenHash: `odd-${now}`, userId, appToken: 'appA', codeHash: null, createdAt: now, expiresAt: now + 60_000, revokedAt: null }
      await store.insertAccessToken(token)
      const found = await store.lookupRequest!({ credential: { kind: 'accessToken', tokenHash: token.tokenHash, now }, budget: 'token', rate: { key: `odd-${now}`, limit: 10, windowMs: 60_000, cost: 1 }, otherwise: null })
      expect(found.user).toEqual(await store.getUser(userId))
      expect(found.user).toMatchObject({ displayName: odd, screenName: odd, rights: ['read', odd] })
      expect(found.accessToken).toEqual(token)
      expect(found.result).toMatchObject({ allowed: true, remaining: 9 })
    } finally {
      await store.close()
    }
  })

  it('reports what is left of a budget exactly whatever the limit\'s digits, from a rate step and a request lookup alike (one-string replies)', async () => {
    const store = new RedisStore({ url: REDIS_URL, prefix })
    try {
      // 15 and 16 digits: Lua writes a number with 14 unless told otherwise.
      for (const limit of [123_456_789_012_345, 9_000_000_000_000_000]) {
        expect(await store.consumeRate(`digits-${limit}`, limit, 1000, 1)).toMatchObject({ allowed: true, remaining: limit - 1 })
        const found = await store.lookupRequest!({ credential: { kind: 'user', userId: 'nobody' }, budget: 'fixed', rate: { key: `digits-lookup-${limit}`, limit, windowMs: 1000, cost: 1 } })
        expect(found.result).toMatchObject({ allowed: true, remaining: limit - 1 })
      }
    } finally {
      await store.close()
    }
  })

  it('keeps a three-century window and a 16-digit quota exactly, in a rate step and in several limits (numbers written by %d)', async () => {
    const store = new RedisStore({ url: REDIS_URL, prefix })
    try {
      // A window of 10^13 ms (three centuries): its arrival time in µs has 17 digits, past
      // what a double holds exactly (2^53) and what Lua's own number-to-string writes (14).
      // Twenty fresh keys, at twenty different µs: a rounding that refused one instant in
      // two once let this pass by luck.
      const window = 10_000_000_000_000
      for (let i = 0; i < 20; i++) {
        expect(await store.consumeRate(`longest-window-${i}`, 1, window, 1)).toMatchObject({ allowed: true, remaining: 0 })
        const refused = await store.consumeRate(`longest-window-${i}`, 1, window, 1)
        expect(refused.allowed).toBe(false)
        expect(refused.retryAfterMs).toBeGreaterThan(window * 0.99)
      }
      const limit = 9_000_000_000_000_000
      const now = Date.now()
      const steps = [
        { kind: 'rate' as const, key: limitRateKey('app:digits', 'rate'), limit, windowMs: 1000, cost: 1 },
        { kind: 'quota' as const, key: limitRateKey('app:digits', 'quota'), limit, periodStart: now - 1000, periodEnd: now + 86_400_000, cost: 7 },
      ]
      // The rate gains a request back every µs; the quota only counts.
      const [rate, quota] = await store.consumeLimits(steps)
      expect([rate!.remaining, quota!.remaining]).toEqual([limit - 1, limit - 7])
      const [, again] = await store.consumeLimits(steps)
      expect(again!.remaining).toBe(limit - 14)
    } finally {
      await store.close()
    }
  })

  it('lets the first 16 scripts of a long turn go at once when Redis has nothing else to do, and holds them while it has', async () => {
    // A command timeout well past the BLPOP's 200 ms, so that a slow machine does not time the steps out.
    const client = new Redis(REDIS_URL, redisClientDefaults(5000))
    const store = new RedisStore({ client, prefix })
    const key = 'early-write'
    try {
      await store.consumeRate(key, 1000, 60_000, 1)
      const writes = countWrites(client)
      const steps = (n: number) => Array.from({ length: n }, () => store.consumeRate(key, 1000, 60_000, 1))

      // Nothing in flight: 16 leave while the turn goes on, the other 24 when it ends.
      const idle = steps(40)
      expect(writes.count).toBe(1)
      expect((await Promise.all(idle)).every((s) => s.allowed)).toBe(true)
      expect(writes.count).toBe(2)

      // A command in flight (a BLPOP that waits 200 ms): Redis has work, the turn's 40 leave together.
      const blocked = client.blpop(`${prefix}early-write-list`, 0.2)
      while (writes.count === 2) await new Promise((resolve) => setImmediate(resolve))
      writes.count = 0
      const busy = steps(40)
      expect(writes.count).toBe(0)
      expect((await Promise.all(busy)).every((s) => s.allowed)).toBe(true)
      expect(writes.count).toBe(1)
      expect(await blocked).toBeNull()
    } finally {
      await client.quit()
    }
  })

  it('runs its scripts under the key prefix of a client of yours', async () => {
    const client = new Redis(REDIS_URL, { ...redisClientDefaults(), keyPrefix: `${prefix}kp:` })
    const store = new RedisStore({ client, prefix })
    try {
      await store.consumeRate('prefixed', 10, 60_000, 1)
      expect(await admin.exists(`${prefix}kp:${prefix}rate:{prefixed}`)).toBe(1)
      expect(await admin.exists(`${prefix}rate:{prefixed}`)).toBe(0)
    } finally {
      await client.quit()
    }
  })

  // A client of yours with its own keyPrefix: ioredis prefixes the keys a script is given, and
  // the store the keys its scripts build from their arguments.
  const prefixedClients: Redis[] = []
  afterAll(async () => {
    await Promise.all(prefixedClients.map((c) => c.quit()))
  })
  describeStore(
    'RedisStore (a client with its own keyPrefix)',
    () => {
      const client = new Redis(REDIS_URL, { ...redisClientDefaults(), keyPrefix: `${prefix}own:` })
      prefixedClients.push(client)
      return new RedisStore({ client, prefix })
    },
    { describe, it, after: afterAll, cleanup: (store) => store.close() },
  )

  describeSameAsMemoryStore('RedisStore', () => new RedisStore({ url: REDIS_URL, prefix }))

  it("reads a page of 20 of a user's 5,000 keys in a bounded number of Redis commands, a script's own included", async () => {
    const store = new RedisStore({ url: REDIS_URL, prefix })
    const monitor = await monitorCommands(admin)
    try {
      const userId = await userWithManyKeys(store, 5000, 30)
      // MONITOR shows every command Redis runs, those inside a script too ("lua" source); the
      // user's id is in every key of theirs and in every key id.
      const measure = async (read: () => Promise<ApiKeyRecord[]>) => {
        let page: ApiKeyRecord[] = []
        const ran = await monitor.during(async () => (page = await read()))
        return { page, commands: ran.filter(({ args }) => args.some((a) => a.includes(userId))).length }
      }
      const counts: number[] = []
      for (const read of pagesOf(userId)) {
        const first = await measure(() => read(store))
        expect(first.page).toHaveLength(20)
        const next = await measure(() => read(store, first.page.at(-1)!.keyId))
        expect(next.page.length).toBeGreaterThan(0)
        counts.push(first.commands, next.commands)
      }
      // The script, the purge check, the seek key, the rank range and one read per key of the page.
      expect(Math.max(...counts)).toBeLessThanOrEqual(40)
      // Every page was seen at all: a count of nothing would pass the bound above.
      expect(Math.min(...counts)).toBeGreaterThan(0)
    } finally {
      monitor.stop()
      await store.close()
    }
  }, 60_000)

  it('rejects a prefix that would break its hash tags', () => {
    expect(() => new RedisStore({ url: REDIS_URL, prefix: 'a{b}:' })).toThrow(/prefix must be a string without \{ or \}/)
    expect(() => new RedisStore({} as never)).toThrow(/needs \{ url \} or \{ client \}/)
  })
})
