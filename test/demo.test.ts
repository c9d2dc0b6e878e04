/**
 * `npm run demo` as a new user meets it: the process starts, prints the OAuth flow step by
 * step, the printed steps work when followed (the authorize URL in a browser, then the
 * printed curl lines, run by curl itself), and stopping the process by its id frees the ports.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Agent } from 'undici'
import { afterAll, describe, expect, it } from 'vitest'
import { Redis } from 'ioredis'
import { Browser, csrfOf, type Page } from './support/browser.js'
import { ensureBuilt } from './support/built-cli.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const demoCert = readFileSync(new URL('../examples/tls/cert.pem', import.meta.url))
const agent = new Agent({ connect: { ca: demoCert } })
const demoFetch: typeof fetch = (input, init) => fetch(input, { ...init, dispatcher: agent } as unknown as RequestInit)
const hasCurl = (() => {
  try {
    execFileSync('curl', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()

/** Starts the demo exactly as `npm run demo` does, on free ports, and waits for its instructions. */
async function startDemo(throughShell = false, env: Record<string, string> = {}): Promise<{ child: ChildProcess; output: string }> {
  const script = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts.demo as string
  const [command, ...args] = script.split(' ') as [string, ...string[]]
  expect(command).toBe('node')
  const options = { cwd: root, env: { ...process.env, PORT: '0', HTTPS_PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] as ('ignore' | 'pipe')[] }
  // npm runs a script through `sh -c`, which does not pass a signal on to its child.
  const child = throughShell ? spawn('sh', ['-c', `"${process.execPath}" ${args.join(' ')}`], options) : spawn(process.execPath, args, options)
  let output = ''
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes('stops it.')) resolve()
    })
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
    })
    child.once('exit', (code) => reject(new Error(`the demo exited with ${code}: ${output}`)))
  })
  return { child, output }
}

/** The line after the one that starts with `marker`, trimmed. */
function lineAfter(output: string, marker: string): string {
  const lines = output.split('\n')
  const index = lines.findIndex((line) => line.startsWith(marker))
  expect(index, `no line starting with ${marker}`).toBeGreaterThanOrEqual(0)
  return (lines[index + 1] as string).trim()
}

const refused = (port: number) =>
  new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve('connected')
    })
    socket.once('error', reject)
  })

/**
 * Opens a page that needs a signed-in user, as a browser does: sent to the portal's /login
 * (with `return_to`), signs in there as the demo user, and follows the way back.
 */
async function portalSignIn(browser: Browser, url: string): Promise<Page> {
  const sent = await browser.get(url)
  expect(sent.status).toBe(303)
  const login = await browser.get(sent.location as string)
  expect(new URL(login.url).pathname).toBe('/login')
  expect(login.html).toContain('name="password"')
  const returnTo = (login.html.match(/name="return_to" value="([^"]*)"/) as RegExpMatchArray)[1] as string
  const posted = await browser.post(new URL('/login', login.url).href, { username: 'ada', password: 'correct horse battery staple', return_to: returnTo.replaceAll('&#38;', '&') })
  expect(posted.status).toBe(303)
  expect(posted.location).toBe(url)
  return browser.get(posted.location as string)
}

const shell = (command: string) => execFileSync('sh', ['-c', command], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })

