/**
 * One gate instance of the soak (`npm run soak`), as its own process: the node:http
 * adapter on a plain http server and a TLS server (the test certificate), both on
 * loopback, on the soak's own redis-server. Started by scripts/soak.ts with
 * `node --expose-gc --import tsx` and an IPC channel:
 *
 * - prints nothing; sends `{ type: 'listening', http, https }` once both servers listen;
 * - sends `{ type: 'event', name, at, ... }` for every storeError, storeRecovered and
 *   internalError the gate emits (at: epoch ms);
 * - sends `{ type: 'stall', from, to }` when its event loop ran 80 ms or more late;
 * - answers `{ type: 'memory' }` with `{ type: 'memory', usage, loop }` after a full GC, so
 *   the figures compare like with like (loop: its event loop's delay, p99 and max in ms,
 *   since the previous answer);
 * - closes its servers and the gate on `{ type: 'stop' }` and exits.
 *
 * Environment: REDIS_URL, ODG_PREFIX, and the soak's settings in ODG_SOAK (JSON).
 */
import { readFileSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { nodeGate } from '../../adapters/node.js'
import { createGate } from '../../src/index.js'
import { RedisStore } from '../../src/store/redis/store.js'
import type { SoakGateSettings } from './settings.js'
import { watchStalls } from './stalls.js'

const settings = JSON.parse(process.env.ODG_SOAK ?? '{}') as SoakGateSettings
const send = (message: object): void => {
  process.send?.(message)
}

const gate = createGate({
  store: new RedisStore({ url: process.env.REDIS_URL ?? '', prefix: process.env.ODG_PREFIX ?? 'odg:', commandTimeoutMs: settings.commandTimeoutMs }),
  storeTimeoutMs: settings.storeTimeoutMs,
  throttle: {
    application: { limit: 1_000_000, windowMs: settings.applicationWindowMs },
    anonymous: { limit: 1_000_000, windowMs: 3_600_000, scope: 'shared' },
    onStoreError: 'memory',
  },
  // Every request of the soak comes from 127.0.0.1: the per-address budgets (failed
  // passwords across usernames, posts to the OAuth endpoints) would otherwise throttle the
  // soak's own right passwords and sign-in flows once mallory's guesses spent them.
  basic: { scrypt: { logN: settings.scryptLogN }, addressFailures: false },
  oauth: { throttle: { limit: 1_000_000, windowMs: 60_000 }, issuer: 'https://127.0.0.1' },
  // A few users create and delete API keys all along: the soak measures the gate, not their budget.
  selfServiceBudget: { limit: 1_000_000, windowMs: 60_000 },
})
for (const name of ['storeError', 'storeRecovered', 'internalError'] as const) {
  gate.on(name, (event: object) => {
    const { error, ...rest } = event as { error?: unknown }
    send({ type: 'event', name, at: Date.now(), ...rest, ...(error === undefined ? {} : { error: String(error) }) })
  })
}

const handler = nodeGate(gate, (req, res) => {
  res.setHeader('content-type', 'application/json')
  res.end(
    JSON.stringify({
      user: req.gate.user?.username ?? null,
      auth: req.gate.auth,
      app: req.gate.application?.appToken ?? null,
      revokedInsecureToken: req.gate.revokedInsecureToken,
    }),
  )
})

const tlsDir = new URL('../../test/fixtures/tls/', import.meta.url)
const plain = http.createServer(handler)
const secure = https.createServer({ key: readFileSync(new URL('key.pem', tlsDir)), cert: readFileSync(new URL('cert.pem', tlsDir)) }, handler)
const listen = (server: http.Server): Promise<number> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)))

const [httpPort, httpsPort] = await Promise.all([listen(plain), listen(secure)])
send({ type: 'listening', http: httpPort, https: httpsPort })

// Every stall of this process of 80 ms or more, as it happens.
watchStalls(80, (stall) => send({ type: 'stall', ...stall }))

// How late this process's event loop ran: a request cannot be answered faster than that.
const loopDelay = monitorEventLoopDelay({ resolution: 10 })
loopDelay.enable()

const gc = (globalThis as { gc?: () => void }).gc
process.on('message', (message: { type?: string }) => {
  if (message.type === 'memory') {
    const loop = { p99Ms: loopDelay.percentile(99) / 1e6, maxMs: loopDelay.max / 1e6 }
    loopDelay.reset()
    gc?.()
    send({ type: 'memory', usage: process.memoryUsage(), loop })
  } else if (message.type === 'stop') {
    for (const server of [plain, secure]) {
      server.closeAllConnections()
      server.close()
    }
    void gate.close().finally(() => process.exit(0))
  }
})
// The soak's own process went away: do not linger.
process.on('disconnect', () => process.exit(0))
