// The stacks the bench compares. Each variant runs alone in its own server process
// (bench/server.mjs), so imports live inside `create`: a variant's dependencies, and
// anything they patch at load time, never reach the other variants' processes.
//
// A variant:
//   name       unique, used by BENCH_ONLY and on the server's command line
//   framework  'node' | 'express' | 'koa' | 'fastify' | 'hono': the table it is printed in
//   baseline   the bare variant of the same framework; ratios are taken to it within a round
//   path       the request path autocannon hits
//   headers    optional static request headers
//   expectHeaders  optional { 'lower-case-name': RegExp } the startup probe checks on
//              the response, so a middleware that is mounted but not doing its job (a
//              token silently ignored, a default limit) can't pass as "fast"
//   target     optional minimum ratio to the baseline, printed as PASS/MISS
//   peer       optional variant of the same framework it must serve at least as many req/s
//              as (the host's own limiter), as a median of the rounds' ratios: PASS/MISS
//   redis      optional: on the bench's redis-server (true), or on its three-node Redis
//              Cluster ('cluster'); run.mjs starts them and reports Redis commands, round
//              trips and Redis CPU per request
//   create     async () => listener  |  { listener, headers, queries }
//              `headers` there are merged over the static ones: for credentials the
//              variant only knows after its setup (a registered app's token, a Basic
//              password, an OAuth access token, ...). `queries`, for a variant on a
//              database, returns how many statements its store has sent so far: the run
//              reports statements per request.
//
// Variants on PostgreSQL use DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test),
// in the schema odg_bench, made afresh by each server process and dropped by cleanup().

const PATH = '/resource/x.json'
const BODY = '{"ok":true}'

// Limits no run can reach: a 429 would measure refusals instead of the middleware.
const HUGE = { limit: 1_000_000_000, windowMs: 3_600_000 }
// A plan of three limits as an operator writes one: two rolling windows and a daily quota,
// each too large to refuse (the rows that time several limits against HUGE alone).
const PLAN3 = [
  { name: 'minute', limit: 1_000_000_000, windowMs: 60_000 },
  { name: 'hour', limit: 1_000_000_000, windowMs: 3_600_000 },
  { name: 'day', limit: 1_000_000_000, period: 'day' },
]

const nodeHandler = (req, res) => {
  res.setHeader('content-type', 'application/json')
  res.end(BODY)
}

/**
 * Counts the commands an ioredis client sends (what MONITOR would show: a script's inner
 * calls are not sent, so not counted); the server process reports the count to run.mjs
 * with its CPU usage. A Cluster client routes a pipeline by its third argument: all are
 * passed on.
 */
function countRedisCommands(client) {
  let sent = 0
  const send = client.sendCommand.bind(client)
  client.sendCommand = (...args) => {
    sent++
    return send(...args)
  }
  globalThis.benchRedisCommands = () => sent
  countRoundTrips(client)
}

/**
 * Round trips per request, counted (not timed) while run.mjs sends one request at a time
 * (bench/server.mjs turns it on): each command sent is one round trip deeper than the
 * deepest command whose reply had arrived when it was sent; a request's round trips are its
 * deepest command's. Hooked where ioredis hands each command to a connection (each master
 * of a cluster), and on the command's own resolve and reject, which its reply calls before
 * anything awaiting it runs. Off under load, where one boolean is all it costs.
 */
function countRoundTrips(client) {
  let on = false
  let epoch = 0
  let replied = 0
  let deepest = 0
  let commands = 0
  const hooked = new WeakSet()
  const hook = (connection) => {
    if (hooked.has(connection)) return
    hooked.add(connection)
    const send = connection.sendCommand
    connection.sendCommand = function (command, ...rest) {
      if (on) {
        const mine = epoch
        const depth = replied + 1
        deepest = Math.max(deepest, depth)
        commands++
        const { resolve, reject } = command
        const arrived = () => { if (mine === epoch) replied = Math.max(replied, depth) }
        command.resolve = (value) => { arrived(); resolve(value) }
        command.reject = (error) => { arrived(); reject(error) }
      }
      return send.call(this, command, ...rest)
    }
  }
  globalThis.benchRoundTrips = {
    on() {
      for (const connection of client.isCluster ? client.nodes('master') : [client]) hook(connection)
      on = true
    },
    begin() {
      epoch++
      replied = deepest = commands = 0
    },
    end: () => ({ roundTrips: deepest, commands }),
    off() {
      on = false
    },
  }
}

