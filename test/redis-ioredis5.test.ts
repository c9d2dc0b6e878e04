/**
 * The Redis store on a client of ioredis 5 (5.11), the other major version its peer range
 * allows: the conformance kit, and the store's own sending (it builds ioredis commands, hands
 * them to the client's `sendCommand`, corks its socket and reads its reply queue). This
 * package resolves ioredis 6 here, so the commands are ioredis 6's on an ioredis 5 client, as
 * in an app with both installed; an app with ioredis 5 alone builds ioredis 5's own.
 */
import { Redis } from 'ioredis'
import { Redis as Redis5, type RedisOptions as RedisOptions5 } from 'ioredis5'
import { afterAll, describe, expect, it } from 'vitest'
import { describeStore } from '../src/testing/index.js'
import { RedisStore, redisClientDefaults, type RedisClient } from '../src/store/redis/store.js'
import { deletePrefix, randomPrefix, REDIS_URL, sharedRedisAvailable } from './redis/servers.js'
import { countWrites } from './redis/socket-writes.js'

const available = await sharedRedisAvailable('RedisStore on an ioredis 5 client')
const prefix = randomPrefix('ioredis5')

describe.skipIf(!available)('RedisStore on a client of ioredis 5', () => {
  const clients: Redis5[] = []
  const client = (): Redis5 => {
    const made = new Redis5(REDIS_URL, redisClientDefaults() as RedisOptions5)
    clients.push(made)
    return made
  }
  const storeOn = (made: Redis5) => new RedisStore({ client: made as unknown as RedisClient, prefix })
  afterAll(async () => {
    await Promise.all(clients.map((made) => made.quit().catch(() => made.disconnect())))
    const admin = new Redis(REDIS_URL)
    await deletePrefix(admin, prefix)
    await admin.quit()
  })

  describeStore('RedisStore (ioredis 5)', () => storeOn(client()), { describe, it, after: afterAll, cleanup: (store) => store.close() })

  it('runs a request lookup and rate steps through ioredis 5 commands, a turn of them in as few writes as on ioredis 6', async () => {
    const made = client()
    const store = storeOn(made)
    const now = Date.now()
    const userId = `v5-${now}`
    await store.insertUser({ id: userId, username: userId, usernameSkeleton: null, screenName: 'V', displayName: 'V', email: 'v@example.org', rights: [], passwordHash: null, createdAt: now, updatedAt: now })
    const token = { tokenHash: `v5-${now}`, userId, appToken: 'appA', codeHash: null, createdAt: now, expiresAt: now + 60_000, revokedAt: null }
    await store.insertAccessToken(token)
    const found = await store.lookupRequest!({ credential: { kind: 'accessToken', tokenHash: token.tokenHash, now }, budget: 'token', rate: { key: `v5-${now}`, limit: 100, windowMs: 3_600_000, cost: 1 }, otherwise: null })
    expect(found).toMatchObject({ stepped: 'rate', result: { allowed: true, remaining: 99 }, accessToken: token, user: await store.getUser(userId) })

    const writes = countWrites(made)
    const steps = Array.from({ length: 40 }, () => store.consumeRate(`v5-${now}`, 100, 3_600_000, 1))
    // Nothing else in flight: the first 16 leave at once, the other 24 when the turn ends.
    expect(writes.count).toBe(1)
    const results = await Promise.all(steps)
    expect(writes.count).toBe(2)
    expect(results.map((r) => r.remaining)).toEqual(Array.from({ length: 40 }, (_, i) => 98 - i))
  })
})
