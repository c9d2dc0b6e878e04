/**
 * The example portal's gate around a plain node:http server: public data with an app
 * token (or the anonymous budget), private data for an authenticated user with the right.
 *
 *   npx tsx examples/node-http/server.ts      (PORT=8082 by default)
 */
import http from 'node:http'
import { createGate } from 'open-data-gate'
import { nodeGate, nodeGuard } from 'open-data-gate/node'
import { DATASETS, PRIVATE_DATASETS } from '../datasets.js'

const gate = createGate({
  throttle: {
    application: { limit: 1000, windowMs: 3_600_000 },
    anonymous: { limit: 5, windowMs: 60_000, scope: 'ip' },
  },
})
const { appToken } = await gate.applications.register({ name: 'node:http example client' })
const ada = await gate.users.create({ username: 'ada', displayName: 'Ada Lovelace', email: 'ada@example.org', rights: ['read_private'] })
const { keyId, keySecret } = await gate.apiKeys.create(ada.id, { name: 'node:http example key' })

const privateData = nodeGuard(gate, { auth: 'required', rights: ['read_private'] })
const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

const server = http.createServer(
  nodeGate(gate, (req, res) => {
    const match = /^\/(resource|private)\/([\w-]+)\.json(\?|$)/.exec(req.url ?? '/')
    if (match === null) return json(res, 200, { datasets: Object.keys(DATASETS), application: req.gate.application?.name ?? null })
    const [, kind, id] = match as unknown as [string, 'resource' | 'private', string]
    // A guard that refuses has answered the request itself.
    if (kind === 'private' && !privateData(req, res)) return
    const dataset = (kind === 'private' ? PRIVATE_DATASETS : DATASETS)[id]
    if (dataset === undefined) return json(res, 404, { code: 'not_found', error: true, message: `No dataset ${id}` })
    json(res, 200, dataset.rows)
  }),
)

server.listen(Number(process.env.PORT ?? 8082), '127.0.0.1', () => {
  const { port } = server.address() as { port: number }
  console.log(`node:http example on http://127.0.0.1:${port}
  curl -i http://127.0.0.1:${port}/resource/bike-racks.json -H 'X-App-Token: ${appToken}'
  API key (private data needs https in front): ${keyId} / ${keySecret}`)
})
