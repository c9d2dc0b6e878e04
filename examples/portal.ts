/**
 * The example open data portal: an existing Express app with open-data-gate mounted in
 * front, on the embedded in-memory store or any store it is given. `npm run demo` serves
 * it; the browser test drives it.
 */
import express from 'express'
import { createGate, MemoryStore, type GateStore, type RateStore } from 'open-data-gate'
import { expressGate, expressGuard } from 'open-data-gate/express'
import { DATASETS, PRIVATE_DATASETS } from './datasets.js'
import { demoClient } from './demo-client.js'
import { developerPages, PortalSessions } from './developer-pages.js'
import { provision, type PortalConfig, type Provisioned } from './provision.js'

export const DEMO_USER = { username: 'ada', password: 'correct horse battery staple' }

export interface PortalOptions {
  /** The https origin the portal is reached at (the OAuth issuer and the demo app's Callback Prefix). */
  origin: string
  /** A fetch that trusts the portal's certificate, for the demo app's server-side calls. */
  fetch: (url: string, options: object) => Promise<Response>
  /** Where the gate keeps its records (and rates, unless `rateStore`). Default: a new MemoryStore. */
  store?: GateStore
  /** Where rate counters live, when not in `store`. */
  rateStore?: RateStore
  /** Applications, users and keys to provision (see provision.ts), beside the demo's own. */
  config?: PortalConfig
  /**
   * Sign in on the gate's own login page at authorize and on the connected-apps page (its
   * own session), instead of the portal's `/login`: for the browser tests, which check the
   * gate's pages. Default `false`: one sign-in, the portal's, for every page.
   */
  gateSignIn?: boolean
}

export async function createPortal(options: PortalOptions) {
  const sessions = new PortalSessions()
  const gate = createGate({
    store: options.store ?? new MemoryStore(),
    ...(options.rateStore === undefined ? {} : { rateStore: options.rateStore }),
    throttle: {
      application: { limit: 1000, windowMs: 3_600_000 },
      // A plan announcing a stricter limit before it is enforced: 5 requests a minute, counted
      // in shadow (never refusing). An application put on it (`open-data-gate apps set-plan
      // APP_TOKEN announced`) sees on its developer page what the limit would have throttled,
      // and when it is near it.
      plans: {
        announced: [
          { name: 'hour', limit: 1000, windowMs: 3_600_000 },
          { name: 'minute', limit: 5, windowMs: 60_000, shadow: true },
        ],
      },
      // Low on purpose, so the anonymous limit shows after a few curls.
      anonymous: { limit: 5, windowMs: 60_000, scope: 'ip' },
    },
    // Codes live 10 minutes (the most RFC 6749 allows), time enough to follow the flow by hand.
    // One session for the whole portal: the gate asks the portal who is signed in, and sends
    // whoever is not to the portal's /login, which brings them back (return_to).
    oauth: {
      issuer: options.origin,
      codeTtlMs: 600_000,
      pages: { siteName: 'Example open data portal' },
      authenticateUser: sessions.userOf,
      ...(options.gateSignIn === true ? {} : { loginUrl: '/login' }),
    },
  })
  gate.on('throttled', (e) => console.log(`throttled: ${e.policy} ${e.appToken ?? e.ip}, retry in ${Math.ceil(e.retryAfterMs / 1000)} s`))
  gate.on('invalidAppToken', (e) => console.log(`refused an unknown app token ${e.tokenPrefix}… from ${e.ip}`))
  gate.on('tokenRevoked', (e) => console.log(`revoked an access token of user ${e.userId}: ${e.reason}`))

  // The demo's own records, provisioned like a file's: on a shared store that already has
  // them, the user is kept (with the demo password) and a new app and key are made.
  const demo = await provision(gate, {
    applications: [{ name: 'Demo dashboard', callbackPrefix: `${options.origin}/demo-app/` }],
    users: [{ ...DEMO_USER, displayName: 'Ada Lovelace', email: 'ada@example.org', rights: ['read_private'], apiKeys: [{ name: 'Nightly ETL' }] }],
  })
  const dashboard = demo.applications[0] as { appToken: string; secretToken: string }
  const key = demo.users[0]?.apiKeys[0] as { keyId: string; keySecret: string }

  // The portal's own pages call the gate's endpoints with the portal's own app token.
  const portalApp = await gate.applications.register({ name: 'Example portal (its own pages)' })
  const provisioned: Provisioned = options.config === undefined ? { applications: [], users: [] } : await provision(gate, options.config)

  const app = express()
  // Sign-in and developer settings are the portal's own pages, served before the gate
  // like the demo app; the API calls they make go through it.
  app.use(developerPages({ gate, sessions, portalAppToken: portalApp.appToken }))
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
  // A private dataset is read at the same path as a public one, as on the platform, by an
  // authenticated user with the right (soda-js reads it so with an API key).
  const privateResource = expressGuard(gate, { auth: 'required', rights: ['read_private'] })
  app.get('/resource/:id.json', (req, res, next) => (PRIVATE_DATASETS[req.params.id] === undefined ? next() : privateResource(req, res, next)), (req, res) => {
    const dataset = DATASETS[req.params.id] ?? PRIVATE_DATASETS[req.params.id]
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
    provisioned,
    credentials: { appToken: dashboard.appToken, secretToken: dashboard.secretToken, keyId: key.keyId, keySecret: key.keySecret, ...DEMO_USER },
  }
}
