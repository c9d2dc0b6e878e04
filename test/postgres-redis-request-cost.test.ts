/**
 * What a request costs the stores when PostgreSQL keeps the records and Redis the rate
 * counters (`store` and `rateStore`): at most one SQL query and one Redis command per
 * request, for an app token alone, an OAuth token, an API key and a password verified
 * earlier. The queries are counted by a pool that wraps the test's `pg.Pool` (the store
 * takes any pool of that shape), the Redis commands by the server's own `INFO
 * commandstats`, on a redis-server this file starts on its own port (19451) so that no
 * other client's commands are counted.
 *
 * The requests measured are warm, as most are: the application is in the gate's copy, the
 * password in its cache of verified ones, and the daily "last used" writes of the key and
 * the grant are done (each costs one more query, once a day per key or grant and process).
 */
import { setImmediate as tick, setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGate, type Gate, type GateOutcome } from '../src/index.js'
import { PostgresStore, type PostgresPool, type PostgresPoolClient, type PostgresQuery } from '../src/store/postgres/store.js'
import { RedisStore } from '../src/store/redis/store.js'
import { DATABASE_URL, dropSchema, freshSchema, postgresAvailable } from './support/postgres.js'
import { monitorCommands, type CommandLog } from './redis/monitor.js'
import { OwnRedisServer, redisBinariesAvailable } from './redis/servers.js'
import { coreRequest } from './support/requests.js'

const available = (await postgresAvailable()) && redisBinariesAvailable('PostgreSQL records with Redis rates')
const PASSWORD = 'correct horse battery'

/** `pool`, counting every statement sent through it or through a connection checked out of it. */
function countingPool(pool: pg.Pool): { pool: PostgresPool; sent: string[] } {
  const sent: string[] = []
  const counting: PostgresPool = {
    query(query: PostgresQuery) {
      sent.push(query.text)
      return pool.query(query as pg.QueryConfig)
    },
    async connect() {
      const client = await pool.connect()
      const query = (statement: PostgresQuery) => {
        sent.push(statement.text)
        return client.query(statement as pg.QueryConfig)
      }
      return new Proxy(client, {
        get(target, property) {
          if (property === 'query') return query
          const value: unknown = Reflect.get(target, property, target)
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
        },
      }) as unknown as PostgresPoolClient
    },
    end: () => pool.end(),
  }
  return { pool: counting, sent }
}

