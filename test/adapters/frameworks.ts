/**
 * The same small data API mounted in every supported framework, so one suite can hold
 * each adapter to the same HTTP behaviour.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import type { TLSSocket } from 'node:tls'
import express5 from 'express'
import express4 from 'express4'
import Fastify from 'fastify'
import { Hono, type Context } from 'hono'
import { getRequestListener, type HttpBindings } from '@hono/node-server'
import { getConnInfo } from '@hono/node-server/conninfo'
import Koa3 from 'koa'
import Koa2 from 'koa2'
import { bodyParser } from '@koa/bodyparser'
import { expressGate, expressGuard } from '../../adapters/express.js'
import { fastifyGate, fastifyGuard } from '../../adapters/fastify.js'
import { fetchGate, fetchGuard } from '../../adapters/fetch.js'
import { honoGate, honoGuard } from '../../adapters/hono.js'
import { koaGate, koaGuard } from '../../adapters/koa.js'
import { nodeGate, nodeGuard, type GatedRequest } from '../../adapters/node.js'
import type { Gate, GateContext } from '../../src/index.js'
import { fetchListener } from '../support/fetch-bridge.js'

export interface Framework {
  readonly name: string
  /**
   * A request listener: the gate mounted, then three routes answering what the gate found:
   * - `GET /resource/<id>.json`: public data
   * - `GET /private/<id>.json`: guarded by `{ auth: 'required' }`
   * - `POST /api/v3/views/<id>/query.json`: guarded by `{ auth: 'user-or-app-token' }`
   */
  listener(gate: Gate): RequestListener
}

/** What every framework's dataset route answers. */
export interface DatasetBody {
  dataset: string
  gate: GateContext
}

const DATASET = /^\/(resource|private)\/([a-z0-9-]+)\.json$/
const VIEW_QUERY = /^\/api\/v3\/views\/([a-z0-9-]+)\/query\.json$/
const REQUIRED = { auth: 'required' } as const
const USER_OR_APP = { auth: 'user-or-app-token' } as const

function expressApp(express: typeof express5, withBodyParsers = false) {
  return (gate: Gate): RequestListener => {
    const app = express()
    if (withBodyParsers) app.use(express.json(), express.urlencoded({ extended: false }))
    app.use(expressGate(gate))
    app.get('/resource/:id.json', (req, res) => {
      res.json({ dataset: req.params.id, gate: req.gate } satisfies DatasetBody)
    })
    app.get('/private/:id.json', expressGuard(gate, REQUIRED), (req, res) => {
      res.json({ dataset: req.params.id, gate: req.gate } satisfies DatasetBody)
    })
    app.post('/api/v3/views/:id/query.json', expressGuard(gate, USER_OR_APP), (req, res) => {
      res.json({ dataset: req.params.id, gate: req.gate } satisfies DatasetBody)
    })
    return app as unknown as RequestListener
  }
}

function koaApp(Koa: typeof Koa3, withBodyParser = false) {
  return (gate: Gate): RequestListener => {
    const app = new Koa()
    const required = koaGuard(gate, REQUIRED)
    const userOrApp = koaGuard(gate, USER_OR_APP)
    if (withBodyParser) app.use(bodyParser())
    app.use(koaGate(gate))
    app.use(async (ctx, next) => {
      const dataset = DATASET.exec(ctx.path)
      const view = VIEW_QUERY.exec(ctx.path)
      const answer = async () => {
        ctx.body = { dataset: (dataset?.[2] ?? view?.[1]) as string, gate: ctx.state.gate } satisfies DatasetBody
      }
      if (ctx.method === 'GET' && dataset?.[1] === 'resource') await answer()
      else if (ctx.method === 'GET' && dataset?.[1] === 'private') await required(ctx, answer)
      else if (ctx.method === 'POST' && view !== null) await userOrApp(ctx, answer)
      else await next()
    })
    return app.callback()
  }
}

function nodeApp(gate: Gate): RequestListener {
  const required = nodeGuard(gate, REQUIRED)
  const userOrApp = nodeGuard(gate, USER_OR_APP)
  return nodeGate(gate, (req: GatedRequest, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname
    const dataset = DATASET.exec(path)
    const view = VIEW_QUERY.exec(path)
    const allowed =
      req.method === 'GET' && dataset?.[1] === 'resource'
        ? true
        : req.method === 'GET' && dataset?.[1] === 'private'
          ? required(req, res)
          : req.method === 'POST' && view !== null
            ? userOrApp(req, res)
            : undefined
    if (allowed === undefined) {
      res.statusCode = 404
      res.end()
      return
    }
    if (!allowed) return
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ dataset: (dataset?.[2] ?? view?.[1]) as string, gate: req.gate } satisfies DatasetBody))
  }) as (req: IncomingMessage, res: ServerResponse) => void
}