// BENCH_STORE_TIMEOUT_MS: the gate's storeTimeoutMs and the Redis store's command timeout,
// for a server run under valgrind (bench/redis-client.mjs says how), so slow that the
// defaults would time its store calls out and measure the fallback instead.
const STORE_TIMEOUT_MS = process.env.BENCH_STORE_TIMEOUT_MS ? Number(process.env.BENCH_STORE_TIMEOUT_MS) : undefined
const storeTimeout = STORE_TIMEOUT_MS === undefined ? {} : { storeTimeoutMs: STORE_TIMEOUT_MS }
// Usage is flushed every 10 s of the clock. At full speed that is one flush in some
// 300,000 requests; under valgrind, 50 times slower, in a few thousand, and whether one
// lands in the counted window moved a count by 5,000 instructions per request. So
// bench/instructions.mjs sets this to an hour: its counts leave out periodic work, as
// full speed nearly does.
const USAGE_FLUSH_MS = process.env.BENCH_USAGE_FLUSH_MS ? Number(process.env.BENCH_USAGE_FLUSH_MS) : undefined
const usageFlush = USAGE_FLUSH_MS === undefined ? {} : { usage: { flushIntervalMs: USAGE_FLUSH_MS } }

/** The gate's store: in memory, or a RedisStore on the bench's own redis-server (run.mjs starts it). */
async function benchStore(redis, redisOptions = {}) {
  if (!redis) return {}
  const { RedisStore } = await import('../dist/redis.js')
  const timeout = STORE_TIMEOUT_MS === undefined ? {} : { commandTimeoutMs: STORE_TIMEOUT_MS }
  const store = new RedisStore({ url: process.env.BENCH_REDIS_URL, prefix: `bench:${process.pid}:`, redisOptions, ...timeout })
  countRedisCommands(store.client)
  return { store }
}

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const BENCH_SCHEMA = 'odg_bench'

/**
 * The gate's store options for a layout, and a statement counter for the database ones:
 *   memory (false)  the default MemoryStore
 *   redis (true)    RedisStore alone
 *   pg              PostgresStore alone (records and rate steps)
 *   pg+memory       PostgresStore records, MemoryStore rates
 *   pg+redis        PostgresStore records, RedisStore rates (the bench's redis-server)
 * Every statement goes through pool.query (a counting wrapper); the LISTEN connection
 * and migrate() check out their own connection and are not counted.
 */
async function storeLayout(layout) {
  if (layout === false || layout === 'memory') return { options: {}, queries: undefined }
  if (layout === true || layout === 'redis') return { options: await benchStore(true), queries: undefined }
  // ioredis's auto-pipelining off (it is on in redisClientDefaults): the client's CPU per
  // command against the default's, side by side (see docs/performance.md). On a single
  // server the store now sends its scripts itself, one write per turn either way, so the
  // request path is the same in both rows; the option still governs plain commands.
  if (layout === 'redis-no-autopipelining') return { options: await benchStore(true, { enableAutoPipelining: false }), queries: undefined }
  // RedisStore on the bench's three-node Redis Cluster (run.mjs starts it), on a client made
  // as docs/guides/redis.md shows.
  if (layout === 'cluster') {
    const { Cluster } = await import('ioredis')
    const { RedisStore, redisClientDefaults } = await import('../dist/redis.js')
    const nodes = process.env.BENCH_REDIS_CLUSTER.split(',').map((address) => ({ host: '127.0.0.1', port: Number(address) }))
    const client = new Cluster(nodes, { enableOfflineQueue: false, enableAutoPipelining: true, redisOptions: redisClientDefaults(STORE_TIMEOUT_MS) })
    client.on('error', () => {})
    await new Promise((resolve) => client.once('ready', resolve))
    countRedisCommands(client)
    return { options: { store: new RedisStore({ client, prefix: `bench:${process.pid}:` }) }, queries: undefined }
  }
  const { default: pg } = await import('pg')
  const { PostgresStore } = await import('../dist/postgres.js')
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 10 })
  await pool.query(`DROP SCHEMA IF EXISTS ${BENCH_SCHEMA} CASCADE`)
  let queries = 0
  const counting = { query: (q) => { queries++; return pool.query(q) }, connect: () => pool.connect(), end: () => pool.end() }
  const store = new PostgresStore({ pool: counting, schema: BENCH_SCHEMA, sweepIntervalMs: 0 })
  await store.migrate()
  const options = { store }
  if (layout === 'pg+memory') {
    const { MemoryStore } = await import('../dist/index.js')
    options.rateStore = new MemoryStore()
  } else if (layout === 'pg+redis') {
    options.rateStore = (await benchStore(true)).store
  }
  return { options, queries: () => queries }
}

/** Drops what the database variants left: run once at the end of the bench. */
export async function cleanup() {
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 2000 })
  try {
    await client.connect()
    await client.query(`DROP SCHEMA IF EXISTS ${BENCH_SCHEMA} CASCADE`)
  } catch {
    // no database, no leftovers
  } finally {
    await client.end().catch(() => {})
  }
}

