/**
 * One instance of a gate on a Redis Cluster, counting the default plan locally from leases
 * (`throttle.local`), as its own process with a real node:http server. Started by
 * test/redis-cluster-leases.test.ts with `node --import tsx`; prints `{"port":N}` once it
 * listens, and closes on SIGTERM (a SIGKILL loses its lease, which the test measures).
 *
 * Environment: ODG_CLUSTER_PORTS (comma-separated), ODG_PREFIX, ODG_APP_LIMIT (requests per
 * hour), ODG_LEASE_UNITS, ODG_LEASE_TTL_MS. The handler answers the throttle's verdict:
 * `{ source, remaining, user }`.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Cluster } from 'ioredis'
import { nodeGate } from '../../adapters/node.js'
import { createGate } from '../../src/index.js'
import { RedisStore, redisClientDefaults } from '../../src/store/redis/store.js'

const ports = (process.env.ODG_CLUSTER_PORTS ?? '').split(',').map(Number)
const client = new Cluster(
  ports.map((port) => ({ host: '127.0.0.1', port })),
  { enableOfflineQueue: false, enableAutoPipelining: true, redisOptions: redisClientDefaults(1000) },
)
client.on('error', () => {})
await new Promise<void>((resolve) => client.once('ready', () => resolve()))

const gate = createGate({
  store: new RedisStore({ client, prefix: process.env.ODG_PREFIX ?? 'odg:' }),
  storeTimeoutMs: 1000,
  throttle: {
    application: { limit: Number(process.env.ODG_APP_LIMIT ?? 1000), windowMs: 3_600_000 },
    anonymous: false,
    onStoreError: 'fail-closed',
    local: { units: Number(process.env.ODG_LEASE_UNITS ?? 100), ttlMs: Number(process.env.ODG_LEASE_TTL_MS ?? 1000), plans: ['default'] },
  },
  basic: { scrypt: { logN: 10 } },
  // Loopback is the TLS-terminating proxy: requests say X-Forwarded-Proto: https.
  trustProxy: 'loopback',
})

const server = http.createServer(
  nodeGate(gate, (req, res) => {
    res.setHeader('content-type', 'application/json')
    const throttle = req.gate.throttle
    res.end(JSON.stringify({ source: throttle?.source ?? null, remaining: throttle?.remaining ?? null, user: req.gate.user?.username ?? null }))
  }),
)
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`)
})
process.on('SIGTERM', () => {
  server.closeAllConnections()
  server.close()
  void gate.close().then(() => {
    client.disconnect()
    process.exit(0)
  })
})
