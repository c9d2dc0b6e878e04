// gate.handle() alone, in process, on the in-memory store: what the decision itself costs,
// without a server or a socket, for comparing two builds of the package (this checkout and
// another commit's) where the HTTP bench's 10-15% noise would hide a change of a few percent.
//
//   npm run build && node bench/handle.mjs                     # this checkout's dist/
//   node bench/handle.mjs ../other-checkout .                  # two builds, interleaved
//   HANDLE_KINDS='app token,OAuth token' HANDLE_ROUNDS=40 node bench/handle.mjs A B
//
// Both builds are loaded into one process and measured in alternating batches of 20,000
// calls (the order flipped every round), so whatever else the machine does slows both
// alike; the figures are the medians over the rounds, and the ratio the median of each
// round's ratio. A second checkout of another commit: `git worktree add ../base <commit>`,
// its node_modules linked to this one's, and `npx tsup` there.
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
const dirs = process.argv.length > 2 ? process.argv.slice(2).map((dir) => path.resolve(dir)) : [here]
const kinds = (process.env.HANDLE_KINDS ?? 'anonymous,app token,API key,OAuth token').split(',')
const rounds = Number(process.env.HANDLE_ROUNDS ?? 30)
const BATCH = 20_000
const basic = (user, password) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

/** A gate of the build in `dir`, with one request of each kind. */
async function setUp(dir) {
  const { createGate, MemoryStore } = await import(pathToFileURL(path.join(dir, 'dist', 'index.js')).href)
  const gate = createGate({
    store: new MemoryStore(),
    logger: false,
    basic: { scrypt: { logN: 10 } },
    throttle: { application: { limit: 1_000_000_000, windowMs: 3_600_000 }, anonymous: { limit: 1_000_000_000, windowMs: 3_600_000, scope: 'ip' } },
  })
  const { appToken } = await gate.applications.register({ name: 'bench' })
  const user = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'ada@example.org' })
  const key = await gate.apiKeys.create(user.id, { name: 'k' })
  const { accessToken } = await gate.tokens.issue({ userId: user.id, appToken })
  const headers = {
    anonymous: {},
    'app token': { 'x-app-token': appToken },
    'API key': { 'x-app-token': appToken, authorization: basic(key.keyId, key.keySecret) },
    'OAuth token': { authorization: `OAuth ${accessToken}` },
  }
  const requests = Object.fromEntries(Object.entries(headers).map(([kind, h]) => [kind, { method: 'GET', url: '/resource/abcd-1234.json', headers: h, peerAddress: '203.0.113.5', tls: true }]))
  return { name: path.basename(dir), gate, requests }
}

async function run(setup, kind, n) {
  const request = setup.requests[kind]
  for (let i = 0; i < n; i++) {
    const outcome = setup.gate.handle(request)
    if (typeof outcome.then === 'function') await outcome
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const setups = []
for (const dir of dirs) setups.push(await setUp(dir))
for (const kind of kinds) {
  for (const setup of setups) await run(setup, kind, 5 * BATCH)
  const times = setups.map(() => [])
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? setups.map((_, i) => i) : setups.map((_, i) => setups.length - 1 - i)
    for (const i of order) {
      const started = performance.now()
      await run(setups[i], kind, BATCH)
      times[i].push(((performance.now() - started) * 1e6) / BATCH)
    }
  }
  const line = setups.map((setup, i) => `${setup.name} ${median(times[i]).toFixed(0)} ns`).join('  ')
  const ratio = setups.length > 1 ? `  ratio ${median(times[1].map((t, r) => t / times[0][r])).toFixed(3)}` : ''
  console.log(`${kind.padEnd(12)} ${line}${ratio}`)
}
for (const setup of setups) await setup.gate.close()