/** Fastify 5 behind its own request handler (what `fastify.listen()` hands node:http). */
function fastifyApp(gate: Gate): RequestListener {
  const app = Fastify()
  // Like the other mounts, the routes take any body (or a chunked empty one without a type) rather than answer 415.
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body))
  void app.register(fastifyGate, { gate })
  const dataset = (request: { params: unknown; gate: GateContext }): DatasetBody => ({ dataset: (request.params as { id: string }).id, gate: request.gate })
  app.get('/resource/:id.json', async (request) => dataset(request))
  app.get('/private/:id.json', { preHandler: fastifyGuard(gate, REQUIRED) }, async (request) => dataset(request))
  app.post('/api/v3/views/:id/query.json', { preHandler: fastifyGuard(gate, USER_OR_APP) }, async (request) => dataset(request))
  const ready = app.ready()
  return (req, res) => void ready.then(() => app.routing(req, res))
}

const isTls = (req: IncomingMessage) => (req.socket as Partial<TLSSocket>).encrypted === true

/** Hono 4 on @hono/node-server, the address from Hono's getConnInfo. */
function honoApp(gate: Gate): RequestListener {
  const app = new Hono<{ Bindings: HttpBindings }>()
  app.use(honoGate(gate, { clientAddress: (_request, c) => getConnInfo(c).remote.address, https: (_request, c) => isTls((c.env as HttpBindings).incoming) }))
  const answer = (c: Context) => {
    const file = /^([a-z0-9-]+)\.json$/.exec(c.req.param('file') ?? '')
    return file === null ? c.notFound() : c.json({ dataset: file[1] as string, gate: c.get('gate') } satisfies DatasetBody)
  }
  app.get('/resource/:file', answer)
  app.get('/private/:file', honoGuard(gate, REQUIRED), answer)
  app.post('/api/v3/views/:id/query.json', honoGuard(gate, USER_OR_APP), (c) => c.json({ dataset: c.req.param('id'), gate: c.get('gate') } satisfies DatasetBody))
  return getRequestListener(app.fetch)
}

/** The bare Fetch adapter on Node's own Request, through the smallest node:http bridge. */
function fetchApp(gate: Gate): RequestListener {
  const required = fetchGuard(gate, REQUIRED)
  const userOrApp = fetchGuard(gate, USER_OR_APP)
  const handler = fetchGate(
    gate,
    (request, context) => {
      const path = new URL(request.url).pathname
      const dataset = DATASET.exec(path)
      const view = VIEW_QUERY.exec(path)
      const refusal =
        request.method === 'GET' && dataset?.[1] === 'resource'
          ? undefined
          : request.method === 'GET' && dataset?.[1] === 'private'
            ? required(context)
            : request.method === 'POST' && view !== null
              ? userOrApp(context)
              : new Response(null, { status: 404 })
      return refusal ?? Response.json({ dataset: (dataset?.[2] ?? view?.[1]) as string, gate: context } satisfies DatasetBody)
    },
    { clientAddress: (_request, incoming: IncomingMessage) => incoming.socket.remoteAddress, https: (_request, incoming) => isTls(incoming) },
  )
  return fetchListener(handler)
}

export const FRAMEWORKS: readonly Framework[] = [
  { name: 'Express 5', listener: expressApp(express5) },
  { name: 'Express 4', listener: expressApp(express4) },
  { name: 'Koa 3', listener: koaApp(Koa3) },
  { name: 'Koa 2', listener: koaApp(Koa2) },
  { name: 'node:http', listener: nodeApp },
  { name: 'Fastify 5', listener: fastifyApp },
  { name: 'Hono 4 on @hono/node-server', listener: honoApp },
  { name: 'Fetch on node:http', listener: fetchApp },
]

/** Mounts where a body parser runs before the gate: the gate must reuse what it parsed. */
export const FRAMEWORKS_WITH_BODY_PARSERS: readonly Framework[] = [
  { name: 'Express 5 behind express.json() and express.urlencoded()', listener: expressApp(express5, true) },
  { name: 'Koa 3 behind @koa/bodyparser', listener: koaApp(Koa3, true) },
]
