/**
 * The example open data portal: an Express app serving public datasets at
 * `GET /resource/<id>.json` through the gate, on the embedded in-memory store.
 *
 *   npm ci && npm run demo
 *
 * It prints its address and a registered app token; try the curl lines it prints to see
 * the token and the throttle at work.
 */
import type { AddressInfo } from 'node:net'
import express from 'express'
import { createGate, MemoryStore } from 'open-data-gate'
import { expressGate } from 'open-data-gate/express'
import { DATASETS } from './datasets.js'

const gate = createGate({
  store: new MemoryStore(),
  throttle: {
    application: { limit: 1000, windowMs: 3_600_000 },
    // Low on purpose, so the anonymous limit shows after a few curls.
    anonymous: { limit: 5, windowMs: 60_000, scope: 'ip' },
  },
})
gate.on('throttled', (e) => console.log(`throttled: ${e.policy} ${e.appToken ?? e.ip}, retry in ${Math.ceil(e.retryAfterMs / 1000)} s`))
gate.on('invalidAppToken', (e) => console.log(`refused an unknown app token ${e.tokenPrefix}… from ${e.ip}`))

const { appToken } = await gate.applications.register({ name: 'Demo dashboard' })

const app = express()
app.use(expressGate(gate))
app.get('/resource/:id.json', (req, res) => {
  const dataset = DATASETS[req.params.id]
  if (dataset === undefined) {
    res.status(404).json({ code: 'not_found', error: true, message: `No dataset ${req.params.id}` })
    return
  }
  res.json(dataset.rows)
})
app.get('/', (req, res) => {
  res.json({
    datasets: Object.keys(DATASETS).map((id) => ({ id, name: DATASETS[id]?.name, url: `/resource/${id}.json` })),
    you: { application: req.gate.application?.name ?? null, throttle: req.gate.throttle },
  })
})

const server = app.listen(Number(process.env.PORT ?? 8080), '127.0.0.1')
server.on('error', (error: NodeJS.ErrnoException) => {
  // Another program on 8080 should not stop a newcomer: take any free port instead.
  if (error.code === 'EADDRINUSE' && process.env.PORT === undefined) server.listen(0, '127.0.0.1')
  else throw error
})
server.on('listening', () => {
  const base = `http://localhost:${(server.address() as AddressInfo).port}`
  console.log(`
open-data-gate example portal on ${base}

  App token of the registered "Demo dashboard": ${appToken}

  With the token (1000 requests an hour for this application):
    curl -i ${base}/resource/bike-racks.json -H 'X-App-Token: ${appToken}'
    curl -i '${base}/resource/bike-racks.json?$$app_token=${appToken}'

  Without a token (5 a minute, shared per address; the 6th is a 429):
    curl -i ${base}/resource/bike-racks.json

  With a token nobody registered (403):
    curl -i ${base}/resource/bike-racks.json -H 'X-App-Token: made-up'

Ctrl-C stops it.`)
})
