/**
 * The README's quickstarts run as pasted: each framework's block, below the first block,
 * as one ES module, imported for real. Only the port is changed (to a free one), by
 * catching the `listen` call the snippet makes.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { Server, type AddressInfo } from 'node:net'
import { afterAll, describe, expect, it, vi } from 'vitest'

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const SNIPPETS = new URL('./.readme-snippets/', import.meta.url)

/** The ```ts blocks of a section, in order. */
function codeBlocks(section: string): string[] {
  const start = README.indexOf(`\n## ${section}\n`)
  expect(start, `no section ${section}`).toBeGreaterThan(-1)
  const end = README.indexOf('\n## ', start + 1)
  const text = README.slice(start, end === -1 ? undefined : end)
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string)
}

const [core, ...frameworks] = codeBlocks('Quickstart') as [string, ...string[]]
const named = frameworks.map((code) => [/from 'open-data-gate\/(\w+)'/.exec(code)?.[1] ?? 'unknown', code] as const)

describe('the README quickstarts', () => {
  afterAll(() => rmSync(SNIPPETS, { recursive: true, force: true }))

  it('has a block for each adapter, each ending in a listening server', () => {
    expect(named.map(([name]) => name)).toEqual(['express', 'koa', 'node', 'fastify', 'fetch'])
    for (const [, code] of named) expect(code.trim()).toMatch(/(\.listen\(8080\)\)?|\.listen\(\{ port: 8080 \}\)|\n {2}port: 8080,\n\}\))$/)
  })

  it.each(named)('runs the %s quickstart as pasted', async (name, code) => {
    mkdirSync(SNIPPETS, { recursive: true })
    const file = new URL(`${name}.ts`, SNIPPETS)
    writeFileSync(file, `${core}\n${code}`)
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
    }
    expect(servers).toHaveLength(1)
    const server = servers[0] as Server
    try {
      if (!server.listening) await new Promise((resolve) => server.once('listening', resolve))
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/resource/abcd-1234.json`
      const anonymous = await fetch(base)
      expect(anonymous.status).toBe(200)
      expect(await anonymous.json()).toMatchObject({ app: null })
      // The quickstart's anonymous budget is one shared pool of 60 an hour.
      expect(anonymous.headers.get('ratelimit-policy')).toBe('"anon";q=60;w=3600')
      const unknown = await fetch(base, { headers: { 'x-app-token': 'not-registered' } })
      expect(unknown.status).toBe(403)
      expect(await unknown.json()).toEqual({ code: 'permission_denied', error: true, message: 'Invalid app_token specified' })
    } finally {
      server.close()
    }
  })
})