async function gateWithApp(layout = 'memory', extra = {}) {
  const { createGate } = await import('../dist/index.js')
  const { options, queries } = await storeLayout(layout)
  const gate = createGate({ ...options, throttle: { application: HUGE, anonymous: HUGE }, ...storeTimeout, ...usageFlush, ...extra })
  const { appToken } = await gate.applications.register({ name: 'bench' })
  return { gate, headers: { 'x-app-token': appToken }, queries }
}

const PASSWORD = 'correct horse battery staple'
const basicHeader = (user, password) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

/**
 * A gate with an application, a user, an API key and an access token. The bench servers
 * speak plain http, so loopback is trusted as the TLS-terminating proxy and requests say
 * X-Forwarded-Proto: https, as behind a load balancer (a token sent over plain http would
 * rightly be revoked).
 */
async function gateWithCredentials(kind, layout = 'memory', application = HUGE) {
  const { createGate } = await import('../dist/index.js')
  const { options, queries } = await storeLayout(layout)
  const gate = createGate({ ...options, throttle: { application, anonymous: HUGE }, trustProxy: 'loopback', ...storeTimeout, ...usageFlush })
  const { appToken } = await gate.applications.register({ name: 'bench' })
  const user = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada', email: 'ada@example.org' })
  const headers = { 'x-app-token': appToken, 'x-forwarded-proto': 'https' }
  if (kind === 'oauth') headers.authorization = `OAuth ${(await gate.tokens.issue({ userId: user.id, appToken })).accessToken}`
  if (kind === 'api-key') {
    const { keyId, keySecret } = await gate.apiKeys.create(user.id, { name: 'bench' })
    headers.authorization = basicHeader(keyId, keySecret)
  }
  if (kind === 'password') headers.authorization = basicHeader('ada', PASSWORD)
  return { gate, headers, queries }
}

async function expressApp(...middleware) {
  const { default: express } = await import('express')
  const app = express()
  for (const mw of middleware) app.use(mw)
  app.get(PATH, (req, res) => res.json({ ok: true }))
  return app
}

async function koaApp(...middleware) {
  const { default: Koa } = await import('koa')
  const app = new Koa()
  for (const mw of middleware) app.use(mw)
  app.use((ctx) => { ctx.body = { ok: true } })
  return app.callback()
}

/** Fastify 5, through the request handler `fastify.listen()` would give node:http. */
async function fastifyApp(register) {
  const { default: Fastify } = await import('fastify')
  const app = Fastify()
  if (register) await register(app)
  app.get(PATH, async () => ({ ok: true }))
  await app.ready()
  return (req, res) => app.routing(req, res)
}

/** Hono 4 on @hono/node-server's request listener. */
async function honoApp(...middleware) {
  const { Hono } = await import('hono')
  const { getRequestListener } = await import('@hono/node-server')
  const app = new Hono()
  for (const mw of middleware) app.use(mw)
  app.get(PATH, (c) => c.json({ ok: true }))
  return getRequestListener(app.fetch)
}

// "app": the token was recognised; a missing or ignored one would be counted as "anon".
const GATE_HEADERS = { 'ratelimit-policy': /^"app";q=1000000000;/, ratelimit: /^"app";/ }

/**
 * The handlers below answer 401 unless the request was authenticated as ada, and a non-2xx
 * aborts the run: no extra header, so the response is the bare variant's.
 */
const AUTH_HEADERS = GATE_HEADERS
const PLAN3_HEADERS = { 'ratelimit-policy': /^"minute";q=1000000000;w=60, "hour";q=1000000000;w=3600, "day";q=1000000000;w=86400$/, ratelimit: /^"(minute|hour|day)";r=\d+;t=\d+$/ }
const userHandler = (req, res) => {
  if (req.gate.user?.username !== 'ada') {
    res.statusCode = 401
    res.end()
    return
  }
  nodeHandler(req, res)
}

/** The gate with credentials, as a variant of each framework (on the memory store, on Redis, or on Redis Cluster: `redis` 'cluster'). */
function authVariants(framework, baseline, kinds, targets = {}, redis = false) {
  const store = redis === 'cluster' ? 'cluster-' : redis ? 'redis-' : ''
  return kinds.map((kind) => ({
    name: `${framework}-gate-${store}${kind}`, framework, baseline, path: PATH, expectHeaders: AUTH_HEADERS,
    ...(targets[kind] === undefined ? {} : { target: targets[kind] }),
    ...(redis && { redis }),
    create: async () => {
      const { gate, headers } = await gateWithCredentials(kind, redis)
      if (framework === 'node') {
        const { nodeGate } = await import('../dist/node.js')
        return { listener: nodeGate(gate, userHandler), headers }
      }
      if (framework === 'express') {
        const { expressGate } = await import('../dist/express.js')
        const { default: express } = await import('express')
        const app = express()
        app.use(expressGate(gate))
        app.get(PATH, (req, res) => (req.gate.user?.username === 'ada' ? res.json({ ok: true }) : res.sendStatus(401)))
        return { listener: app, headers }
      }
      const { koaGate } = await import('../dist/koa.js')
      const { default: Koa } = await import('koa')
      const app = new Koa()
      app.use(koaGate(gate))
      app.use((ctx) => {
        if (ctx.state.gate.user?.username === 'ada') ctx.body = { ok: true }
        else ctx.status = 401
      })
      return { listener: app.callback(), headers }
    },
  }))
}

