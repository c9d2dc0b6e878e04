// Serves ONE variant on 127.0.0.1. Under bench/run.mjs it talks over IPC: it reports
// { type: 'ready', port, headers } and answers 'usage' with its CPU time and request
// count, both read in this process at the same instant, so the parent can divide them
// exactly over any window. Standalone (for profiling: node --cpu-prof bench/server.mjs
// node-gate 3000) it prints the port and the headers to send.
import http from 'node:http'
import { variants } from './variants.mjs'

const [name, port = '0'] = process.argv.slice(2)
const variant = variants.find((v) => v.name === name)
if (!variant) {
  console.error(`server: unknown variant "${name}"; known: ${variants.map((v) => v.name).join(', ')}`)
  process.exit(2)
}

const made = await variant.create()
const { listener, headers = {}, queries } = typeof made === 'function' ? { listener: made } : made

let requests = 0
// While run.mjs sends its requests one at a time ('trips-on'), each request's Redis round
// trips and commands (counted in variants.mjs), in order.
let trips = null
const server = http.createServer((req, res) => {
  requests++
  if (trips !== null) {
    globalThis.benchRoundTrips.begin()
    const list = trips
    res.once('finish', () => list.push(globalThis.benchRoundTrips.end()))
  }
  listener(req, res)
})

server.listen(Number(port), '127.0.0.1', () => {
  const ready = { type: 'ready', port: server.address().port, headers: { ...variant.headers, ...headers } }
  if (process.send) process.send(ready)
  else console.log(JSON.stringify(ready))
})

if (process.send) {
  process.on('message', (msg) => {
    if (msg === 'trips-on' && globalThis.benchRoundTrips !== undefined) {
      globalThis.benchRoundTrips.on()
      trips = []
      process.send({ type: 'trips-on' })
    }
    if (msg === 'trips-off') {
      globalThis.benchRoundTrips?.off()
      process.send({ type: 'trips', requests: trips ?? [] })
      trips = null
    }
    if (msg === 'usage') process.send({ type: 'usage', cpu: process.cpuUsage(), requests, redisCommands: globalThis.benchRedisCommands?.() ?? null, queries: queries?.() ?? null })
  })
  // The parent is gone (even if it was SIGKILLed): nobody will stop us otherwise.
  process.on('disconnect', () => process.exit(0))
}
