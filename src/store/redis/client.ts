/**
 * The ioredis client as the Redis store wants it: the type it takes (a `Redis` or a
 * `Cluster`), the options under which no request waits on Redis, and the subscriber
 * connection and the quit the store makes itself.
 */
import type { Cluster, Redis, RedisOptions } from 'ioredis'

/** A client the store can use: an ioredis `Redis` or `Cluster`. */
export type RedisClient = Redis | Cluster

/**
 * The ioredis options under which no request waits on Redis longer than
 * `commandTimeoutMs`: commands fail at once while the client is disconnected (no offline
 * queue), are never sent again after a reconnect (a rate step replayed would count
 * twice), and the client reconnects within a quarter second of Redis answering again, or
 * of a restarted Redis finishing loading its data.
 * Use them for a client you hand to the store: `new Redis(url, redisClientDefaults())`, or
 * `new Cluster(nodes, { enableOfflineQueue: false, enableAutoPipelining: true, redisOptions: redisClientDefaults() })`.
 */
export function redisClientDefaults(commandTimeoutMs = 500): Omit<RedisOptions, 'replyMapping'> {
  return {
    enableOfflineQueue: false,
    commandTimeout: commandTimeoutMs,
    connectTimeout: Math.max(commandTimeoutMs, 1000),
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    retryStrategy: (times) => Math.min(50 * times, 250),
    // A client that connects while a restarted Redis is still loading its data checks again
    // after the server's own estimate, at least a second by ioredis's default, so the gate
    // went on failing for up to seconds after Redis was ready (found by `npm run soak`).
    maxLoadingRetryTime: 100,
    // Commands of concurrent requests leave in one write and are read by Redis in one
    // read: under load, Redis spends its CPU on the scripts, not on system calls.
    enableAutoPipelining: true,
  }
}

/** A connection of its own for SUBSCRIBE, made from the store's client. */
export function duplicate(client: RedisClient): RedisClient {
  // A subscriber must wait for its connection (and queue its SUBSCRIBE) rather than fail.
  if ('isCluster' in client && client.isCluster) return (client as Cluster).duplicate(undefined, { enableOfflineQueue: true })
  return (client as Redis).duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null, lazyConnect: false })
}

/** QUIT, or a hard disconnect when Redis cannot answer it. */
export async function quit(client: RedisClient): Promise<void> {
  try {
    await client.quit()
  } catch {
    client.disconnect()
  }
}
