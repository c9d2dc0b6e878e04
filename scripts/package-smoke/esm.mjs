// Uses the installed tarball exactly as an ESM user would.
import assert from 'node:assert/strict'
import http from 'node:http'
import express from 'express'
import Fastify from 'fastify'
import { Hono } from 'hono'
import Koa from 'koa'
import { createGate, GateError, MemoryStore } from 'open-data-gate'
import { expressGate } from 'open-data-gate/express'
import { fastifyGate } from 'open-data-gate/fastify'
import { fetchGate } from 'open-data-gate/fetch'
import { honoGate } from 'open-data-gate/hono'
import { koaGate } from 'open-data-gate/koa'
import { nodeGate, runGate } from 'open-data-gate/node'
import { PostgresStore } from 'open-data-gate/postgres'
import { checkStore } from 'open-data-gate/testing'

const gate = createGate({ store: new MemoryStore() })
const { appToken } = await gate.applications.register({ name: 'smoke' })

const expressApp = express().use(expressGate(gate)).get('/resource/x.json', (req, res) => res.json({ app: req.gate.application?.name }))
const koaApp = new Koa().use(koaGate(gate)).use((ctx) => { ctx.body = { app: ctx.state.gate.application?.name } })
const nodeHandler = nodeGate(gate, (req, res) => res.end(JSON.stringify({ app: req.gate.application?.name })))
assert.equal(typeof runGate, 'function')

for (const [name, listener] of [['express', expressApp], ['koa', koaApp.callback()], ['node', nodeHandler]]) {
  const server = http.createServer(listener)
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${server.address().port}/resource/x.json`
  const ok = await fetch(base, { headers: { 'x-app-token': appToken } })
  assert.equal(ok.status, 200, name)
  assert.deepEqual(await ok.json(), { app: 'smoke' })
  const refused = await fetch(base, { headers: { 'x-app-token': 'nope' } })
  assert.equal(refused.status, 403, name)
  server.close()
}
// The Fetch-standard mounts, on Node's own Request: the bare adapter, Hono, and Fastify's plugin.
const fetchHandler = fetchGate(gate, (request, context) => Response.json({ app: context.application?.name }), { clientAddress: () => '127.0.0.1', https: false })
const hono = new Hono().use(honoGate(gate, { clientAddress: () => '127.0.0.1', https: false })).get('/resource/x.json', (c) => c.json({ app: c.get('gate').application?.name }))
const fastify = Fastify()
await fastify.register(fastifyGate, { gate })
fastify.get('/resource/x.json', async (request) => ({ app: request.gate.application?.name }))
for (const [name, call] of [
  ['fetch', (headers) => fetchHandler(new Request('http://data.example/resource/x.json', { headers }))],
  ['hono', (headers) => hono.request('http://data.example/resource/x.json', { headers })],
  ['fastify', async (headers) => {
    const res = await fastify.inject({ url: '/resource/x.json', headers })
    return new Response(res.body, { status: res.statusCode })
  }],
]) {
  const ok = await call({ 'x-app-token': appToken })
  assert.equal(ok.status, 200, name)
  assert.deepEqual(await ok.json(), { app: 'smoke' })
  assert.equal((await call({ 'x-app-token': 'nope' })).status, 403, name)
}
assert.throws(() => fetchGate(gate, () => new Response()), TypeError)
await fastify.close()
await assert.rejects(gate.applications.register({ name: 'x', callbackPrefix: 'http://insecure' }), TypeError)
assert.equal(typeof GateError, 'function')
// The store and its migrations load from the ESM build (no connection is made until a query).
const pgStore = new PostgresStore({ connectionString: 'postgres://nobody@127.0.0.1:1/none', sweepIntervalMs: 0 })
assert.equal(PostgresStore.schemaVersion, 10)
await pgStore.close()
// The conformance kit, on the store users get from the main entry point.
const report = await checkStore(() => new MemoryStore())
assert.deepEqual(report.failed, [])
assert.ok(report.passed.length > 40, `the kit ran ${report.passed.length} checks`)
console.log('ESM: ok')
