/**
 * The README's quickstarts run as pasted: each framework's block, below the first block,
 * as one plain-JavaScript ES module (`.mjs`), checked by Node's own parser and imported for real, and the curl line it prints is run by curl. Only
 * the port is changed (to a free one), by catching the `listen` call the snippet makes.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { Server, type AddressInfo } from 'node:net'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { createGate, MemoryStore } from '../src/index.js'

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const SNIPPETS = new URL('./.readme-snippets/', import.meta.url)

/** The ```js blocks of a section, in order. */
function codeBlocks(section: string): string[] {
  const start = README.indexOf(`\n## ${section}\n`)
  expect(start, `no section ${section}`).toBeGreaterThan(-1)
  const end = README.indexOf('\n## ', start + 1)
  const text = README.slice(start, end === -1 ? undefined : end)
  return [...text.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1] as string)
}

const execFileAsync = promisify(execFile)
const hasCurl = (() => {
  try {
    execFileSync('curl', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()

/** Without curl: the printed line's URL and header, fetched, answered in curl -i's shape. */
async function viaFetch(line: string): Promise<string> {
  const [, url, token] = /^curl -i (\S+) -H "X-App-Token: ([^"]+)"$/.exec(line) as RegExpExecArray
  const res = await fetch(`http://${url as string}`, { headers: { 'x-app-token': token as string } })
  let head = `HTTP/1.1 ${res.status} ${res.statusText}\r\n`
  res.headers.forEach((value, name) => (head += `${name}: ${value}\r\n`))
  return `${head}\r\n${await res.text()}`
}

const [core, ...frameworks] = codeBlocks('Quickstart') as [string, ...string[]]
const named = frameworks.map((code) => [/from 'open-data-gate\/(\w+)'/.exec(code)?.[1] ?? 'unknown', code] as const)

describe('the README quickstarts', () => {
  afterAll(() => rmSync(SNIPPETS, { recursive: true, force: true }))

  it('has a block for each adapter, each ending in a listening server', () => {
    expect(named.map(([name]) => name)).toEqual(['express', 'koa', 'node', 'fastify', 'fetch', 'hono'])
    for (const [, code] of named) expect(code.trim()).toMatch(/(\.listen\(8080\)\)?|\.listen\(\{ port: 8080 \}\)|\n {2}port: 8080,\n\}\)|port: 8080 \}\))$/)
  })

  it('shows no TypeScript: every quickstart is plain JavaScript, the code blocks too', () => {
    const start = README.indexOf('\n## Quickstart\n')
    const section = README.slice(start, README.indexOf('\n## ', start + 1))
    expect(section).not.toMatch(/```ts\b/)
    // Node itself parses each file as an ES module: a type annotation or `import type` is a SyntaxError.
    mkdirSync(SNIPPETS, { recursive: true })
    for (const [name, code] of named) {
      const file = new URL(`${name}-syntax.mjs`, SNIPPETS)
      writeFileSync(file, `${core}\n${code}`)
      const checked = spawnSync(process.execPath, ['--check', fileURLToPath(file)], { encoding: 'utf8' })
      expect(checked.stderr, `the ${name} quickstart`).toBe('')
      expect(checked.status, `the ${name} quickstart`).toBe(0)
    }
  })

  it.each(named)('runs the %s quickstart as pasted', async (name, code) => {
    mkdirSync(SNIPPETS, { recursive: true })
    const file = new URL(`${name}.mjs`, SNIPPETS)
    writeFileSync(file, `${core}\n${code}`)
    const lines: string[] = []
    const printed = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void lines.push(args.join(' ')))
    const servers: Server[] = []
    const original = Server.prototype.listen as (...args: unknown[]) => Server
    const listen = vi.spyOn(Server.prototype, 'listen').mockImplementation(function (this: Server, ...args: unknown[]) {
      servers.push(this)
      // The snippet's port, 8080, may be taken: any free port on loopback does.
      const callback = args.find((a): a is () => void => typeof a === 'function')
      return original.call(this, 0, '127.0.0.1', callback)
    } as typeof Server.prototype.listen)
    try {
      await import(/* @vite-ignore */ file.href)
    } finally {
      listen.mockRestore()
      printed.mockRestore()
    }
    expect(servers).toHaveLength(1)
    const server = servers[0] as Server
    try {
      if (!server.listening) await new Promise((resolve) => server.once('listening', resolve))
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/resource/abcd-1234.json`
      const anonymous = await fetch(base)
      expect(anonymous.status).toBe(200)
      // Every quickstart answers JSON as JSON, node:http's included.
      expect(anonymous.headers.get('content-type')).toMatch(/^application\/json\b/)
      expect(await anonymous.json()).toMatchObject({ app: null })
      // The quickstart's anonymous budget is one shared pool of 60 an hour.
      expect(anonymous.headers.get('ratelimit-policy')).toBe('"anon";q=60;w=3600')
      const unknown = await fetch(base, { headers: { 'x-app-token': 'not-registered' } })
      expect(unknown.status).toBe(403)
      expect(await unknown.json()).toEqual({ code: 'permission_denied', error: true, message: 'Invalid app_token specified' })
      // The line the quickstart prints, pasted into a shell (only the port is another).
      const curl = lines.find((line) => line.startsWith('curl '))
      expect(curl, `the quickstart printed ${JSON.stringify(lines)}`).toMatch(/^curl -i localhost:8080\/resource\/abcd-1234\.json -H "X-App-Token: [A-Za-z0-9_-]+"$/)
      const pasted = (curl as string).replace('localhost:8080', `127.0.0.1:${(server.address() as AddressInfo).port}`)
      // Asynchronously: the server answering curl runs in this process.
      const answer = hasCurl ? (await execFileAsync('sh', ['-c', pasted], { encoding: 'utf8', timeout: 30_000 })).stdout : await viaFetch(pasted)
      expect(answer).toMatch(/^HTTP\/1\.1 200 /)
      expect(answer).toMatch(/^ratelimit-policy: "app";q=1000;w=3600\r?$/im)
      expect(answer).toContain('"app":"Transit dashboard"')
    } finally {
      server.close()
    }
  })
})

describe('the documented context (docs/request-lifecycle.md)', () => {
  it('names every field of req.gate, and of its application, throttle, user and accessToken', async () => {
    const doc = readFileSync(new URL('../docs/request-lifecycle.md', import.meta.url), 'utf8')
    const rows = new Map([...doc.matchAll(/^\| `(\w+)` \| (.*) \|$/gm)].map((m) => [m[1] as string, m[2] as string]))
    const gate = createGate({ store: new MemoryStore() })
    const { appToken } = await gate.applications.register({ name: 'Transit dashboard' })
    const user = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'ada@example.org' })
    const { accessToken } = await gate.tokens.issue({ userId: user.id, appToken })
    const outcome = await gate.handle({ method: 'GET', url: '/resource/x.json', headers: { authorization: `OAuth ${accessToken}` }, peerAddress: '127.0.0.1', tls: true })
    expect(outcome.type).toBe('next')
    const context = (outcome as unknown as { context: Record<string, unknown> }).context
    expect([...rows.keys()].filter((name) => name in context).sort()).toEqual(Object.keys(context).sort())
    for (const [field, value] of Object.entries(context)) {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) continue
      for (const key of Object.keys(value)) expect(rows.get(field), `req.gate.${field}.${key}`).toMatch(new RegExp(`\\b${key}\\b`))
    }
  })
})

