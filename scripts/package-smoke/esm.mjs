// Uses the installed tarball exactly as an ESM user would.
import assert from 'node:assert/strict'
import http from 'node:http'
import express from 'express'
import Koa from 'koa'
import { createGate, GateError, MemoryStore } from 'open-data-gate'
import { expressGate } from 'open-data-gate/express'
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
await assert.rejects(gate.applications.register({ name: 'x', callbackPrefix: 'http://insecure' }), TypeError)
assert.equal(typeof GateError, 'function')
// The store and its migrations load from the ESM build (no connection is made until a query).
const pgStore = new PostgresStore({ connectionString: 'postgres://nobody@127.0.0.1:1/none', sweepIntervalMs: 0 })
assert.equal(PostgresStore.schemaVersion, 5)
await pgStore.close()
// The conformance kit, on the store users get from the main entry point.
const report = await checkStore(() => new MemoryStore())
assert.deepEqual(report.failed, [])
assert.ok(report.passed.length > 40, `the kit ran ${report.passed.length} checks`)
console.log('ESM: ok')
