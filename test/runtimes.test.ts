/**
 * The built package on Bun and Deno, the runtimes themselves from their npm packages (pinned
 * in test/runtimes/package.json, not devDependencies of the project, so that `npm ci` stays
 * small; vitest's global setup installs them there when they are missing, see
 * test/support/install-runtimes.ts): a small data API on each runtime's
 * own server (test/fixtures/runtime-server.mjs: `Bun.serve` and `Deno.serve`, plain and
 * TLS, the Fetch adapter, the in-memory store), driven from here over real sockets.
 *
 * It runs dist/, as a Bun or Deno user gets the package: built first when dist/fetch.js is
 * missing or older than the sources (CI builds before it tests, so this only costs a
 * developer's first run). A runtime that cannot start on this machine is skipped with a
 * notice that says why; in CI (CI=true) that is a failure instead.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Browser } from './support/browser.js'
import { ensureBuilt } from './support/built-cli.js'
import { tlsFetch } from './support/tls-fetch.js'

const root = fileURLToPath(new URL('../', import.meta.url))
const SERVER = join(root, 'test', 'fixtures', 'runtime-server.mjs')
const RUNTIME_PACKAGES = join(root, 'test', 'runtimes')
const PASSWORD = 'correct horse battery'
const CALLBACK = 'https://transit.example/oauth/callback'

interface Runtime {
  readonly name: string
  readonly binary: string
  /** The arguments that run the server script: Deno with only the permissions it needs. */
  readonly args: readonly string[]
}

const RUNTIMES: readonly Runtime[] = [
  { name: 'Bun', binary: join(RUNTIME_PACKAGES, 'node_modules', '.bin', 'bun'), args: [SERVER] },
  { name: 'Deno', binary: join(RUNTIME_PACKAGES, 'node_modules', '.bin', 'deno'), args: ['run', '--allow-net=127.0.0.1', `--allow-read=${root}`, '--allow-env', SERVER] },
]

/** The runtime's version, or why it cannot run here. */
function probe(runtime: Runtime): { version: string } | { problem: string } {
  try {
    return { version: execFileSync(runtime.binary, ['--version'], { encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] }).trim().split('\n')[0] as string }
  } catch (error) {
    return { problem: error instanceof Error ? error.message.split('\n')[0] as string : String(error) }
  }
}

interface Started {
  readonly runtime: string
  readonly plain: string
  readonly tls: string
  readonly appToken: string
  readonly secretToken: string
}

/** Starts the server script on the runtime and waits for its line of JSON. */
function start(runtime: Runtime): Promise<{ child: ChildProcess; started: Started }> {
  const child = spawn(runtime.binary, runtime.args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } })
  return new Promise((resolve, reject) => {
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => fail(new Error(`${runtime.name} printed nothing within 60 s`)), 60_000)
    const fail = (error: Error) => {
      clearTimeout(timer)
      child.kill()
      reject(new Error(`${error.message}\n${stderr}`))
    }
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('error', fail)
    child.on('exit', (code) => fail(new Error(`${runtime.name} exited with ${code} before serving`)))
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const line = stdout.split('\n')[0] as string
      if (!stdout.includes('\n')) return
      clearTimeout(timer)
      child.removeAllListeners('exit')
      const parsed = JSON.parse(line) as { runtime: string; plain: number; tls: number; appToken: string; secretToken: string }
      resolve({ child, started: { ...parsed, plain: `http://127.0.0.1:${parsed.plain}`, tls: `https://127.0.0.1:${parsed.tls}` } })
    })
  })
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