/**
 * The closest off-the-shelf Express stack: express-rate-limit, then passport with
 * passport-http-bearer (a token map) or passport-http Basic (scrypt, with a success cache
 * and single-flight, as any real deployment needs; without them scrypt runs per request).
 */
async function passportApp(kind) {
  const { default: express } = await import('express')
  const { rateLimit } = await import('express-rate-limit')
  const { default: passport } = await import('passport')
  const user = { username: 'ada' }
  let headers
  if (kind === 'bearer') {
    const { Strategy } = await import('passport-http-bearer')
    const tokens = new Map([['bench-token-0123456789abcdefghijklmnopq', user]])
    passport.use(new Strategy((token, done) => done(null, tokens.get(token) ?? false)))
    headers = { authorization: 'Bearer bench-token-0123456789abcdefghijklmnopq' }
  } else {
    const { BasicStrategy } = await import('passport-http')
    const { scrypt, randomBytes, timingSafeEqual } = await import('node:crypto')
    const salt = randomBytes(16)
    const hash = (password) => new Promise((resolve, reject) => scrypt(password, salt, 32, { N: 16384 }, (e, k) => (e ? reject(e) : resolve(k))))
    const stored = await hash(PASSWORD)
    const verified = new Map()
    passport.use(new BasicStrategy((username, password, done) => {
      const key = `${username}:${password}`
      let pending = verified.get(key)
      if (pending === undefined) {
        pending = hash(password).then((k) => username === 'ada' && timingSafeEqual(k, stored))
        verified.set(key, pending)
      }
      pending.then((ok) => done(null, ok ? user : false), done)
    }))
    headers = { authorization: basicHeader('ada', PASSWORD) }
  }
  const app = express()
  app.use(rateLimit({ windowMs: HUGE.windowMs, limit: HUGE.limit, standardHeaders: 'draft-8', legacyHeaders: false }))
  app.use(passport.initialize())
  app.use(passport.authenticate(kind === 'bearer' ? 'bearer' : 'basic', { session: false }))
  app.get(PATH, (req, res) => (req.user?.username === 'ada' ? res.json({ ok: true }) : res.sendStatus(401)))
  return { listener: app, headers }
}

