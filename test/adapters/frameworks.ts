/**
 * The same small data API mounted in every supported framework, so one suite can hold
 * each adapter to the same HTTP behaviour.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import express5 from 'express'
import express4 from 'express4'
import Koa3 from 'koa'
import Koa2 from 'koa2'
import { bodyParser } from '@koa/bodyparser'
import { expressGate, expressGuard } from '../../adapters/express.js'
import { koaGate, koaGuard } from '../../adapters/koa.js'
import { nodeGate, nodeGuard, type GatedRequest } from '../../adapters/node.js'
import type { Gate, GateContext } from '../../src/index.js'

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

export const FRAMEWORKS: readonly Framework[] = [
  { name: 'Express 5', listener: expressApp(express5) },
  { name: 'Express 4', listener: expressApp(express4) },
  { name: 'Koa 3', listener: koaApp(Koa3) },
  { name: 'Koa 2', listener: koaApp(Koa2) },
  { name: 'node:http', listener: nodeApp },
]

/** Mounts where a body parser runs before the gate: the gate must reuse what it parsed. */
export const FRAMEWORKS_WITH_BODY_PARSERS: readonly Framework[] = [
  { name: 'Express 5 behind express.json() and express.urlencoded()', listener: expressApp(express5, true) },
  { name: 'Koa 3 behind @koa/bodyparser', listener: koaApp(Koa3, true) },
]
