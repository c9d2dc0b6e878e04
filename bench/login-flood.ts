// npx tsx bench/login-flood.ts: how long a cold password sign-in takes from a quiet
// address, idle and while other addresses flood the gate with password guesses
// (distinct usernames, so each guess would cost a full scrypt run).
//
// The gate runs in a child process (node:http adapter, default scrypt cost, the password
// cache off so every sign-in is cold), behind a "trusted proxy" that says https, so the
// clients need no TLS. Clients bind 127.0.0.x as their source address: the gate sees one
// client per loopback address.
//
// Knobs (env): FLOOD_ADDRESSES=1 (flooding addresses, from 127.0.0.2) FLOOD_CONCURRENCY=64
// (requests in flight per flooding address) LOGINS=5 (measured sign-ins per phase)
// FLOOD_OPTIONS='{"basic":{...}}' (extra gate options, JSON) FLOOD_AUTH=0 (a control: the
// same flood without credentials, so it costs HTTP work but no hashing).
import { fork, type ChildProcess } from 'node:child_process'
import http from 'node:http'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

const PASSWORD = 'correct horse battery'
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

if (process.argv[2] === 'serve') {
  const { createGate } = await import('../src/index.js')
  const { nodeGate } = await import('../adapters/node.js')
  const extra = JSON.parse(process.env.FLOOD_OPTIONS ?? '{}') as { basic?: object }
  const gate = createGate({ trustProxy: 'loopback', throttle: false, ...extra, basic: { requireAppToken: false, cacheTtlMs: 0, ...extra.basic } })
  await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada', email: 'ada@example.org' })
  const server = http.createServer(nodeGate(gate, (_req, res) => res.end('ok')))
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as { port: number }).port }))
} else {
  const addresses = Number(process.env.FLOOD_ADDRESSES ?? 1)
  const concurrency = Number(process.env.FLOOD_CONCURRENCY ?? 64)
  const logins = Number(process.env.LOGINS ?? 5)
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['serve'], { execArgv: ['--import', 'tsx'] })
  const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve((m as { port: number }).port)))

  const send = (localAddress: string, authorization: string) =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port, path: '/resource/x.json', localAddress, agent: false, headers: { authorization, 'x-forwarded-proto': 'https' } },
        (res) => {
          res.resume()
          res.on('end', () => resolve(res.statusCode ?? 0))
        },
      )
      req.on('error', reject)
      req.end()
    })
  const login = async () => {
    const start = performance.now()
    const status = await send('127.0.0.9', basic('ada', PASSWORD))
    if (status !== 200) throw new Error(`the quiet sign-in got ${status}`)
    return performance.now() - start
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number

  await login() // warm-up: the decoy hash, JIT
  const idle: number[] = []
  for (let i = 0; i < logins; i++) idle.push(await login())

  let flooding = true
  const statuses = new Map<number, number>()
  let guess = 0
  const flooder = async (address: string) => {
    while (flooding) {
      const authorization = process.env.FLOOD_AUTH === '0' ? '' : basic(`nobody${guess++}`, 'wrong password here')
      const status = await send(address, authorization).catch(() => 0)
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
    }
  }
  const floods: Promise<void>[] = []
  for (let a = 0; a < addresses; a++) for (let c = 0; c < concurrency; c++) floods.push(flooder(`127.0.0.${2 + a}`))
  await new Promise((resolve) => setTimeout(resolve, 1000)) // let the flood fill every queue
  const during: number[] = []
  for (let i = 0; i < logins; i++) during.push(await login())
  flooding = false
  await Promise.all(floods)
  child.kill()

  const fmt = (values: number[]) => `median ${median(values).toFixed(0)} ms, max ${Math.max(...values).toFixed(0)} ms`
  console.log(`cold sign-in from a quiet address, idle:          ${fmt(idle)}`)
  console.log(`during a flood from ${addresses} address(es) x ${concurrency} in flight: ${fmt(during)}`)
  console.log(`flood answers by status: ${JSON.stringify(Object.fromEntries(statuses))}`)
}