export const variants = [
  {
    name: 'node-bare', framework: 'node', baseline: 'node-bare', path: PATH,
    create: async () => nodeHandler,
  },
  {
    // Control: the bare server again. Its distance from 1.00 is the noise of the run.
    name: 'node-bare-copy', framework: 'node', baseline: 'node-bare', path: PATH,
    create: async () => nodeHandler,
  },
  {
    // Floor: only the two RateLimit headers every throttled response carries, no work at all.
    name: 'node-ratelimit-headers', framework: 'node', baseline: 'node-bare', path: PATH,
    create: async () => (req, res) => {
      res.setHeader('ratelimit-policy', '"app";q=1000000000;w=3600')
      res.setHeader('ratelimit', '"app";r=999999999;t=4')
      nodeHandler(req, res)
    },
  },
  {
    // Hand-rolled floor: the least any correct app-token throttle does (a header read, a
    // map lookup, one GCRA step, two formatted headers), with nothing else. The gate's
    // distance from it is what its features cost.
    name: 'node-handrolled', framework: 'node', baseline: 'node-bare', path: PATH,
    create: async () => {
      const apps = new Map([['tok1234567890abcdefghij', { limit: 1e9 }]])
      const tats = new Map()
      const T = 3600, tau = 1e9 * T
      return { headers: { 'x-app-token': 'tok1234567890abcdefghij' }, listener: (req, res) => {
        const token = req.headers['x-app-token']
        const app = apps.get(token)
        if (!app) { res.statusCode = 403; res.end(); return }
        const now = Date.now() * 1000
        const stored = tats.get(token)
        const tat = stored === undefined || stored < now ? now : stored
        const newTat = tat + T
        const allowAt = newTat - tau
        if (now < allowAt) { res.statusCode = 429; res.end(); return }
        tats.set(token, newTat)
        const remaining = Math.floor((now - allowAt) / T)
        res.setHeader('ratelimit-policy', '"app";q=1000000000;w=3600')
        res.setHeader('ratelimit', `"app";r=${remaining};t=${Math.ceil((newTat - now) / 1e6)}`)
        req.gate = { application: app, remaining }
        nodeHandler(req, res)
      } }
    },
  },
  {
    name: 'node-gate', framework: 'node', baseline: 'node-bare', path: PATH,
    expectHeaders: GATE_HEADERS, target: 0.9,
    create: async () => {
      const { nodeGate } = await import('../dist/node.js')
      const { gate, headers } = await gateWithApp()
      return { listener: nodeGate(gate, nodeHandler), headers }
    },
  },
  // Usage counting is on by default (node-gate above); this row is the same gate without
  // it, so the two side by side give its cost per request.
  {
    name: 'node-gate-usage-off', framework: 'node', baseline: 'node-bare', path: PATH,
    expectHeaders: GATE_HEADERS,
    create: async () => {
      const { nodeGate } = await import('../dist/node.js')
      const { gate, headers } = await gateWithApp('memory', { usage: false })
      return { listener: nodeGate(gate, nodeHandler), headers }
    },
  },
  // The gate with its OpenTelemetry metrics on (docs/guides/telemetry.md): the SDK's
  // MeterProvider with the Prometheus exporter's reader, as the example runs it (nothing
  // scrapes it here: collecting is the scraper's cost, not the request's). Beside node-gate,
  // the difference is what recording costs per request; off, it is one test.
  {
    name: 'node-gate-metrics', framework: 'node', baseline: 'node-bare', path: PATH,
    expectHeaders: GATE_HEADERS,
    create: async () => {
      const { nodeGate } = await import('../dist/node.js')
      const { MeterProvider } = await import('@opentelemetry/sdk-metrics')
      const { PrometheusExporter } = await import('@opentelemetry/exporter-prometheus')
      const meterProvider = new MeterProvider({ readers: [new PrometheusExporter({ preventServerStart: true })] })
      const { gate, headers } = await gateWithApp('memory', { metrics: { meterProvider } })
      return { listener: nodeGate(gate, nodeHandler), headers }
    },
  },
  // Request ids are on by default (node-gate above: one made per request, sent back in
  // X-Request-Id); this row is the same gate without them, for their cost per request.
  {
    name: 'node-gate-request-id-off', framework: 'node', baseline: 'node-bare', path: PATH,
    expectHeaders: GATE_HEADERS,
    create: async () => {
      const { nodeGate } = await import('../dist/node.js')
      const { gate, headers } = await gateWithApp('memory', { requestId: false })
      return { listener: nodeGate(gate, nodeHandler), headers }
    },
  },
  ...authVariants('node', 'node-bare', ['oauth', 'api-key', 'password']),
  {
    name: 'express-bare', framework: 'express', baseline: 'express-bare', path: PATH,
    create: () => expressApp(),
  },
  {
    name: 'express-gate', framework: 'express', baseline: 'express-bare', path: PATH,
    expectHeaders: GATE_HEADERS, target: 0.95,
    create: async () => {
      const { expressGate } = await import('../dist/express.js')
      const { gate, headers } = await gateWithApp()
      return { listener: await expressApp(expressGate(gate)), headers }
    },
  },
  {
    // What any middleware at all costs in Express: the floor under every Express variant.
    name: 'express-noop', framework: 'express', baseline: 'express-bare', path: PATH,
    create: () => expressApp((req, res, next) => next()),
  },
  {
    // Floor: only the two RateLimit headers (and the context), set by a middleware.
    name: 'express-ratelimit-headers', framework: 'express', baseline: 'express-bare', path: PATH,
    create: () => expressApp((req, res, next) => {
      res.setHeader('ratelimit-policy', '"app";q=1000000000;w=3600')
      res.setHeader('ratelimit', '"app";r=999999999;t=4')
      req.gate = { application: null }
      next()
    }),
  },
  {
    name: 'express-rate-limit', framework: 'express', baseline: 'express-bare', path: PATH,
    expectHeaders: { 'ratelimit-policy': /q=1000000000;/, ratelimit: /r=/ },
    create: async () => {
      const { rateLimit } = await import('express-rate-limit')
      return expressApp(rateLimit({
        windowMs: HUGE.windowMs, limit: HUGE.limit, standardHeaders: 'draft-8', legacyHeaders: false,
      }))
    },
  },
  ...authVariants('express', 'express-bare', ['oauth', 'api-key', 'password']),
  {
    name: 'express-passport-bearer', framework: 'express', baseline: 'express-bare', path: PATH,
    expectHeaders: { ratelimit: /r=/ },
    create: () => passportApp('bearer'),
  },
  {
    name: 'express-passport-basic', framework: 'express', baseline: 'express-bare', path: PATH,
    expectHeaders: { ratelimit: /r=/ },
    create: () => passportApp('basic'),
  },
  {
    name: 'koa-bare', framework: 'koa', baseline: 'koa-bare', path: PATH,
    create: () => koaApp(),
  },
  {
    // What any middleware at all costs in Koa: the floor under every Koa variant.
    name: 'koa-noop', framework: 'koa', baseline: 'koa-bare', path: PATH,
    create: () => koaApp((ctx, next) => next()),
  },
  {
    // Floor: only the two RateLimit headers (and the context), set by a middleware.
    name: 'koa-ratelimit-headers', framework: 'koa', baseline: 'koa-bare', path: PATH,
    create: () => koaApp((ctx, next) => {
      ctx.res.setHeader('ratelimit-policy', '"app";q=1000000000;w=3600')
      ctx.res.setHeader('ratelimit', '"app";r=999999999;t=4')
      ctx.state.gate = { application: null }
      return next()
    }),
  },
  {
    name: 'koa-gate', framework: 'koa', baseline: 'koa-bare', path: PATH,
    expectHeaders: GATE_HEADERS, target: 0.8,
    create: async () => {
      const { koaGate } = await import('../dist/koa.js')
      const { gate, headers } = await gateWithApp()
      return { listener: await koaApp(koaGate(gate)), headers }
    },
  },
  // koa-gate without request ids, so the pair shows what they cost on Koa (on node:http:
  // +0.9 µs; see docs/performance.md for Koa's gap to its target).
  {
    name: 'koa-gate-request-id-off', framework: 'koa', baseline: 'koa-bare', path: PATH,
    expectHeaders: GATE_HEADERS,
    create: async () => {
      const { koaGate } = await import('../dist/koa.js')
      const { gate, headers } = await gateWithApp('memory', { requestId: false })
      return { listener: await koaApp(koaGate(gate)), headers }
    },
  },
]