describe.skipIf(!available)('a request on PostgreSQL records and Redis rates', () => {
  const redis = new OwnRedisServer(19451)
  const schema = freshSchema('cost')
  let pool: pg.Pool
  let admin: Redis
  let monitor: CommandLog
  let store: PostgresStore
  let rates: RedisStore
  let gate: Gate
  let sent: string[]

  beforeAll(async () => {
    await redis.start()
    admin = new Redis(redis.url, { maxRetriesPerRequest: 0 })
    monitor = await monitorCommands(admin)
    pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 })
    const counting = countingPool(pool)
    sent = counting.sent
    store = new PostgresStore({ pool: counting.pool, schema, sweepIntervalMs: 0 })
    await store.migrate()
    rates = new RedisStore({ url: redis.url })
    gate = createGate({
      store,
      rateStore: rates,
      logger: false,
      basic: { scrypt: { logN: 10 } },
      // The application's copy is read again every applicationCacheMs (one query per
      // application and window, not per request): longer than this file runs.
      applicationCacheMs: 600_000,
      // Usage is written in batches on a timer, not per request.
      usage: false,
      throttle: { application: { limit: 100_000, windowMs: 3_600_000 } },
    })
  })

  afterAll(async () => {
    await gate?.close()
    await rates?.close()
    await store?.close()
    await pool?.end()
    monitor?.stop()
    admin?.disconnect()
    await redis.stop()
    await dropSchema(schema)
  })

  /** One request's queries and Redis commands, counted once the work it started in the background has been sent. */
  async function cost(send: () => Promise<GateOutcome>): Promise<{ outcome: GateOutcome; queries: string[]; redis: string[] }> {
    let outcome: GateOutcome | undefined
    let from = 0
    const ran = await monitor.during(async () => {
      from = sent.length
      outcome = await send()
      for (let i = 0; i < 3; i++) await tick()
    })
    // What a client sent: a script's own calls ("lua") are not round trips.
    const redis = ran.filter(({ source }) => source !== 'lua').map(({ args }) => args.join(' ').toLowerCase())
    return { outcome: outcome as GateOutcome, queries: sent.slice(from), redis }
  }

  type Credential = 'app token' | 'OAuth token with its app token' | 'OAuth token alone' | 'API key' | 'password (verified earlier)'
  let appToken: string
  let requests: Record<Credential, Record<string, string>>
  const send = (headers: Record<string, string>) => Promise.resolve(gate.handle(coreRequest({ headers })))

  beforeAll(async () => {
    ;({ appToken } = await gate.applications.register({ name: 'A' }))
    const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada', email: 'ada@example.org' })
    const key = await gate.apiKeys.create(ada.id, { name: 'etl' })
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken })
    const basic = (user: string, secret: string) => `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`
    requests = {
      'app token': { 'x-app-token': appToken },
      'OAuth token with its app token': { 'x-app-token': appToken, authorization: `OAuth ${accessToken}` },
      'OAuth token alone': { authorization: `OAuth ${accessToken}` },
      'API key': { 'x-app-token': appToken, authorization: basic(key.keyId, key.keySecret) },
      'password (verified earlier)': { 'x-app-token': appToken, authorization: basic('ada', PASSWORD) },
    }
    // Warm: the application read, the password verified, the key's and the grant's last use written.
    for (const headers of Object.values(requests)) for (let i = 0; i < 2; i++) await send(headers)
  })

  /** Sends a request of `credential` (by `sendIt`), expects it through, and counts what it cost the stores. */
  async function measure(credential: Credential, sendIt: () => Promise<GateOutcome> = () => send(requests[credential])) {
    const measured = await cost(sendIt)
    if (measured.outcome.type !== 'next') throw new Error(`${credential}: refused with ${measured.outcome.response.status} ${measured.outcome.response.body}`)
    const { user, application } = measured.outcome.context
    expect({ credential, user: user?.username ?? null, application: application?.appToken }).toEqual({ credential, user: credential === 'app token' ? null : 'ada', application: appToken })
    // What was sent is shown when it is more than expected.
    const shown = { credential, queries: measured.queries.length <= 1 ? 'at most one' : measured.queries, redis: measured.redis.length === 1 ? 'one' : measured.redis }
    return { shown, counted: { queries: measured.queries.length, redis: measured.redis.length } }
  }

  it('costs at most one SQL query and one Redis command, for every credential', async () => {
    let queries = 0
    let commands = 0
    for (const credential of Object.keys(requests) as Credential[]) {
      // The user read with a token or key answers the store's getUser for 100 ms: wait that
      // out, so that a password pays for its own read rather than the API key's before it.
      await sleep(150)
      for (let i = 0; i < 3; i++) {
        const { shown, counted } = await measure(credential)
        expect(shown).toEqual({ credential, queries: 'at most one', redis: 'one' })
        queries += counted.queries
        commands += counted.redis
      }
    }
    // The counters see the traffic.
    expect(queries).toBeGreaterThan(0)
    expect(commands).toBe(5 * 3)
  })

  it('costs an OAuth request one query when the rate step is slow, too', async () => {
    // A busy Redis: paused for longer than PostgresStore keeps the user it read with a token (100 ms).
    for (const credential of ['OAuth token with its app token', 'OAuth token alone', 'API key'] as const) {
      const { shown } = await measure(credential, async () => {
        redis.pause()
        const outcome = send(requests[credential])
        await sleep(300)
        redis.resume()
        return outcome
      })
      expect(shown).toEqual({ credential, queries: 'at most one', redis: 'one' })
    }
  })
})
