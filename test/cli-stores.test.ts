/**
 * The built `open-data-gate` command (dist/cli.js in a child process) against the real
 * Redis and PostgreSQL: what it writes, a gate in this process, on its own store
 * instance, accepts. Each run works in a key prefix or schema of its own and removes it.
 */
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGate, type Gate, type GateRequest } from '../src/index.js'
import { PostgresStore } from '../src/store/postgres/store.js'
import { RedisStore } from '../src/store/redis/store.js'
import { atTerminal, cli, ensureBuilt } from './support/built-cli.js'

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
const request = (headers: Record<string, string>, url = '/data'): GateRequest => ({ method: 'GET', url, headers, peerAddress: '127.0.0.1', tls: true })

beforeAll(() => ensureBuilt(), 240_000)

interface Layout {
  name: string
  /** The command's store options. */
  args: string[]
  /** A gate in this process on the same data. */
  gate(): Gate
  cleanup(): Promise<void>
}

const suffix = randomBytes(5).toString('hex')
const prefix = `odg-cli-${suffix}:`
const schema = `odg_cli_${suffix}`

/** Removes this run's keys from the shared Redis (never FLUSHALL). */
async function dropRedisKeys(): Promise<void> {
  const redis = new Redis(REDIS_URL)
  for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 500 }) as AsyncIterable<string[]>) if (keys.length > 0) await redis.del(...keys)
  await redis.quit()
}

const layouts: Layout[] = [
  {
    name: 'Redis alone',
    args: ['--store', REDIS_URL, '--prefix', prefix],
    gate: () => createGate({ store: new RedisStore({ url: REDIS_URL, prefix }), basic: { scrypt: { logN: 10 } } }),
    cleanup: dropRedisKeys,
  },
  {
    name: 'PostgreSQL records, Redis rates',
    args: ['--store', POSTGRES_URL, '--schema', schema, '--rate-store', REDIS_URL, '--prefix', prefix],
    gate: () =>
      createGate({
        store: new PostgresStore({ connectionString: POSTGRES_URL, schema, sweepIntervalMs: 0 }),
        rateStore: new RedisStore({ url: REDIS_URL, prefix }),
        basic: { scrypt: { logN: 10 } },
      }),
    async cleanup() {
      const client = new pg.Client({ connectionString: POSTGRES_URL })
      await client.connect()
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await client.end()
      await dropRedisKeys()
    },
  },
]