// Fastify and Hono (on Node), bare, with the gate's app-token check, and with the host's own
// limiter: the gate is to serve at least as many requests per second as that limiter.
variants.push(
  {
    name: 'fastify-bare', framework: 'fastify', baseline: 'fastify-bare', path: PATH,
    create: () => fastifyApp(),
  },
  {
    name: 'fastify-gate', framework: 'fastify', baseline: 'fastify-bare', path: PATH,
    expectHeaders: GATE_HEADERS, peer: 'fastify-rate-limit',
    create: async () => {
      const { fastifyGate } = await import('../dist/fastify.js')
      const { gate, headers } = await gateWithApp()
      return { listener: await fastifyApp((app) => app.register(fastifyGate, { gate })), headers }
    },
  },
  {
    // The host's own limiter, in memory, keyed by client address (its default): what a
    // Fastify user would otherwise mount.
    name: 'fastify-rate-limit', framework: 'fastify', baseline: 'fastify-bare', path: PATH,
    expectHeaders: { 'x-ratelimit-limit': /^1000000000$/ },
    create: async () => {
      const { default: rateLimit } = await import('@fastify/rate-limit')
      return fastifyApp((app) => app.register(rateLimit, { max: HUGE.limit, timeWindow: HUGE.windowMs }))
    },
  },
  {
    name: 'hono-bare', framework: 'hono', baseline: 'hono-bare', path: PATH,
    create: () => honoApp(),
  },
  {
    // hono-rate-limiter's in-memory store, keyed by the client address as the gate's
    // anonymous budget is, with the draft's headers.
    name: 'hono-rate-limiter', framework: 'hono', baseline: 'hono-bare', path: PATH,
    expectHeaders: { ratelimit: /./ },
    create: async () => {
      const { rateLimiter } = await import('hono-rate-limiter')
      const { getConnInfo } = await import('@hono/node-server/conninfo')
      return honoApp(rateLimiter({ windowMs: HUGE.windowMs, limit: HUGE.limit, standardHeaders: 'draft-7', keyGenerator: (c) => getConnInfo(c).remote.address ?? '' }))
    },
  },
  {
    name: 'hono-gate', framework: 'hono', baseline: 'hono-bare', path: PATH,
    expectHeaders: GATE_HEADERS, peer: 'hono-rate-limiter',
    create: async () => {
      const { honoGate } = await import('../dist/hono.js')
      const { getConnInfo } = await import('@hono/node-server/conninfo')
      const { gate, headers } = await gateWithApp()
      return { listener: await honoApp(honoGate(gate, { clientAddress: (request, c) => getConnInfo(c).remote.address, https: false })), headers }
    },
  },
)

/**
 * The gate on Express with records in PostgreSQL: alone, and with rates in another store
 * (Redis; `BENCH_PG_RATES=memory` puts them in this process's memory instead, for a
 * machine without Redis). App-token and OAuth-token requests.
 */
