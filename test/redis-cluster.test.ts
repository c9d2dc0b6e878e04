import { spawnSync } from 'node:child_process'
import { Cluster, type Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createGate, limitRateKey, type Gate, type GateOptions, type LimitStep } from '../src/index.js'
import { RedisStore, redisClientDefaults } from '../src/store/redis/store.js'
import { describeStore } from '../src/testing/index.js'
import { pagesOf, userWithManyKeys } from './redis/key-pages.js'
import { describeSameAsMemoryStore } from './redis/same-as-memory.js'
import { countRoundTrips } from './redis/round-trips.js'
import { OwnRedisCluster, randomPrefix, redisBinariesAvailable } from './redis/servers.js'

// Ports 17001-17003 of this project's test range (17000-17199).
const available = redisBinariesAvailable('RedisStore on a three-node Redis Cluster')

describe.skipIf(!available)('RedisStore on a three-node Redis Cluster', () => {
  const cluster = new OwnRedisCluster([17001, 17002, 17003])
  const prefix = randomPrefix('cluster')
  let client: Cluster

  beforeAll(async () => {
    try {
      await cluster.start()
    } catch (error) {
      await cluster.stop()
      throw error
    }
    client = new Cluster(cluster.nodes, { enableOfflineQueue: false, enableAutoPipelining: true, redisOptions: redisClientDefaults() })
    client.on('error', () => {})
    await new Promise<void>((resolve) => client.once('ready', () => resolve()))
  }, 30_000)

  afterAll(async () => {
    client?.disconnect()
    await cluster.stop()
  })

  describeStore('RedisStore (Cluster)', () => new RedisStore({ client, prefix }), { describe, it, after: afterAll, cleanup: (store) => store.close() })

  describeSameAsMemoryStore('RedisStore (Cluster)', () => new RedisStore({ client, prefix }))

  /** A gate on its own RedisStore over the cluster: one instance of a deployment. */
  const instance = (options: Partial<GateOptions> = {}) => {
    const store = new RedisStore({ client, prefix })
    return { store, gate: createGate({ store, trustProxy: 'loopback', usage: false, applicationCacheMs: 600_000, ...options }) }
  }
  const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
  /** Asks the gate over https; answers how the request authenticated, or the refusal's status, with the application's budget left. */
  const ask = async (gate: Gate, authorization: string | undefined, app?: string) => {
    const headers: Record<string, string> = { 'x-forwarded-proto': 'https', ...(authorization === undefined ? {} : { authorization }), ...(app === undefined ? {} : { 'x-app-token': app }) }
    const outcome = await gate.handle({ method: 'GET', url: '/x', headers, peerAddress: '127.0.0.1', tls: false })
    const sent = outcome.type === 'next' ? outcome.headers : outcome.response.headers
    const left = /r=(\d+)/.exec(String(sent.ratelimit ?? ''))?.[1]
    return { auth: outcome.type === 'next' ? outcome.context.auth : outcome.response.status, left: left === undefined ? undefined : Number(left) }
  }
  /** What a Redis key is, from its name. */
  const kind = (command: string) => (/rate:\{/.test(command) ? 'rate' : /:token:\{/.test(command) ? 'token' : /\{users\}:user:/.test(command) ? 'user' : /keyowner:\{/.test(command) ? 'key owner' : /:key:/.test(command) ? 'key' : command)

  it('authenticates every credential in one round trip to the cluster once the instance has seen it, counted command by command', async () => {
    const { store, gate } = instance()
    const trips = countRoundTrips(client)
    try {
      expect(store.lookupRequest).toBeTypeOf('function')
      const { appToken } = await gate.applications.register({ name: 'cluster' })
      const password = 'correct horse battery staple'
      const user = await gate.users.create({ username: `trips-${Date.now()}`, password, displayName: 'T', email: 't@example.org' })
      const { accessToken } = await gate.tokens.issue({ userId: user.id, appToken })
      const bearer = (await gate.tokens.issue({ userId: user.id, appToken })).accessToken
      const { keyId, keySecret } = await gate.apiKeys.create(user.id, { name: 'trips' })
      await ask(gate, undefined, appToken) // the application, into the instance's cache
      const counted = async (authorization: string | undefined, app: string | undefined) => {
        const { value, commands, roundTrips } = await trips.count(() => ask(gate, authorization, app))
        return { auth: value.auth, keys: commands.map(kind).sort(), roundTrips }
      }
      const credentials = {
        'an app token': [undefined, appToken, 'none'],
        'an OAuth token with its app token': [`OAuth ${accessToken}`, appToken, 'oauth'],
        'a Bearer token alone (its application is the budget)': [`Bearer ${accessToken}`, undefined, 'oauth'],
        'a Bearer token never sent with its app token': [`Bearer ${bearer}`, undefined, 'oauth'],
        'an API key': [basic(keyId, keySecret), appToken, 'api-key'],
        'a password': [basic(user.username, password), appToken, 'password'],
      } as const
      const first: Record<string, unknown> = {}
      for (const [name, [authorization, app, auth]] of Object.entries(credentials)) {
        const seen = await counted(authorization, app)
        expect(seen.auth, name).toBe(auth)
        first[name] = seen.roundTrips
      }
      // The first sight of a key writes when it was last used, in the background: let it land.
      await vi.waitFor(async () => expect((await store.getApiKey(keyId))?.lastUsedAt).not.toBeNull())
      const warm: Record<string, unknown> = {}
      for (const [name, [authorization, app]] of Object.entries(credentials)) warm[name] = await counted(authorization, app)
      expect(warm).toEqual({
        'an app token': { auth: 'none', keys: ['rate'], roundTrips: 1 },
        'an OAuth token with its app token': { auth: 'oauth', keys: ['rate', 'token', 'user'], roundTrips: 1 },
        'a Bearer token alone (its application is the budget)': { auth: 'oauth', keys: ['rate', 'token', 'user'], roundTrips: 1 },
        'a Bearer token never sent with its app token': { auth: 'oauth', keys: ['rate', 'token', 'user'], roundTrips: 1 },
        'an API key': { auth: 'api-key', keys: ['key', 'rate', 'user'], roundTrips: 1 },
        'a password': { auth: 'password', keys: ['rate', 'user'], roundTrips: 1 },
      })
      // At first sight: the token before its user, the key's owner before the key (a password runs scrypt).
      expect(first).toMatchObject({ 'an app token': 1, 'an OAuth token with its app token': 2, 'an API key': 2 })
    } finally {
      trips.stop()
      await gate.close()
    }
  })

  it('costs one round trip and one read of a missing key for a made-up token or key id, and remembers nothing of them', async () => {
    const { gate } = instance()
    const trips = countRoundTrips(client)
    try {
      const { appToken } = await gate.applications.register({ name: 'flood' })
      await ask(gate, undefined, appToken)
      for (let i = 0; i < 3; i++) {
        const token = await trips.count(() => ask(gate, `OAuth madeup${i}${'x'.repeat(36)}`, appToken))
        expect([token.value.auth, token.commands.map(kind).sort(), token.roundTrips]).toEqual([401, ['rate', 'token'], 1])
        const keyId = `k${String(i).padStart(24, '0')}`
        const key = await trips.count(() => ask(gate, basic(keyId, 'secret'), appToken))
        expect([key.value.auth, key.commands.map(kind).sort(), key.roundTrips]).toEqual([401, ['key owner', 'rate'], 1])
      }
    } finally {
      trips.stop()
      await gate.close()
    }
  })

  it('serves an application registered on another instance at once, though this instance never hears the change message', async () => {
    const a = instance()
    const store = new RedisStore({ client, prefix })
    // B's subscriber never connects: every change message is lost to it.
    store.attach = () => {}
    const b = createGate({ store, trustProxy: 'loopback', usage: false, applicationCacheMs: 600_000 })
    const appToken = `unheard${Date.now()}abcdefgh`
    try {
      expect((await ask(b, undefined, appToken)).auth).toBe(403)
      expect((await ask(b, undefined, appToken)).auth).toBe(403)
      await a.gate.applications.register({ name: 'later', appToken })
      expect((await ask(b, undefined, appToken)).auth).toBe('none')
    } finally {
      await a.gate.applications.delete(appToken)
      await Promise.all([a.gate.close(), b.close()])
    }
  })

  it("refuses a token, key or password revoked on another instance on this instance's next request, and charges the application nothing for a revoked token", async () => {
    const a = instance({ throttle: { application: { limit: 1000, windowMs: 3_600_000 } } })
    const b = instance()
    try {
      const { appToken } = await a.gate.applications.register({ name: 'revocations' })
      const password = 'correct horse battery staple'
      const stamp = Date.now()
      const user = await a.gate.users.create({ username: `rev-${stamp}`, password, displayName: 'R', email: 'r@example.org' })
      const leaving = await a.gate.users.create({ username: `leaving-${stamp}`, displayName: 'L', email: 'l@example.org' })
      const token = (await a.gate.tokens.issue({ userId: user.id, appToken })).accessToken
      const bearer = (await a.gate.tokens.issue({ userId: user.id, appToken })).accessToken
      const leavingToken = (await a.gate.tokens.issue({ userId: leaving.id, appToken })).accessToken
      const key = await a.gate.apiKeys.create(user.id, { name: 'rev' })
      const leavingKey = await a.gate.apiKeys.create(leaving.id, { name: 'rev' })
      const requests = {
        'an OAuth token': [`OAuth ${token}`, appToken],
        'a Bearer token alone': [`Bearer ${bearer}`, undefined],
        'a token of a deleted user': [`OAuth ${leavingToken}`, appToken],
        'an API key': [basic(key.keyId, key.keySecret), appToken],
        'an API key of a deleted user': [basic(leavingKey.keyId, leavingKey.keySecret), appToken],
        'a password': [basic(user.username, password), appToken],
      } as const
      const answers = async () => {
        const out: Record<string, unknown> = {}
        for (const [name, [authorization, app]] of Object.entries(requests)) out[name] = (await ask(a.gate, authorization, app)).auth
        return out
      }
      // Seen twice by instance a, so that it knows every credential's facts.
      await answers()
      expect(await answers()).toEqual({
        'an OAuth token': 'oauth',
        'a Bearer token alone': 'oauth',
        'a token of a deleted user': 'oauth',
        'an API key': 'api-key',
        'an API key of a deleted user': 'api-key',
        'a password': 'password',
      })
      await b.gate.tokens.revoke(token)
      await b.gate.tokens.revoke(bearer)
      await b.gate.apiKeys.revoke(key.keyId)
      await b.gate.users.delete(leaving.id)
      await b.gate.users.setPassword(user.id, 'another horse battery staple')
      const before = (await ask(a.gate, undefined, appToken)).left
      const refused = await ask(a.gate, `Bearer ${bearer}`)
      const after = (await ask(a.gate, undefined, appToken)).left
      expect(refused.auth).toBe(401)
      // The application's budget counted the two app-token requests, not the revoked token's.
      expect(after).toBe(before! - 1)
      expect(await answers()).toEqual({
        'an OAuth token': 401,
        'a Bearer token alone': 401,
        'a token of a deleted user': 401,
        'an API key': 401,
        'an API key of a deleted user': 401,
        'a password': 401,
      })
    } finally {
      await a.gate.close()
      await b.gate.close()
    }
  })

  it("counts a request once when its user's node fails the lookup after the rate step: the records come by the separate calls, the step is not sent again", async () => {
    // One step moves the application's arrival time by windowMs / limit (86.4 s here), so
    // reading the rate key tells how many steps Redis took.
    const throttle = { application: { limit: 1000, windowMs: 86_400_000 } }
    const setup = instance({ throttle })
    const { appToken } = await setup.gate.applications.register({ name: 'failing node' })
    const password = 'correct horse battery staple'
    const user = await setup.gate.users.create({ username: `failing-${Date.now()}`, password, displayName: 'F', email: 'f@example.org' })
    const { accessToken } = await setup.gate.tokens.issue({ userId: user.id, appToken })
    const key = await setup.gate.apiKeys.create(user.id, { name: 'failing' })
    await setup.gate.close()
    await setup.store.close()
    const rateKey = `${prefix}rate:{app:${appToken}}`
    const userKey = `${prefix}{users}:user:${user.id}`
    const saved = await client.hgetall(userKey)
    const arrival = async () => Number(await client.get(rateKey))
    // Each credential on an instance of its own: after the failure the guard holds the store
    // for a probe, which would decide whether the next request reaches Redis at all.
    for (const authorization of [`OAuth ${accessToken}`, basic(key.keyId, key.keySecret), basic(user.username, password)]) {
      const { store, gate } = instance({ throttle })
      try {
        // Seen live once: the instance knows where the credential's records are.
        expect((await ask(gate, authorization, appToken)).auth).not.toBeTypeOf('number')
        // The user's key now holds a string: its node answers WRONGTYPE while the rate key's took the step.
        await client.del(userKey)
        await client.set(userKey, 'not a hash')
        const before = await arrival()
        expect((await ask(gate, authorization, appToken)).auth).toBe(503)
        expect(Math.round(((await arrival()) - before) / 86_400_000)).toBe(1)
      } finally {
        await client.del(userKey)
        await client.hset(userKey, saved)
        await gate.close()
        await store.close()
      }
    }
  })

  it("reads a page of 20 of a user's 5,000 keys with a bounded number of commands, counted by INFO commandstats", async () => {
    const store = new RedisStore({ client, prefix })
    const masters = client.nodes('master')
    /** Every command the masters ran since the last reset, a script's own included (not the stats' own). */
    const commandsRun = async () => {
      let total = 0
      for (const node of masters) {
        const stats = await node.info('commandstats')
        for (const [, name, calls] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (!/^(info|config|cluster|ping)/.test(name!)) total += Number(calls)
      }
      return total
    }
    const resetStats = () => Promise.all(masters.map((node) => node.config('RESETSTAT')))
    try {
      const userId = await userWithManyKeys(store, 5000, 30)
      for (const read of pagesOf(userId)) {
        await resetStats()
        const first = await read(store)
        const firstCommands = await commandsRun()
        await resetStats()
        const next = await read(store, first.at(-1)!.keyId)
        const nextCommands = await commandsRun()
        expect(first).toHaveLength(20)
        expect(next.length).toBeGreaterThan(0)
        expect([firstCommands, nextCommands].every((n) => n <= 40), `commands per page: ${firstCommands}, ${nextCommands}`).toBe(true)
      }
    } finally {
      await store.close()
    }
  }, 120_000)

  it('spreads rate keys over the masters, and runs every step as one script on the key’s own node', async () => {
    const store = new RedisStore({ client, prefix })
    for (let i = 0; i < 30; i++) expect((await store.consumeRate(`spread-${i}`, 5, 60_000, 1)).remaining).toBe(4)
    const perNode = await Promise.all(client.nodes('master').map((node) => node.dbsize()))
    expect(perNode.filter((n) => n > 0).length).toBe(3)
    await store.close()
  })

  it('tells which limits an application is near, and when it was reported, from any instance on the cluster', async () => {
    const plan = { application: [{ name: 'hour', limit: 10, windowMs: 3_600_000 }, { name: 'day', limit: 1000, period: 'day' as const }] }
    const a = instance({ throttle: plan })
    const b = instance({ throttle: plan })
    try {
      const { appToken } = await a.gate.applications.register({ name: 'Near on a cluster' })
      const reported = new Promise<void>((resolve) => a.gate.on('nearLimit', () => resolve()))
      for (let i = 0; i < 7; i++) await ask(a.gate, undefined, appToken)
      expect(await b.gate.applications.nearLimit(appToken)).toEqual([])
      await ask(a.gate, undefined, appToken)
      await reported
      const near = await b.gate.applications.nearLimit(appToken)
      expect(near).toMatchObject([{ name: 'hour', threshold: 0.8, limit: 10, remaining: 2, period: null, shadow: false }])
      expect(near?.[0]?.since).toBeGreaterThan(Date.now() - 60_000)
    } finally {
      await a.gate.close()
      await b.gate.close()
      await a.store.close()
      await b.store.close()
    }
  })

  it("decides an application's limits in one script on the node of its slot, its own rate key included, and refuses keys of several slots", async () => {
    const store = new RedisStore({ client, prefix })
    const trips = countRoundTrips(client)
    try {
      for (let i = 0; i < 6; i++) {
        const subject = `app:plan-${i}`
        const steps: LimitStep[] = [
          { kind: 'rate', key: subject, limit: 5, windowMs: 60_000, cost: 1 },
          { kind: 'rate', key: limitRateKey(subject, 'hour'), limit: 50, windowMs: 3_600_000, cost: 1 },
          { kind: 'quota', key: limitRateKey(subject, 'day'), limit: 2, periodStart: Date.now() - 1000, periodEnd: Date.now() + 86_400_000, cost: 1 },
        ]
        // A read first: the node learns the script (EVAL after NOSCRIPT), and nothing is counted.
        await store.consumeLimits(steps.map((step) => ({ ...step, cost: 0 })))
        const { value, commands, roundTrips } = await trips.count(() => store.consumeLimits(steps))
        expect(value.map((r) => r.remaining)).toEqual([4, 49, 1])
        expect(commands).toEqual([`evalsha ${prefix}rate:{${subject}}`])
        expect(roundTrips).toBe(1)
        // The subject's own key is the one consumeRate steps: one state.
        expect((await store.consumeRate(subject, 5, 60_000, 1)).remaining).toBe(3)
      }
      await expect(
        store.consumeLimits([
          { kind: 'rate', key: 'app:one', limit: 5, windowMs: 60_000, cost: 1 },
          { kind: 'rate', key: 'app:other', limit: 5, windowMs: 60_000, cost: 1 },
        ]),
      ).rejects.toThrow(/needs every key in one hash slot .*"app:one", "app:other"/)
      // The six subjects' keys went to their own nodes: more than one master holds them.
      const perNode = await Promise.all(client.nodes('master').map(async (node) => (await node.keys(`${prefix}rate:{app:plan-*`)).length))
      expect(perNode.filter((n) => n > 0).length).toBeGreaterThan(1)
      expect(perNode.reduce((a, b) => a + b, 0)).toBe(18)
    } finally {
      trips.stop()
      await store.close()
    }
  })

  /** A master's address as the client's slot map names it. */
  const address = (node: Redis) => `${node.options.host}:${node.options.port}`
  /** A key's slot, and the master that serves it by the client's map. */
  const ownerOf = async (key: string) => {
    const masters = client.nodes('master')
    const slot = Number(await masters[0]!.cluster('KEYSLOT', key))
    return { slot, owner: masters.find((m) => address(m) === client.slots[slot]?.[0])! }
  }
  const keysIn = async (node: Redis, slot: number) => Number(await node.cluster('COUNTKEYSINSLOT', slot))

  it('fails the steps of a paused master within the command timeout, while the steps sent beside them to the other masters are answered', async () => {
    const store = new RedisStore({ client, prefix })
    const masters = client.nodes('master')
    // A unit comes back every 864 s: the remaining counts are steps taken, whatever the timing.
    const DAY = 86_400_000
    // One subject whose rate key lives on each master.
    const subjects = new Map<Redis, string>()
    for (let i = 0; subjects.size < masters.length; i++) {
      const subject = `app:paused-${i}`
      const { owner } = await ownerOf(`${prefix}rate:{${subject}}`)
      if (!subjects.has(owner)) subjects.set(owner, subject)
    }
    const step = (node: Redis) => store.consumeRate(subjects.get(node)!, 100, DAY, 1)
    const [paused, ...others] = masters as [Redis, ...Redis[]]
    const server = cluster.servers.find((s) => s.port === paused.options.port)!
    try {
      // Each node knows the script: what follows sends EVALSHA only.
      for (const node of masters) await step(node)
      server.pause()
      try {
        // Sent in one turn: the paused master's socket is corked with the others', and held apart from them.
        const results = await Promise.allSettled(masters.map(step))
        expect(results[0]).toMatchObject({ status: 'rejected', reason: { message: expect.stringMatching(/timed out/i) } })
        for (const result of results.slice(1)) expect(result).toMatchObject({ status: 'fulfilled', value: { allowed: true, remaining: 98 } })
      } finally {
        server.resume()
      }
      // Answering again. The step that timed out was in its socket and ran when it woke, before
      // the next one on the same connection: each key has taken three steps.
      expect((await step(paused)).remaining).toBe(97)
      for (const other of others) expect((await step(other)).remaining).toBe(97)
      // Never longer than the cluster's node timeout (2 s): it was never marked failed.
      for (const s of cluster.servers) expect(spawnSync('redis-cli', ['-p', String(s.port), 'cluster', 'info'], { encoding: 'utf8' }).stdout).toContain('cluster_state:ok')
    } finally {
      await store.close()
    }
  })

  it('follows a slot moved to another master after the client learned the map: each step runs once, on the new owner', async () => {
    const store = new RedisStore({ client, prefix })
    const masters = client.nodes('master')
    const trips = countRoundTrips(client)
    try {
      // A rate key in a slot that holds no key: such a slot moves by CLUSTER SETSLOT alone.
      let subject = ''
      let found: Awaited<ReturnType<typeof ownerOf>>
      for (let i = 0; ; i++) {
        subject = `app:moved-${i}`
        found = await ownerOf(`${prefix}rate:{${subject}}`)
        if ((await Promise.all(masters.map((m) => keysIn(m, found.slot)))).every((n) => n === 0)) break
      }
      const { slot, owner } = found
      const target = masters.find((m) => m !== owner)!
      const targetId = String(await target.cluster('MYID'))
      // The new owner first, then the others, as redis-cli --cluster reshard does; the client is not told.
      for (const node of [target, ...masters.filter((m) => m !== target)]) await node.cluster('SETSLOT', slot, 'NODE', targetId)
      expect(client.slots[slot]?.[0]).toBe(address(owner))

      // Sent to the old owner, answered MOVED, sent again to the new one (with EVAL if it lacks the script).
      const first = await trips.count(() => store.consumeRate(subject, 5, 60_000, 1))
      expect(first.value.remaining).toBe(4)
      expect(first.commands.length).toBeGreaterThan(1)
      // The client follows the new map: one command, to the new owner.
      const second = await trips.count(() => store.consumeRate(subject, 5, 60_000, 1))
      expect(second.value.remaining).toBe(3)
      expect(second.commands).toEqual([`evalsha ${prefix}rate:{${subject}}`])
      expect(await keysIn(target, slot)).toBe(1)
      expect(await keysIn(owner, slot)).toBe(0)
    } finally {
      trips.stop()
      await store.close()
    }
  })
})
