// Type-checked against the installed tarball: the public types, and req.gate / ctx.state.gate.
import http from 'node:http'
import { after, describe, it } from 'node:test'
import express from 'express'
import Fastify from 'fastify'
import Koa from 'koa'
import { createGate, MemoryStore, type GateContext, type GateStore, type ThrottleInfo } from 'open-data-gate'
import { expressGate } from 'open-data-gate/express'
import { fastifyGate, fastifyGuard } from 'open-data-gate/fastify'
import { koaGate } from 'open-data-gate/koa'
import { nodeGate } from 'open-data-gate/node'
import { PostgresStore } from 'open-data-gate/postgres'
import pg from 'pg'
import { RedisStore, type RedisStoreOptions } from 'open-data-gate/redis'
import { checkStore, describeStore, type StoreReport } from 'open-data-gate/testing'

const gate = createGate({
  throttle: { application: { limit: 1000, windowMs: 3_600_000 }, anonymous: { limit: 60, windowMs: 3_600_000, scope: 'shared' } },
  trustProxy: ['10.0.0.0/8'],
})
const redisOptions: RedisStoreOptions = { url: 'redis://127.0.0.1:6379', prefix: 'smoke:', commandTimeoutMs: 200 }
const redisStore: GateStore = new RedisStore({ ...redisOptions, redisOptions: { lazyConnect: true } })
void redisStore

gate.on('throttled', (event) => console.log(event.policy, event.retryAfterMs))

const app = express()
app.use(expressGate(gate))
app.get('/resource/:id.json', (req, res) => {
  const context: GateContext = req.gate
  const throttle: ThrottleInfo | null = req.gate.throttle
  res.json({ id: req.params.id, app: context.application?.name ?? null, remaining: throttle?.remaining })
})

const koa = new Koa()
koa.use(koaGate(gate))
koa.use((ctx) => {
  ctx.body = { secure: ctx.state.gate.secure }
})

http.createServer(nodeGate(gate, (req, res) => res.end(req.gate.clientIp)))

// Fastify: the plugin's options, request.gate through the module augmentation, the guard as a preHandler.
const fastify = Fastify()
void fastify.register(fastifyGate, { gate })
fastify.get('/private/:id', { preHandler: fastifyGuard(gate, { auth: 'required' }) }, async (request) => {
  const context: GateContext = request.gate
  return { user: context.user?.username ?? null }
})

export const store: GateStore = createGate().store

// A pg.Pool of the user's own fits the store's pool type.
export const pgStore: GateStore = new PostgresStore({ pool: new pg.Pool(), schema: 'portal' })

// The conformance kit's types, with node:test's describe, it and after.

describeStore('MemoryStore', () => new MemoryStore(), { describe, it, after, cleanup: async (store: MemoryStore) => void store })
const pending: Promise<StoreReport> = checkStore(async () => new MemoryStore(), { timeoutMs: 5_000 })
void pending
