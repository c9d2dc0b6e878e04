/**
 * A Redis restarted with data to load (an append-only file): the store uses it as soon as
 * it has loaded, on a redis-server this file starts on its own port (18090) and stops by pid.
 */
import { spawnSync } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'
import { RedisStore } from '../src/store/redis/store.js'
import { OwnRedisServer, redisBinariesAvailable } from './redis/servers.js'

const available = redisBinariesAvailable('a Redis restarted with data to load') && spawnSync('redis-benchmark', ['--version']).status === 0

describe.skipIf(!available)('a Redis restarted with data to load', () => {
  const redis = new OwnRedisServer(18090, ['--appendonly', 'yes'])
  let store: RedisStore | undefined

  afterAll(async () => {
    await store?.close()
    await redis.stop()
  })

  it('is used within half a second of answering again (at most a quarter second between reconnects), not a second or more later', async () => {
    await redis.start()
    // Enough data that loading it takes a while, so the client reconnects while Redis is still loading.
    const fill = spawnSync('redis-benchmark', ['-p', String(redis.port), '-t', 'set', '-n', '200000', '-r', '200000', '-P', '100', '-d', '64', '-q'], { timeout: 60_000 })
    expect(fill.status).toBe(0)
    store = new RedisStore({ url: redis.url, prefix: 'restart:', commandTimeoutMs: 200 })
    await store.consumeRate('k', 1000, 60_000, 1)
    await redis.kill()
    await redis.start() // resolves once the server answers PING: its data is loaded
    const answered = performance.now()
    for (;;) {
      const ok = await store.consumeRate('k', 1000, 60_000, 1).then(
        () => true,
        () => false,
      )
      if (ok) break
      if (performance.now() - answered > 5000) throw new Error('the store did not use the restarted Redis within 5 s')
      await sleep(10)
    }
    // At most the client's quarter second between reconnects, then the connection and its
    // ready check; the rest is room for a busy machine. Without maxLoadingRetryTime it took up to seconds.
    expect(performance.now() - answered).toBeLessThan(500)
  }, 60_000)
})
