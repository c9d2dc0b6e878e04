/**
 * The example portal's gate around a Koa app: public data with an app token (or the
 * anonymous budget), private data for an authenticated user with the right.
 *
 *   npx tsx examples/koa/server.ts      (PORT=8081 by default)
 */
import Koa from 'koa'
import { createGate } from 'open-data-gate'
import { koaGate, koaGuard } from 'open-data-gate/koa'
import { DATASETS, PRIVATE_DATASETS } from '../datasets.js'

const gate = createGate({
  throttle: {
    application: { limit: 1000, windowMs: 3_600_000 },
    anonymous: { limit: 5, windowMs: 60_000, scope: 'ip' },
  },
})
const { appToken } = await gate.applications.register({ name: 'Koa example client' })
const ada = await gate.users.create({ username: 'ada', displayName: 'Ada Lovelace', email: 'ada@example.org', rights: ['read_private'] })
const { keyId, keySecret } = await gate.apiKeys.create(ada.id, { name: 'Koa example key' })

const privateData = koaGuard(gate, { auth: 'required', rights: ['read_private'] })
const app = new Koa()
app.use(koaGate(gate))
app.use(async (ctx, next) => {
  const match = /^\/(resource|private)\/([\w-]+)\.json$/.exec(ctx.path)
  if (match === null) {
    ctx.body = { datasets: Object.keys(DATASETS), application: ctx.state.gate.application?.name ?? null }
    return
  }
  const [, kind, id] = match as unknown as [string, 'resource' | 'private', string]
  // A guard that refuses answers the request itself and never calls on.
  let allowed = kind === 'resource'
  if (kind === 'private') await privateData(ctx, async () => (allowed = true))
  if (!allowed) return
  const dataset = (kind === 'private' ? PRIVATE_DATASETS : DATASETS)[id]
  ctx.status = dataset === undefined ? 404 : 200
  ctx.body = dataset === undefined ? { code: 'not_found', error: true, message: `No dataset ${id}` } : dataset.rows
  await next()
})

const server = app.listen(Number(process.env.PORT ?? 8081), '127.0.0.1', () => {
  const { port } = server.address() as { port: number }
  console.log(`Koa example on http://127.0.0.1:${port}
  curl -i http://127.0.0.1:${port}/resource/bike-racks.json -H 'X-App-Token: ${appToken}'
  API key (private data needs https in front): ${keyId} / ${keySecret}`)
})