for (const runtime of RUNTIMES) {
  const found = probe(runtime)
  if ('problem' in found) {
    if (process.env.CI === 'true') throw new Error(`${runtime.name} cannot run here, and in CI it must: ${found.problem}`)
    console.warn(`${runtime.name} tests skipped: the ${runtime.name} binary from its npm package cannot run on this machine (${found.problem})`)
  }

  describe.skipIf('problem' in found)(`the built package on ${runtime.name} (${'version' in found ? found.version : 'not runnable'})`, () => {
    let child: ChildProcess | undefined
    let server: Started

    beforeAll(async () => {
      ensureBuilt(join(root, 'dist', 'fetch.js'))
      ;({ child, started: server } = await start(runtime))
    }, 240_000)
    afterAll(() => {
      child?.kill()
    })

    it('identifies the application from its app token, with the client address the runtime gave', async () => {
      const res = await fetch(`${server.plain}/resource/abcd-1234.json`, { headers: { 'x-app-token': server.appToken } })
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ runtime: runtime.name.toLowerCase(), app: `Transit on ${runtime.name.toLowerCase()}`, auth: 'none', user: null, secure: false, clientIp: '127.0.0.1' })
      expect(res.headers.get('ratelimit-policy')).toMatch(/^"app";q=3;w=2/)
      const unknown = await fetch(`${server.plain}/resource/abcd-1234.json`, { headers: { 'x-app-token': 'not-a-registered-token' } })
      expect(unknown.status).toBe(403)
      expect(await unknown.json()).toEqual({ code: 'permission_denied', error: true, message: 'Invalid app_token specified' })
    })

    it('throttles the application to 429 with Retry-After, and lets it through again once the window has passed', async () => {
      // Three requests per 1.5 s: whatever the other tests spent, ten in a row reach the limit.
      let refused: Response | undefined
      for (let i = 0; i < 10 && refused === undefined; i++) {
        const res = await tlsFetch(`${server.tls}/resource/abcd-1234.json`, { headers: { 'x-app-token': server.appToken } })
        if (res.status === 429) refused = res
        else expect(res.status).toBe(200)
      }
      expect(refused?.status).toBe(429)
      expect(Number(refused?.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(await refused?.json()).toMatchObject({ code: 'too_many_requests', error: true })
      // Polled, not slept: the window is 1.5 s, the machine may be busy.
      const deadline = Date.now() + 30_000
      let status = 429
      while (status === 429 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250))
        status = (await tlsFetch(`${server.tls}/resource/abcd-1234.json`, { headers: { 'x-app-token': server.appToken } })).status
      }
      expect(status).toBe(200)
    }, 60_000)

    it('refuses Basic over plain http with 403 https_required, and accepts it over TLS', async () => {
      const headers = { authorization: basic('ada', PASSWORD), 'x-app-token': server.appToken }
      const refused = await fetch(`${server.plain}/resource/abcd-1234.json`, { headers })
      expect(refused.status).toBe(403)
      expect(await refused.json()).toMatchObject({ code: 'https_required', error: true })
      const deadline = Date.now() + 30_000
      let res = await tlsFetch(`${server.tls}/resource/abcd-1234.json`, { headers })
      while (res.status === 429 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250))
        res = await tlsFetch(`${server.tls}/resource/abcd-1234.json`, { headers })
      }
      expect(res.status).toBe(200)
      expect(await res.json()).toMatchObject({ auth: 'password', user: 'ada', secure: true })
    }, 60_000)

    it('issues an OAuth token through the authorization code flow, read from the form body, and accepts it', async () => {
      const authorize = new URL(`${server.tls}/oauth/authorize`)
      authorize.search = new URLSearchParams({ client_id: server.appToken, response_type: 'code', redirect_uri: CALLBACK, state: 'from the test' }).toString()
      const callback = new URL(await new Browser().authorize(authorize.href, 'ada', PASSWORD))
      expect(callback.origin + callback.pathname).toBe(CALLBACK)
      expect(callback.searchParams.get('state')).toBe('from the test')
      const token = await tlsFetch(`${server.tls}/oauth/access_token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code: callback.searchParams.get('code') ?? '', redirect_uri: CALLBACK, client_id: server.appToken, client_secret: server.secretToken }).toString(),
      })
      expect(token.status).toBe(200)
      const { access_token: accessToken } = (await token.json()) as { access_token: string }
      expect(accessToken).toMatch(/^[A-Za-z0-9_-]{20,}$/)
      const deadline = Date.now() + 30_000
      let res = await tlsFetch(`${server.tls}/resource/abcd-1234.json`, { headers: { authorization: `OAuth ${accessToken}` } })
      while (res.status === 429 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250))
        res = await tlsFetch(`${server.tls}/resource/abcd-1234.json`, { headers: { authorization: `OAuth ${accessToken}` } })
      }
      expect(res.status).toBe(200)
      expect(await res.json()).toMatchObject({ auth: 'oauth', user: 'ada', secure: true })
    }, 60_000)
  })
}