const PG_RATES = process.env.BENCH_PG_RATES === 'memory' ? 'pg+memory' : 'pg+redis'
for (const [suffix, layout] of [['pg', 'pg'], [PG_RATES === 'pg+redis' ? 'pg-redis' : 'pg-memrates', PG_RATES]]) {
  variants.push(
    {
      name: `express-gate-${suffix}`, framework: 'express', baseline: 'express-bare', path: PATH,
      expectHeaders: GATE_HEADERS, ...(layout === 'pg+redis' && { redis: true }),
      create: async () => {
        const { expressGate } = await import('../dist/express.js')
        const { gate, headers, queries } = await gateWithApp(layout)
        return { listener: await expressApp(expressGate(gate)), headers, queries }
      },
    },
    {
      name: `express-gate-${suffix}-oauth`, framework: 'express', baseline: 'express-bare', path: PATH,
      expectHeaders: AUTH_HEADERS, ...(layout === 'pg+redis' && { redis: true }),
      create: async () => {
        const { expressGate } = await import('../dist/express.js')
        const { gate, headers, queries } = await gateWithCredentials('oauth', layout)
        const app = await expressApp(expressGate(gate))
        return { listener: app, headers, queries }
      },
    },
  )
}

// The issue's targets: an OAuth-token request at most 10% below bare Koa, a password
// request with a warm cache at most 15% below.
variants.push(...authVariants('koa', 'koa-bare', ['oauth', 'api-key', 'password'], { oauth: 0.9, password: 0.85 }))

