/**
 * Several processes on one PostgreSQL, as several instances of a service behind a load
 * balancer: records survive the process that wrote them, the throttle counts once across
 * instances, and a code is exchanged once across instances.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PostgresStore } from '../src/store/postgres/store.js'
import { DATABASE_URL, dropSchema, freshSchema, postgresAvailable } from './support/postgres.js'

const available = await postgresAvailable()
const WORKER = new URL('./fixtures/postgres-gate.ts', import.meta.url).pathname
const run = promisify(execFile)

interface Credentials {
  appToken: string
  secretToken: string
  userId: string
  username: string
  password: string
  keyId: string
  keySecret: string
  accessToken: string
}

/** Starts an instance; resolves with its base URL once it listens. */
async function serve(schema: string, children: ChildProcess[], limit = 1000): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, 'serve'], {
    env: { ...process.env, DATABASE_URL, SCHEMA: schema, LIMIT: String(limit) },
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  children.push(child)
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once('line', resolve)
    child.once('exit', (code) => reject(new Error(`instance exited with ${code}`)))
  })
  return `http://127.0.0.1:${(JSON.parse(line) as { port: number }).port}`
}

/** As from the TLS-terminating proxy every instance trusts. */
const HTTPS = { 'x-forwarded-proto': 'https' }
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

describe.skipIf(!available)('PostgresStore shared by several processes', () => {
  const schema = freshSchema('procs')
  const children: ChildProcess[] = []
  let credentials: Credentials

  beforeAll(async () => {
    // The setup process migrates, writes every kind of record, and exits.
    const { stdout } = await run(process.execPath, ['--import', 'tsx', WORKER, 'setup'], { env: { ...process.env, DATABASE_URL, SCHEMA: schema } })
    credentials = JSON.parse(stdout) as Credentials
  }, 30_000)

  afterAll(async () => {
    for (const child of children) child.stdin?.end()
    await Promise.all(children.map((child) => (child.exitCode === null ? new Promise((resolve) => child.once('exit', resolve)) : undefined)))
    await dropSchema(schema)
  })

  it('authenticates, in a new process, with the application, password, API key and token another process created before it exited', async () => {
    const base = await serve(schema, children)
    const get = async (headers: Record<string, string>) => {
      const response = await fetch(`${base}/resource`, { headers: { ...HTTPS, 'x-app-token': credentials.appToken, ...headers } })
      return { status: response.status, body: (await response.json()) as { user: string | null; auth: string; app: string | null } }
    }
    expect(await get({})).toEqual({ status: 200, body: { user: null, auth: 'none', app: 'durable' } })
    expect(await get({ authorization: basic(credentials.username, credentials.password) })).toEqual({ status: 200, body: { user: 'ada', auth: 'password', app: 'durable' } })
    expect(await get({ authorization: basic(credentials.keyId, credentials.keySecret) })).toEqual({ status: 200, body: { user: 'ada', auth: 'api-key', app: 'durable' } })
    expect(await get({ authorization: `OAuth ${credentials.accessToken}` })).toEqual({ status: 200, body: { user: 'ada', auth: 'oauth', app: 'durable' } })
    expect((await get({ authorization: basic(credentials.username, 'wrong password') })).status).toBe(401)
  })

  it('allows exactly the limit across four processes: 1,000 requests against a limit of 100', async () => {
    const limited = freshSchema('limit')
    try {
      const store = new PostgresStore({ connectionString: DATABASE_URL, schema: limited, sweepIntervalMs: 0 })
      await store.migrate()
      await store.insertApplication({ appToken: 'limited-app-token-123', name: 'limited', secretHash: 'x'.repeat(64), callbackPrefix: null, limit: null, ownerId: null, previousSecretHash: null, previousSecretExpiresAt: null, suspendedAt: null, suspensionReason: null, plan: null, createdAt: 1, updatedAt: 1 })
      await store.close()
      const bases = await Promise.all([1, 2, 3, 4].map(() => serve(limited, children, 100)))
      const statuses = new Map<number, number>()
      // 250 requests per instance, 25 at a time on each: all four hit the database at once.
      await Promise.all(
        bases.map(async (base) => {
          for (let batch = 0; batch < 10; batch++) {
            const responses = await Promise.all(Array.from({ length: 25 }, () => fetch(`${base}/resource`, { headers: { 'x-app-token': 'limited-app-token-123' } })))
            for (const response of responses) {
              statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
              await response.arrayBuffer()
            }
          }
        }),
      )
      expect(Object.fromEntries(statuses)).toEqual({ 200: 100, 429: 900 })
    } finally {
      await dropSchema(limited)
    }
  }, 60_000)

  it('exchanges one authorization code once when two processes receive it at the same moment', async () => {
    const [a, b] = await Promise.all([serve(schema, children), serve(schema, children)])
    const store = new PostgresStore({ connectionString: DATABASE_URL, schema, sweepIntervalMs: 0 })
    try {
      const code = `code-${Date.now()}-abcdefghijklmnopqrstuvwxyz`
      const codeHash = createHash('sha256').update(code).digest('hex')
      const redirectUri = 'https://app.example/cb/done'
      await store.insertAuthorizationCode({
        codeHash,
        appToken: credentials.appToken,
        userId: credentials.userId,
        redirectUri,
        codeChallenge: null,
        createdAt: Date.now(),
        expiresAt: Date.now() + 60_000,
        usedAt: null,
      })
      const exchange = (base: string) =>
        fetch(`${base}/oauth/access_token`, {
          method: 'POST',
          headers: { ...HTTPS, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: credentials.appToken, client_secret: credentials.secretToken }),
        }).then(async (response) => ({ status: response.status, body: (await response.json()) as { access_token?: string; error?: string } }))
      const results = await Promise.all([exchange(a as string), exchange(b as string)])
      const won = results.filter((r) => r.status === 200)
      expect(won).toHaveLength(1)
      expect(won[0]?.body.access_token).toMatch(/^[\w-]{20,}$/)
      expect(results.find((r) => r.status !== 200)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
      expect((await store.getAuthorizationCode(codeHash))?.usedAt).toEqual(expect.any(Number))
    } finally {
      await store.close()
    }
  })
})