describe.each(layouts)('open-data-gate on $name', (layout) => {
  let gate: Gate
  const run = (args: string[], input?: string) => cli([...args, ...layout.args], input === undefined ? {} : { input })
  const json = async (args: string[], input?: string) => {
    const ran = await run([...args, '--json'], input)
    expect(ran.stderr).toBe('')
    expect(ran.code).toBe(0)
    return JSON.parse(ran.stdout)
  }

  beforeAll(async () => {
    const migrated = await json(['migrate'])
    expect(Array.isArray(migrated) ? migrated[0] : migrated).toMatchObject({ store: layout.args[1]?.startsWith('postgres') ? 'postgres' : 'redis' })
    gate = layout.gate()
  }, 30_000)

  afterAll(async () => {
    await gate?.close()
    await layout.cleanup()
  })

  it('registers an application whose token a gate in another process accepts, and deletes it', async () => {
    const registered = await json(['apps', 'register', '--name', 'Transit dashboard', '--callback-prefix', 'https://transit.example/oauth/'])
    expect(Object.keys(registered).sort()).toEqual(['appToken', 'application', 'secretToken'])
    expect(await gate.applications.verifySecret(registered.appToken, registered.secretToken)).toBe(true)
    expect(await gate.handle(request({ 'x-app-token': registered.appToken }))).toMatchObject({ type: 'next', context: { application: { name: 'Transit dashboard' } } })

    const listed = await json(['apps', 'list'])
    expect(listed).toContainEqual(registered.application)
    expect(JSON.stringify(listed)).not.toContain(registered.secretToken)

    // A new limit reaches the serving gate (its cached copy is dropped on the store's change notice).
    await json(['apps', 'set-limit', registered.appToken, '7'])
    await expect.poll(async () => {
      const outcome = await gate.handle(request({ 'x-app-token': registered.appToken }))
      return outcome.type === 'next' ? outcome.headers['ratelimit-policy'] : undefined
    }, { timeout: 8000 }).toMatch(/;q=7;/)
    // The serving gate's window (the default hour) is told; the application's own limit is read from the store.
    const shown = await json(['rate', 'show', `app:${registered.appToken}`, '--window-ms', '3600000'])
    expect(shown).toMatchObject({ key: `app:${registered.appToken}`, limit: 7, windowMs: 3_600_000 })
    expect(shown.remaining).toBeLessThan(7)
    expect(await json(['rate', 'reset', `app:${registered.appToken}`])).toEqual({ key: `app:${registered.appToken}`, reset: true })
    expect(await json(['rate', 'show', `app:${registered.appToken}`, '--window-ms', '3600000'])).toMatchObject({ remaining: 7 })

    // A plan reaches the serving gate the same way (req.gate.application.plan), and so does the default again.
    expect(await json(['apps', 'set-plan', registered.appToken, 'partner', '--plans', 'free,partner'])).toMatchObject({ plan: 'partner', limit: 7 })
    const planSeen = async () => {
      const outcome = await gate.handle(request({ 'x-app-token': registered.appToken }))
      return outcome.type === 'next' ? outcome.context.application?.plan : outcome.type
    }
    await expect.poll(planSeen, { timeout: 8000 }).toBe('partner')
    expect(await json(['apps', 'set-plan', registered.appToken, '--default'])).toMatchObject({ plan: null })
    await expect.poll(planSeen, { timeout: 8000 }).toBeNull()

    // A suspension reaches the serving gate the same way, and so does its end.
    expect(await json(['apps', 'suspend', registered.appToken, '--reason', 'Scraping beyond its limit'])).toMatchObject({ suspended: { reason: 'Scraping beyond its limit' } })
    await expect.poll(async () => {
      const outcome = await gate.handle(request({ 'x-app-token': registered.appToken }))
      return outcome.type === 'respond' ? JSON.parse(outcome.response.body).message : outcome.type
    }, { timeout: 8000 }).toBe('This application is suspended: Scraping beyond its limit')
    expect(await json(['apps', 'resume', registered.appToken])).toMatchObject({ suspended: null })
    await expect.poll(async () => (await gate.handle(request({ 'x-app-token': registered.appToken }))).type, { timeout: 8000 }).toBe('next')

    await json(['apps', 'delete', registered.appToken])
    await expect.poll(async () => (await gate.handle(request({ 'x-app-token': registered.appToken }))).type, { timeout: 8000 }).toBe('respond')
  })

  it('creates a user with a password from standard input and a key, both accepted by the gate, and revokes them', async () => {
    const app = await gate.applications.register({ name: 'probe' })
    const username = `ada${suffix}`
    const user = await json(['users', 'create', '--username', username, '--display-name', 'Ada Lovelace', '--email', 'ada@example.org', '--right', 'read_private'], 'correct horse battery staple\n')
    expect(user).toMatchObject({ username, hasPassword: true, rights: ['read_private'] })
    const withPassword = await gate.handle(request({ authorization: basic(username, 'correct horse battery staple'), 'x-app-token': app.appToken }))
    expect(withPassword).toMatchObject({ type: 'next', context: { auth: 'password', user: { id: user.id } } })

    const key = await json(['keys', 'create', '--user', username, '--name', 'Nightly ETL'])
    expect(Object.keys(key).sort()).toEqual(['apiKey', 'keyId', 'keySecret'])
    expect(await gate.handle(request({ authorization: basic(key.keyId, key.keySecret), 'x-app-token': app.appToken }))).toMatchObject({ type: 'next', context: { auth: 'api-key' } })
    await json(['keys', 'revoke', key.keyId])
    expect(await gate.handle(request({ authorization: basic(key.keyId, key.keySecret), 'x-app-token': app.appToken }))).toMatchObject({ type: 'respond', response: { status: 401 } })

    const token = await gate.tokens.issue({ userId: user.id, appToken: app.appToken })
    expect(await json(['tokens', 'revoke', '--user', user.id])).toEqual({ userId: user.id, revoked: 1 })
    expect(await gate.handle(request({ authorization: `OAuth ${token.accessToken}`, 'x-app-token': app.appToken }))).toMatchObject({ type: 'respond', response: { status: 401 } })

    // At a real terminal (script(1) gives the command a pseudo-terminal): asked twice, never echoed.
    const typed = await atTerminal(['users', 'set-password', username, ...layout.args], ['a new passphrase for ada\r', 'a new passphrase for ada\r'])
    expect(typed.output).toContain(`New password for ${username}: `)
    expect(typed.output).toContain('set the password of')
    expect(typed.output).not.toContain('a new passphrase')
    expect(typed.code).toBe(0)
    expect(await gate.handle(request({ authorization: basic(username, 'a new passphrase for ada'), 'x-app-token': app.appToken }))).toMatchObject({ type: 'next' })

    const shown = await run(['users', 'show', username])
    expect(shown.stdout).toMatch(new RegExp(`^id: +${user.id}\\nusername: +${username}\\n`))
    await json(['users', 'delete', username])
    expect(await gate.users.find(user.id)).toBeUndefined()
  })
})

