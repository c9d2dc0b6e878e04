/**
 * One instance of a gate on a shared Redis, as its own process: a real node:http server
 * through the node adapter. Started by test/redis-processes.test.ts with
 * `node --import tsx`; prints `{"port":N}` once it listens, and closes on SIGTERM.
 *
 * Environment: REDIS_URL, ODG_PREFIX, ODG_APP_LIMIT (requests per hour per application).
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { nodeGate } from '../../adapters/node.js'
import { createGate } from '../../src/index.js'
import { RedisStore } from '../../src/store/redis/store.js'

const gate = createGate({
  store: new RedisStore({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', prefix: process.env.ODG_PREFIX ?? 'odg:' }),
  storeTimeoutMs: 1000,
  throttle: {
    application: { limit: Number(process.env.ODG_APP_LIMIT ?? 1000), windowMs: 3_600_000 },
    anonymous: { limit: 1000, windowMs: 3_600_000, scope: 'shared' },
    onStoreError: 'fail-closed',
  },
  // Loopback is the TLS-terminating proxy: requests say X-Forwarded-Proto: https.
  trustProxy: 'loopback',
})

const server = http.createServer(
  nodeGate(gate, (req, res) => {
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ user: req.gate.user?.username ?? null, app: req.gate.application?.appToken ?? null }))
  }),
)
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`)
})
process.on('SIGTERM', () => {
  server.closeAllConnections()
  server.close()
  void gate.close().then(() => process.exit(0))
})
