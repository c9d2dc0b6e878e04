/**
 * The example open data portal: an existing Express app with open-data-gate mounted in
 * front, on the embedded in-memory store. `npm run demo` serves it; the browser test
 * drives it.
 */
import express from 'express'
import { createGate, MemoryStore } from 'open-data-gate'
import { expressGate, expressGuard } from 'open-data-gate/express'
import { DATASETS, PRIVATE_DATASETS } from './datasets.js'
import { demoClient } from './demo-client.js'

export const DEMO_USER = { username: 'ada', password: 'correct horse battery staple' }

export interface PortalOptions {
  /** The https origin the portal is reached at (the OAuth issuer and the demo app's Callback Prefix). */
  origin: string
  /** A fetch that trusts the portal's certificate, for the demo app's server-side calls. */
  fetch: (url: string, options: object) => Promise<Response>
}

export async function createPortal(options: PortalOptions) {
  const gate = createGate({
    store: new MemoryStore(),
    throttle: {
      application: { limit: 1000, windowMs: 3_600_000 },
      // Low on purpose, so the anonymous limit shows after a few curls.
      anonymous: { limit: 5, windowMs: 60_000, scope: 'ip' },
    },
    // Codes live 10 minutes (the most RFC 6749 allows), time enough to follow the flow by hand.
    oauth: { issuer: options.origin, codeTtlMs: 600_000, pages: { siteName: 'Example open data portal' } },
  })
  gate.on('throttled', (e) => console.log(`throttled: ${e.policy} ${e.appToken ?? e.ip}, retry in ${Math.ceil(e.retryAfterMs / 1000)} s`))
  gate.on('invalidAppToken', (e) => console.log(`refused an unknown app token ${e.tokenPrefix}… from ${e.ip}`))
  gate.on('tokenRevoked', (e) => console.log(`revoked an access token of user ${e.userId}: ${e.reason}`))

  const dashboard = await gate.applications.register({ name: 'Demo dashboard', callbackPrefix: `${options.origin}/demo-app/` })
  const ada = await gate.users.create({ ...DEMO_USER, displayName: 'Ada Lovelace', email: 'ada@example.org', rights: ['read_private'] })
  const key = await gate.apiKeys.create(ada.id, { name: 'Nightly ETL' })

  const app = express()
  // The third-party demo app is not part of the portal's API: it sits before the gate.
  app.use('/demo-app', demoClient({ origin: options.origin, appToken: dashboard.appToken, secretToken: dashboard.secretToken, fetch: options.fetch }))
  app.use(expressGate(gate))

  app.get('/', (req, res) => {
    res.json({
      datasets: Object.entries(DATASETS).map(([id, d]) => ({ id, name: d.name, url: `/resource/${id}.json` })),
      private: Object.keys(PRIVATE_DATASETS).map((id) => `/private/${id}.json`),
      you: { application: req.gate.application?.name ?? null, user: req.gate.user?.displayName ?? null, throttle: req.gate.throttle },
    })
  })
  app.get('/resource/:id.json', (req, res) => {
    const dataset = DATASETS[req.params.id]
    if (dataset === undefined) {
      res.status(404).json({ code: 'not_found', error: true, message: `No dataset ${req.params.id}` })
      return
    }
    res.json(dataset.rows)
  })
  // Private data: a user must be authenticated (Basic with a password or an API key, or OAuth).
  app.get('/private/:id.json', expressGuard(gate, { auth: 'required', rights: ['read_private'] }), (req, res) => {
    const dataset = PRIVATE_DATASETS[req.params.id]
    if (dataset === undefined) {
      res.status(404).json({ code: 'not_found', error: true, message: `No dataset ${req.params.id}` })
      return
    }
    res.json(dataset.rows)
  })
  // The view-query endpoint: a user or an application token.
  app.post('/api/v3/views/:id/query.json', expressGuard(gate, { auth: 'user-or-app-token' }), express.json(), (req, res) => {
    res.json({ view: req.params.id, queries: Array.isArray(req.body) ? req.body.length : 0, by: req.gate.user?.username ?? req.gate.application?.name })
  })

  return {
    app,
    gate,
    credentials: { appToken: dashboard.appToken, secretToken: dashboard.secretToken, keyId: key.keyId, keySecret: key.keySecret, ...DEMO_USER },
  }
}