// The same gate on RedisStore, on the bench's own redis-server (bench/run.mjs starts it on
// BENCH_REDIS_PORT and reports the commands each server sends per request and the Redis
// server's CPU per request), and the off-the-shelf Redis limiter beside it.
variants.push(
  {
    name: 'node-gate-redis', framework: 'node', baseline: 'node-bare', path: PATH, redis: true,
    expectHeaders: GATE_HEADERS,
    create: async () => {
      const { nodeGate } = await import('../dist/node.js')
      const { gate, headers } = await gateWithApp(true)
      return { listener: nodeGate(gate, nodeHandler), headers }
    },
  },
  // A plan of three limits (PLAN3) against node-gate-redis and node-gate-redis-oauth: what
  // the extra limits cost Redis per request, in the same run.
  {
    name: 'node-gate-redis-plan3', framework: 'node', baseline: 'node-bare', path: PATH, redis: true,
    expectHeaders: PLAN3_HEADERS,
    create: async () => {
      const { nodeGate } = await import('../dist/node.js')
      const { gate, headers } = await gateWithApp(true, { throttle: { application: PLAN3, anonymous: HUGE } })
      return { listener: nodeGate(gate, nodeHandler), headers }
    },
  },
  {
    name: 'node-gate-redis-oauth-plan3', framework: 'node', baseline: 'node-bare', path: PATH, redis: true, expectHeaders: PLAN3_HEADERS,
    create: async () => {
      const { nodeGate } = await import('../dist/node.js')
      const { gate, headers } = await gateWithCredentials('oauth', true, PLAN3)
      return { listener: nodeGate(gate, userHandler), headers }
    },
  },
  {
    name: 'node-gate-redis-no-autopipelining', framework: 'node', baseline: 'node-bare', path: PATH, redis: true,
    expectHeaders: GATE_HEADERS,
    create: async () => {
      const { nodeGate } = await import('../dist/node.js')
      const { gate, headers } = await gateWithApp('redis-no-autopipelining')
      return { listener: nodeGate(gate, nodeHandler), headers }
    },
  },
  {
    name: 'node-gate-redis-usage-off', framework: 'node', baseline: 'node-bare', path: PATH, redis: true,
    expectHeaders: GATE_HEADERS,
    create: async () => {
      const { nodeGate } = await import('../dist/node.js')
      const { gate, headers } = await gateWithApp(true, { usage: false })
      return { listener: nodeGate(gate, nodeHandler), headers }
    },
  },
  {
    name: 'express-gate-redis', framework: 'express', baseline: 'express-bare', path: PATH, redis: true,
    expectHeaders: GATE_HEADERS,
    create: async () => {
      const { expressGate } = await import('../dist/express.js')
      const { gate, headers } = await gateWithApp(true)
      return { listener: await expressApp(expressGate(gate)), headers }
    },
  },
  {
    name: 'koa-gate-redis', framework: 'koa', baseline: 'koa-bare', path: PATH, redis: true,
    expectHeaders: GATE_HEADERS,
    create: async () => {
      const { koaGate } = await import('../dist/koa.js')
      const { gate, headers } = await gateWithApp(true)
      return { listener: await koaApp(koaGate(gate)), headers }
    },
  },
  ...['node', 'express', 'koa'].flatMap((fw) => authVariants(fw, `${fw}-bare`, fw === 'node' ? ['oauth', 'api-key', 'password'] : ['oauth'], {}, true)),
  // The same on Redis Cluster (run.mjs starts three masters on BENCH_CLUSTER_PORTS): a
  // request's token, user, key and rate key live on several nodes; the store sends their
  // commands at once (src/store/redis/cluster-lookup.ts).
  {
    name: 'node-gate-cluster', framework: 'node', baseline: 'node-bare', path: PATH, redis: 'cluster',
    expectHeaders: GATE_HEADERS,
    create: async () => {
      const { nodeGate } = await import('../dist/node.js')
      const { gate, headers } = await gateWithApp('cluster')
      return { listener: nodeGate(gate, nodeHandler), headers }
    },
  },
  ...authVariants('node', 'node-bare', ['oauth', 'api-key', 'password'], {}, 'cluster'),
  {
    // express + rate-limiter-flexible's RateLimiterRedis, keyed by the app token, on an
    // ioredis client with the fail-fast settings its docs recommend, with the same two
    // RateLimit headers the gate sends.
    name: 'express-rlflex-redis', framework: 'express', baseline: 'express-bare', path: PATH, redis: true,
    expectHeaders: { 'ratelimit-policy': /q=1000000000;/, ratelimit: /r=/ },
    create: async () => {
      const { Redis } = await import('ioredis')
      const { RateLimiterRedis } = await import('rate-limiter-flexible')
      const client = new Redis(process.env.BENCH_REDIS_URL, { enableOfflineQueue: false })
      await new Promise((resolve) => client.once('ready', resolve))
      countRedisCommands(client)
      const limiter = new RateLimiterRedis({ storeClient: client, keyPrefix: `rlflx:${process.pid}`, points: HUGE.limit, duration: HUGE.windowMs / 1000 })
      const app = await expressApp((req, res, next) => {
        const token = req.headers['x-app-token']
        limiter.consume(token ?? req.ip).then(
          (r) => {
            res.setHeader('ratelimit-policy', `"app";q=${HUGE.limit};w=${HUGE.windowMs / 1000}`)
            res.setHeader('ratelimit', `"app";r=${r.remainingPoints};t=${Math.ceil(r.msBeforeNext / 1000)}`)
            next()
          },
          (r) => {
            if (r instanceof Error) return next(r)
            res.setHeader('retry-after', String(Math.ceil(r.msBeforeNext / 1000)))
            res.status(429).end()
          },
        )
      })
      return { listener: app, headers: { 'x-app-token': 'tok1234567890abcdefghij' } }
    },
  },
  {
    // The off-the-shelf stack doing the gate's OAuth job on the same Redis: express +
    // rate-limiter-flexible's RateLimiterRedis (keyed by the app token, the two RateLimit
    // headers), then passport-http-bearer looking the token up in Redis (a GET of the
    // token's user). Two commands per request; no expiry, revocation or user check.
    name: 'express-rlflex-redis-passport-bearer', framework: 'express', baseline: 'express-bare', path: PATH, redis: true,
    expectHeaders: { 'ratelimit-policy': /q=1000000000;/, ratelimit: /r=/ },
    create: async () => {
      const { Redis } = await import('ioredis')
      const { RateLimiterRedis } = await import('rate-limiter-flexible')
      const { default: passport } = await import('passport')
      const { Strategy } = await import('passport-http-bearer')
      const client = new Redis(process.env.BENCH_REDIS_URL, { enableOfflineQueue: false })
      await new Promise((resolve) => client.once('ready', resolve))
      const tokenKey = (token) => `rlflx-tokens:${process.pid}:${token}`
      const token = 'bench-token-0123456789abcdefghijklmnopq'
      await client.set(tokenKey(token), JSON.stringify({ username: 'ada' }))
      countRedisCommands(client)
      const limiter = new RateLimiterRedis({ storeClient: client, keyPrefix: `rlflx:${process.pid}`, points: HUGE.limit, duration: HUGE.windowMs / 1000 })
      passport.use(new Strategy((sent, done) => {
        client.get(tokenKey(sent)).then((user) => done(null, user === null ? false : JSON.parse(user)), done)
      }))
      const app = await expressApp(
        (req, res, next) => {
          limiter.consume(req.headers['x-app-token'] ?? req.ip).then(
            (r) => {
              res.setHeader('ratelimit-policy', `"app";q=${HUGE.limit};w=${HUGE.windowMs / 1000}`)
              res.setHeader('ratelimit', `"app";r=${r.remainingPoints};t=${Math.ceil(r.msBeforeNext / 1000)}`)
              next()
            },
            (r) => {
              if (r instanceof Error) return next(r)
              res.setHeader('retry-after', String(Math.ceil(r.msBeforeNext / 1000)))
              res.status(429).end()
            },
          )
        },
        passport.initialize(),
        passport.authenticate('bearer', { session: false }),
      )
      app.get(PATH, (req, res) => (req.user?.username === 'ada' ? res.json({ ok: true }) : res.sendStatus(401)))
      return { listener: app, headers: { 'x-app-token': 'tok1234567890abcdefghij', authorization: `Bearer ${token}` } }
    },
  },
)

export const expectedBody = BODY
