/**
 * The Cluster request lookup's memory of what never changes about tokens and keys, on fake
 * commands over a MemoryStore (each answers on a later turn of the event loop, and counts
 * the round trips as test/redis/round-trips.ts does): what it remembers and what it must
 * not. Its answers on a real cluster are checked by the conformance kit in
 * test/redis-cluster.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { MemoryStore } from '../src/index.js'
import { CLUSTER_LOOKUP_FACTS, ClusterLookup, type ClusterLookupCommands } from '../src/store/redis/cluster-lookup.js'
import { accessToken, apiKey, freshHash, freshKeyId, freshRateKey, freshUserId, user } from '../src/testing/fixtures.js'
import type { RateStep, RequestLookup } from '../src/store/store.js'

/** Commands on `store`, each answered on a later turn, with the round trips of the last `count`. */
function fakeCommands(store: MemoryStore) {
  let replied = 0
  let deepest = 0
  const sent: string[] = []
  const later = <T>(name: string, answer: () => T): Promise<T> => {
    const depth = replied + 1
    deepest = Math.max(deepest, depth)
    sent.push(name)
    return new Promise((resolve) =>
      setImmediate(() => {
        replied = Math.max(replied, depth)
        resolve(answer())
      }),
    )
  }
  const commands: ClusterLookupCommands = {
    // This test's lookups are of one rate step.
    step: (budget) => later('step', () => {
      const rate = budget as RateStep
      return store.consumeRate(rate.key, rate.limit, rate.windowMs, rate.cost)
    }),
    undo: () => later('undo', () => 1),
    accessToken: (hash) => later('token', () => store.getAccessToken(hash)),
    user: (id) => later('user', () => store.getUser(id)),
    keyOwner: (keyId) => later('key owner', () => store.getApiKey(keyId)?.userId ?? null),
    apiKey: (owner, keyId) => later('key', () => (store.getApiKey(keyId)?.userId === owner ? store.getApiKey(keyId) : undefined)),
  }
  return {
    commands,
    async count(run: () => Promise<unknown>) {
      replied = deepest = sent.length = 0
      await run()
      return { roundTrips: deepest, sent: [...sent].sort() }
    },
  }
}

const rate = () => ({ key: freshRateKey(), limit: 1_000_000, windowMs: 60_000, cost: 1 })

describe('the Redis Cluster request lookup', () => {
  it(`remembers nothing of made-up tokens and key ids: after ${CLUSTER_LOOKUP_FACTS + 1} of each, a token and a key seen before still cost one round trip`, async () => {
    const store = new MemoryStore()
    const owner = user(freshUserId())
    store.insertUser(owner)
    const tokenHash = freshHash()
    store.insertAccessToken(accessToken(tokenHash, { userId: owner.id }))
    const keyId = freshKeyId()
    store.insertApiKey(apiKey(keyId, owner.id))
    const fake = fakeCommands(store)
    const lookup = new ClusterLookup(fake.commands)
    const byToken = (hash: string): RequestLookup => ({ credential: { kind: 'accessToken', tokenHash: hash, now: Date.now() }, budget: 'fixed', rate: rate() })
    const byKey = (id: string): RequestLookup => ({ credential: { kind: 'apiKey', keyId: id }, budget: 'fixed', rate: rate() })

    expect(await fake.count(() => lookup.lookup(byToken(tokenHash)))).toEqual({ roundTrips: 2, sent: ['step', 'token', 'user'] })
    expect(await fake.count(() => lookup.lookup(byKey(keyId)))).toEqual({ roundTrips: 2, sent: ['key', 'key owner', 'step', 'user'] })
    for (let i = 0; i <= CLUSTER_LOOKUP_FACTS; i++) {
      const flood = await fake.count(() => Promise.all([lookup.lookup(byToken(freshHash())), lookup.lookup(byKey(freshKeyId()))]))
      if (i === 0) expect(flood).toEqual({ roundTrips: 1, sent: ['key owner', 'step', 'step', 'token'] })
    }
    expect(await fake.count(() => lookup.lookup(byToken(tokenHash)))).toEqual({ roundTrips: 1, sent: ['step', 'token', 'user'] })
    expect(await fake.count(() => lookup.lookup(byKey(keyId)))).toEqual({ roundTrips: 1, sent: ['key', 'step', 'user'] })
  })

  it('gives back the step of a token revoked since it was seen, and takes the other one, in a second round trip', async () => {
    const store = new MemoryStore()
    const owner = user(freshUserId())
    store.insertUser(owner)
    const tokenHash = freshHash()
    store.insertAccessToken(accessToken(tokenHash, { userId: owner.id, appToken: 'app' }))
    const fake = fakeCommands(store)
    const lookup = new ClusterLookup(fake.commands)
    const byBudget = (): RequestLookup => ({ credential: { kind: 'accessToken', tokenHash, now: Date.now() }, budget: 'token', rate: rate(), otherwise: rate(), appToken: 'app' })
    await lookup.lookup(byBudget())
    expect(await fake.count(() => lookup.lookup(byBudget()))).toEqual({ roundTrips: 1, sent: ['step', 'token', 'user'] })
    store.revokeAccessToken(tokenHash, Date.now())
    let found: unknown
    expect(await fake.count(async () => (found = await lookup.lookup(byBudget())))).toEqual({ roundTrips: 2, sent: ['step', 'step', 'token', 'undo', 'user'] })
    expect(found).toMatchObject({ stepped: 'otherwise', result: { allowed: true } })
    expect(found).not.toHaveProperty('user')
    // Revocation is never undone: from now on the other step, in one round trip, nothing given back.
    expect(await fake.count(() => lookup.lookup(byBudget()))).toEqual({ roundTrips: 1, sent: ['step', 'token'] })
  })
})
