// What both benches do with a redis-server they start: wait until it answers.
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'

/**
 * An ioredis client connected to the redis-server just spawned as `child` on `port`, tried
 * every 50 ms while the server starts; fails after 5 s or when the server exits.
 */
export async function connectWhenUp(child, port) {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null })
  client.on('error', () => {})
  for (let i = 0; ; i++) {
    try {
      await client.connect()
      return client
    } catch (error) {
      if (i === 100 || child.exitCode !== null) throw new Error(`redis-server on ${port} did not start: ${error.message}`)
      await sleep(50)
    }
  }
}