describe('open-data-gate when a store does not answer', () => {
  it.each([
    ['Redis', ['--store', 'redis://127.0.0.1:1'], 'redis://127.0.0.1:1'],
    ['PostgreSQL', ['--store', 'postgres://postgres@127.0.0.1:1/test'], 'postgres://postgres@127.0.0.1:1/test'],
    ['the rate store', ['--store', REDIS_URL, '--rate-store', 'redis://127.0.0.1:1'], 'redis://127.0.0.1:1'],
  ])('exits 3 quickly with one line saying what it tried and what failed when %s is unreachable (a closed port)', async (_, args, shown) => {
    const ran = await cli([...args, ...(args.includes('--rate-store') ? ['rate', 'show', 'anon', '--limit', '60', '--window-ms', '3600000'] : ['apps', 'list'])])
    expect(ran.code).toBe(3)
    const port = new URL(shown).port
    expect(ran.stderr).toMatch(new RegExp(`^open-data-gate: could not connect to ${shown.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} within 2 s: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\n$`))
    expect(ran.stderr).not.toMatch(/Stream isn't writeable|enableOfflineQueue/)
    expect(ran.stderr.trimEnd().split('\n')).toHaveLength(1)
    expect(ran.stdout).toBe('')
    expect(ran.ms).toBeLessThan(6000)
  })

  it.each([
    ['a password parameter', 'postgres://postgres@127.0.0.1:1/test?password=SECRETPW', 'postgres://postgres:***@127.0.0.1:1/test'],
    ['an @ in the password', 'postgres://postgres:pa@SECRETPW@127.0.0.1:1/test', 'postgres://postgres:***@127.0.0.1:1/test'],
    ['a Redis password', 'redis://default:pa@SECRETPW@127.0.0.1:1', 'redis://default:***@127.0.0.1:1'],
  ])('never prints the password of OPEN_DATA_GATE_STORE (%s), with or without --json', async (_, url, shown) => {
    for (const json of [[], ['--json']]) {
      const ran = await cli(['apps', 'list', ...json], { env: { OPEN_DATA_GATE_STORE: url } })
      expect(ran.code).toBe(3)
      expect(ran.stderr).toContain(`could not connect to ${shown} within 2 s`)
      expect(ran.stdout + ran.stderr).not.toMatch(/SECRETPW|pa@/)
    }
  })

  it('refuses a store password on the command line before connecting, and takes the same URL from OPEN_DATA_GATE_STORE', async () => {
    const withPassword = POSTGRES_URL.replace('postgres://postgres@', 'postgres://postgres:SECRETPW@')
    const own = `${schema}_env`
    const refused = await cli(['migrate', '--store', withPassword, '--schema', own])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toMatch(/--store carries a password.*OPEN_DATA_GATE_STORE.*PGPASSFILE/)
    expect(refused.stderr).not.toContain('SECRETPW')
    try {
      // The server trusts this test's connections, so any password is accepted.
      const taken = await cli(['migrate', '--schema', own, '--json'], { env: { OPEN_DATA_GATE_STORE: withPassword } })
      expect(taken.stderr).toBe('')
      expect(taken.code).toBe(0)
      expect(taken.stdout).not.toContain('SECRETPW')
    } finally {
      const client = new pg.Client({ connectionString: POSTGRES_URL })
      await client.connect()
      await client.query(`DROP SCHEMA IF EXISTS ${own} CASCADE`)
      await client.end()
    }
  }, 30_000)

  it('says to run migrate, with exit 4, on a PostgreSQL schema never migrated, and creates nothing', async () => {
    const fresh = `${schema}_fresh`
    const ran = await cli(['apps', 'list', '--store', POSTGRES_URL, '--schema', fresh])
    expect(ran).toMatchObject({ code: 4, stdout: '' })
    expect(ran.stderr).toBe(
      `open-data-gate: the store at ${POSTGRES_URL} has no open-data-gate schema "${fresh}" (never migrated): run open-data-gate migrate with the same --store and --schema first\n`,
    )
    const client = new pg.Client({ connectionString: POSTGRES_URL })
    await client.connect()
    try {
      expect((await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [fresh])).rowCount).toBe(0)
    } finally {
      await client.end()
    }
  })

  it('exits 2 for a usage error without touching a store', async () => {
    const ran = await cli(['apps', 'register', '--store', 'redis://127.0.0.1:1'])
    expect(ran).toMatchObject({ code: 2, stderr: 'open-data-gate: apps register needs --name (see open-data-gate --help)\n' })
    expect(ran.ms).toBeLessThan(3000)
  })
})
