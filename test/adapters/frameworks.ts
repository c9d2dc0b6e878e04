/**
 * The same small data API mounted in every supported framework, so one suite can hold
 * each adapter to the same HTTP behaviour.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import express5 from 'express'
import express4 from 'express4'
import Koa3 from 'koa'
import Koa2 from 'koa2'
import { expressGate } from '../../adapters/express.js'
import { koaGate } from '../../adapters/koa.js'
import { nodeGate, type GatedRequest } from '../../adapters/node.js'
import type { Gate, GateContext } from '../../src/index.js'

export interface Framework {
  readonly name: string
  /** A request listener: the gate mounted, then `GET /resource/<id>.json` answering what the gate found. */
  listener(gate: Gate): RequestListener
}

/** What every framework's dataset route answers. */
export interface DatasetBody {
  dataset: string
  gate: GateContext
}

const DATASET = /^\/resource\/([a-z0-9-]+)\.json$/

function expressApp(express: typeof express5) {
  return (gate: Gate): RequestListener => {
    const app = express()
    app.use(expressGate(gate))
    app.get('/resource/:id.json', (req, res) => {
      res.json({ dataset: req.params.id, gate: req.gate } satisfies DatasetBody)
    })
    return app as unknown as RequestListener
  }
}

function koaApp(Koa: typeof Koa3) {
  return (gate: Gate): RequestListener => {
    const app = new Koa()
    app.use(koaGate(gate))
    app.use((ctx) => {
      const match = DATASET.exec(ctx.path)
      if (ctx.method !== 'GET' || match === null) return
      ctx.body = { dataset: match[1] as string, gate: ctx.state.gate } satisfies DatasetBody
    })
    return app.callback()
  }
}

function nodeApp(gate: Gate): RequestListener {
  return nodeGate(gate, (req: GatedRequest, res: ServerResponse) => {
    const match = DATASET.exec(new URL(req.url ?? '/', 'http://x').pathname)
    if (req.method !== 'GET' || match === null) {
      res.statusCode = 404
      res.end()
      return
    }
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ dataset: match[1] as string, gate: req.gate } satisfies DatasetBody))
  }) as (req: IncomingMessage, res: ServerResponse) => void
}

export const FRAMEWORKS: readonly Framework[] = [
  { name: 'Express 5', listener: expressApp(express5) },
  { name: 'Express 4', listener: expressApp(express4) },
  { name: 'Koa 3', listener: koaApp(Koa3) },
  { name: 'Koa 2', listener: koaApp(Koa2) },
  { name: 'node:http', listener: nodeApp },
]