describe('npm run demo', () => {
  let demo: ChildProcess | undefined
  afterAll(() => {
    if (demo?.exitCode === null) demo.kill('SIGKILL')
  })

  it('prints the secret token and an OAuth flow that works when followed by hand, and stops on SIGTERM', async () => {
    const { child, output } = await startDemo()
    demo = child
    expect(output).toMatch(/Secret token of "Demo dashboard": [A-Za-z0-9_-]{43}/)
    expect(output).toContain(`kill ${child.pid}`)
    const origin = (output.match(/(https:\/\/localhost:\d+) {2}everything/) as RegExpMatchArray)[1] as string

    // 1. The authorize URL, in a browser: sent to the portal's sign-in, and back; Allow.
    const authorizeUrl = lineAfter(output, '1. Open this authorize URL')
    const browser = new Browser(demoFetch)
    const consent = await portalSignIn(browser, authorizeUrl)
    expect(consent.html).toContain('value="approve"')
    const allowed = await browser.post(consent.url, { csrf_token: csrfOf(consent), action: 'approve' })
    expect(allowed.status).toBe(303)
    const landing = await browser.get(allowed.location as string)
    const code = (landing.html.match(/<code id="code">([A-Za-z0-9_-]{43})<\/code>/) as RegExpMatchArray)[1] as string

    // 2. and 3. The printed curl lines, with the code and the token pasted in.
    const exchangeLine = lineAfter(output, '2. The page you land on shows the code')
    const apiLine = lineAfter(output, '3. Call the API')
    expect(landing.html).toContain(exchangeLine.replace('code=CODE', `code=${code}`))
    if (hasCurl) {
      // The first printed line, as pasted: the app token counts against its application's budget.
      const publicData = shell(lineAfter(output, 'Public data with the app token'))
      expect(publicData).toMatch(/^HTTP\/1\.1 200 /)
      expect(publicData).toMatch(/^ratelimit-policy: "app";q=1000;w=3600\r?$/im)
      const token = JSON.parse(shell(exchangeLine.replace('CODE', code))) as { access_token: string; token_type: string }
      expect(token.token_type).toBe('bearer')
      const me = JSON.parse(shell(apiLine.replace('TOKEN', token.access_token))) as { screenName: string }
      expect(me.screenName).toBe('Ada Lovelace')
    } else {
      console.warn('demo test: no curl on this machine, the printed curl lines were not run')
    }

    // The one sign-in serves the developer settings and the connected-apps page too.
    const settings = await browser.get(`${origin}/profile/edit/developer_settings`)
    expect(settings.status).toBe(200)
    expect(settings.html).toContain('Signed in as <strong>Ada Lovelace</strong>')
    const grants = await browser.get(`${origin}/oauth/grants`)
    expect(grants.status).toBe(200)
    expect(grants.html).toContain('Demo dashboard')

    // Stopped by its process id, it lets go of its ports.
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
    await expect(refused(Number(new URL(origin).port))).rejects.toMatchObject({ code: 'ECONNREFUSED' })
  })

  it.skipIf(!hasCurl)('answers each printed curl line as its comment says, run in the order printed', async () => {
    const { child, output } = await startDemo()
    demo = child
    try {
      const block = output.slice(output.indexOf('Each line below answers'), output.indexOf('OAuth, with a real client'))
      const lines = block.split('\n').filter((line) => /^ {2}curl /.test(line))
      expect(lines.length).toBeGreaterThanOrEqual(9)
      const anonymous = lines.at(-1) as string
      expect(anonymous).not.toMatch(/X-App-Token|app_token|-u '/)
      for (const line of lines) {
        const expected = (line.match(/ # (\d{3})\b/) as RegExpMatchArray | null)?.[1]
        expect(expected, `no answer printed beside: ${line}`).toBeDefined()
        const answer = shell(line)
        expect(answer.match(/^HTTP\/1\.1 (\d{3}) /)?.[1], `${line}\n${answer.slice(0, 400)}`).toBe(expected)
        const code = (line.match(/ # \d{3} ([a-z_]+)$/) as RegExpMatchArray | null)?.[1]
        if (code !== undefined) expect(answer).toContain(`"code":"${code}"`)
      }
      // The anonymous line again: the 2nd to the 5th in the minute are 200, the 6th a 429.
      const again = Array.from({ length: 5 }, () => (shell(anonymous).match(/^HTTP\/1\.1 (\d{3}) /) as RegExpMatchArray)[1])
      expect(again).toEqual(['200', '200', '200', '200', '429'])
    } finally {
      child.kill('SIGTERM')
    }
  })

  it('stops when the shell that npm started it through is killed', async () => {
    const { child, output } = await startDemo(true)
    demo = child
    const port = Number((output.match(/https:\/\/localhost:(\d+) {2}everything/) as RegExpMatchArray)[1])
    const server = Number((output.match(/kill (\d+)\)/) as RegExpMatchArray)[1])
    expect(server).not.toBe(child.pid)
    child.kill('SIGTERM')
    await expect.poll(() => refused(port).catch((error: NodeJS.ErrnoException) => error.code), { timeout: 5000 }).toBe('ECONNREFUSED')
  })
})

/** Runs the demo with `args` and `env` until it exits on its own (a refused store). */
function demoExits(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/demo.ts', ...args], { cwd: root, env: { ...process.env, PORT: '0', HTTPS_PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output })))
}

describe('the demo with a store URL', () => {
  // The demo imports the built package, as a user's code does.
  ensureBuilt()

  it('refuses a store password on its command line, pointing at OPEN_DATA_GATE_STORE and the password file, without printing it', async () => {
    const ran = await demoExits(['--store', 'postgres://ada:pa@SECRETPW@127.0.0.1:1/gate'])
    expect(ran.code).toBe(2)
    expect(ran.output).toMatch(/--store carries a password.*OPEN_DATA_GATE_STORE.*PGPASSFILE/)
    expect(ran.output).not.toMatch(/SECRETPW|pa@/)
  }, 60_000)

  it('shows a store URL it refuses without the password, even one with an @ in it', async () => {
    const ran = await demoExits([], { OPEN_DATA_GATE_STORE: 'mysql://root:pa@SECRETPW@db.example/gate' })
    expect(ran.code).toBe(2)
    expect(ran.output).toContain('"mysql://root:***@db.example/gate"')
    expect(ran.output).not.toMatch(/SECRETPW|pa@/)
    const keywords = await demoExits([], { OPEN_DATA_GATE_STORE: 'host=db.example password=SECRETPW dbname=gate' })
    expect(keywords.code).toBe(2)
    expect(keywords.output).not.toContain('SECRETPW')
  }, 60_000)

  it('prints its store in the banner as the driver reads it, without a ?password= parameter', async () => {
    // Database 13 of the test Redis, emptied of the demo's keys afterwards.
    const url = `${process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'}/13?password=SECRETPW`
    const { child, output } = await startDemo(false, { OPEN_DATA_GATE_STORE: url })
    try {
      expect(output).toMatch(/Store: redis:\/\/:\*\*\*@127\.0\.0\.1:6379\/13\./)
      expect(output).not.toContain('SECRETPW')
    } finally {
      child.kill('SIGTERM')
      const redis = new Redis(url.replace(/\?.*$/, ''))
      for await (const keys of redis.scanStream({ match: 'odg:*', count: 500 }) as AsyncIterable<string[]>) if (keys.length > 0) await redis.del(...keys)
      await redis.quit()
    }
  }, 60_000)
})
