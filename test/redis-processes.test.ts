/**
 * Several instances of the gate, each its own Node process with a real HTTP server, on one
 * Redis: they share budgets exactly, agree on a code consumed once, and see each other's
 * revocations and deletions.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGate, type Gate } from '../src/index.js'
import { sha256 } from '../src/secrets/tokens.js'
import { RedisStore } from '../src/store/redis/store.js'
import { deletePrefix, randomPrefix, REDIS_URL, sharedRedisAvailable } from './redis/servers.js'

const available = await sharedRedisAvailable('gates in four processes on one Redis')
const GATE_PROCESS = fileURLToPath(new URL('./redis/gate-process.ts', import.meta.url))
const APP_LIMIT = 100
/** The gate's documented application cache time (applicationCacheMs default). */
const APPLICATION_CACHE_MS = 5000

interface Instance {
  child: ChildProcess
  url: string
}

async function startInstance(prefix: string): Promise<Instance> {
  const child = spawn(process.execPath, ['--import', 'tsx', GATE_PROCESS], {
    env: { ...process.env, REDIS_URL, ODG_PREFIX: prefix, ODG_APP_LIMIT: String(APP_LIMIT) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gate process did not start: ${stderr}`)), 15_000)
    child.once('exit', (code) => reject(new Error(`gate process exited with ${code}: ${stderr}`)))
    lines.once('line', (line) => {
      clearTimeout(timer)
      resolve((JSON.parse(line) as { port: number }).port)
    })
  })
  return { child, url: `http://127.0.0.1:${port}` }
}

async function stopInstance(instance: Instance): Promise<void> {
  const { child } = instance
  if (child.exitCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000)
  await exited
  clearTimeout(timer)
}

const HTTPS = { 'x-forwarded-proto': 'https' }

describe.skipIf(!available)('gates in four processes on one Redis', () => {
  const prefix = randomPrefix('processes')
  let instances: Instance[] = []
  let admin: Redis
  let store: RedisStore
  let gate: Gate

  beforeAll(async () => {
    admin = new Redis(REDIS_URL)
    store = new RedisStore({ url: REDIS_URL, prefix })
    gate = createGate({ store })
    instances = await Promise.all([1, 2, 3, 4].map(() => startInstance(prefix)))
  }, 60_000)

  afterAll(async () => {
    await Promise.all(instances.map(stopInstance))
    await gate?.close()
    await deletePrefix(admin, prefix)
    await admin.quit()
  })

  it('allows exactly the limit across all of them: 1,000 requests, 100 allowed, 900 refused with a right Retry-After', async () => {
    const { appToken } = await gate.applications.register({ name: 'shared budget' })
    const answers: Array<{ status: number; retryAfter: string | null }> = []
    let next = 0
    const started = Date.now()
    // 40 in flight at once, spread round-robin over the four processes.
    await Promise.all(
      Array.from({ length: 40 }, async () => {
        while (next < 1000) {
          const n = next++
          const res = await fetch(`${instances[n % 4]?.url}/resource/x.json`, { headers: { 'x-app-token': appToken } })
          await res.arrayBuffer()
          answers.push({ status: res.status, retryAfter: res.headers.get('retry-after') })
        }
      }),
    )
    const elapsedS = (Date.now() - started) / 1000
    expect(answers.filter((a) => a.status === 200)).toHaveLength(100)
    const refused = answers.filter((a) => a.status === 429)
    expect(refused).toHaveLength(900)
    // 100 per hour: the next request fits 36 s after the first, whichever process is asked.
    for (const { retryAfter } of refused) {
      expect(Number(retryAfter)).toBeLessThanOrEqual(36)
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(36 - Math.ceil(elapsedS) - 1)
    }
  })

  it('exchanges one code sent to two processes at once exactly once, and revokes the winner’s token', async () => {
    const { appToken, secretToken } = await gate.applications.register({ name: 'oauth race', callbackPrefix: 'https://client.example/cb' })
    const user = await gate.users.create({ username: `race-${Date.now()}`, password: 'correct horse battery staple', displayName: 'Ada', email: 'ada@example.org' })
    const code = `code-${Date.now()}-${Math.random()}`
    const redirectUri = 'https://client.example/cb/done'
    // What the consent page leaves behind: the user's grant, and a code.
    await store.recordGrant(user.id, appToken, Date.now())
    await store.insertAuthorizationCode({
      codeHash: sha256(code),
      appToken,
      userId: user.id,
      redirectUri,
      codeChallenge: null,
      createdAt: Date.now(),
      expiresAt: Date.now() + 60_000,
      usedAt: null,
    })
    const body = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: appToken, client_secret: secretToken }).toString()
    const exchange = (instance: Instance) =>
      fetch(`${instance.url}/oauth/access_token`, { method: 'POST', headers: { ...HTTPS, 'content-type': 'application/x-www-form-urlencoded' }, body }).then(async (res) => ({
        status: res.status,
        json: (await res.json()) as { access_token?: string; error?: string },
      }))
    const results = await Promise.all([exchange(instances[0] as Instance), exchange(instances[1] as Instance)])
    const winners = results.filter((r) => r.status === 200)
    const losers = results.filter((r) => r.status !== 200)
    expect(winners).toHaveLength(1)
    expect(losers).toHaveLength(1)
    expect(losers[0]?.json.error).toBe('invalid_grant')
    const token = winners[0]?.json.access_token as string
    // The replay revoked it: no instance accepts it.
    for (const instance of instances) {
      const res = await fetch(`${instance.url}/resource/x.json`, { headers: { ...HTTPS, authorization: `OAuth ${token}` } })
      expect(res.status).toBe(401)
    }
  })

  it('refuses on another instance a token revoked on one, on the very next request', async () => {
    const { appToken, secretToken } = await gate.applications.register({ name: 'revocation', callbackPrefix: 'https://client.example/cb' })
    const user = await gate.users.create({ username: `revoke-${Date.now()}`, password: 'correct horse battery staple', displayName: 'Ada', email: 'ada@example.org' })
    const { accessToken } = await gate.tokens.issue({ userId: user.id, appToken })
    const use = (instance: Instance) => fetch(`${instance.url}/resource/x.json`, { headers: { ...HTTPS, authorization: `OAuth ${accessToken}` } })
    const before = await use(instances[1] as Instance)
    expect(before.status).toBe(200)
    expect(((await before.json()) as { user: string }).user).toBe(user.username)
    const revoked = await fetch(`${instances[0]?.url}/oauth/revoke`, {
      method: 'POST',
      headers: { ...HTTPS, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: accessToken, client_id: appToken, client_secret: secretToken }).toString(),
    })
    expect(revoked.status).toBe(200)
    expect((await use(instances[1] as Instance)).status).toBe(401)
  })

  it('refuses on every instance an application deleted on another, within the cache time', async () => {
    const { appToken } = await gate.applications.register({ name: 'deleted' })
    for (const instance of instances) expect((await fetch(`${instance.url}/resource/x.json`, { headers: { 'x-app-token': appToken } })).status).toBe(200)
    const deletedAt = Date.now()
    expect(await gate.applications.delete(appToken)).toBe(true)
    for (const instance of instances) {
      for (;;) {
        const res = await fetch(`${instance.url}/resource/x.json`, { headers: { 'x-app-token': appToken } })
        await res.arrayBuffer()
        if (res.status === 403) break
        expect(res.status).toBe(200)
        expect(Date.now() - deletedAt).toBeLessThan(APPLICATION_CACHE_MS)
        await sleep(50)
      }
    }
    // Told through the change channel, not left to the cache time.
    expect(Date.now() - deletedAt).toBeLessThan(1000)
  })
})
