/**
 * `open-data-gate usage`: an application's usage as a table with a sparkline, or JSON, and
 * the top applications, run in this process on a MemoryStore handed in as the opened store.
 */
import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createGate, MemoryStore } from '../src/index.js'
import { run } from '../src/cli/main.js'
import { sparkline } from '../src/cli/commands/usage.js'
import type { OpenedStores } from '../src/cli/store-url.js'
import { coreRequest } from './support/requests.js'

async function exec(store: MemoryStore, argv: string[]) {
  let stdout = ''
  let stderr = ''
  const opened: OpenedStores = { records: { kind: 'redis', store, migrate: async () => null }, rates: undefined, close: async () => {} }
  const code = await run([...argv, '--store', 'redis://127.0.0.1:1'], {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: Readable.from([]),
    env: {},
    openStores: async () => opened,
  })
  return { code, stdout, stderr }
}

/** A store with usage: `busy` made 6 requests (2 throttled), `quiet` 1, and one anonymous request. */
async function storeWithUsage() {
  const store = new MemoryStore()
  const gate = createGate({ store, throttle: { application: { limit: 4, windowMs: 3_600_000 } } })
  const busy = await gate.applications.register({ name: 'Busy' })
  const quiet = await gate.applications.register({ name: 'Quiet' })
  for (let i = 0; i < 6; i++) await gate.handle(coreRequest({ headers: { 'x-app-token': busy.appToken } }))
  await gate.handle(coreRequest({ headers: { 'x-app-token': quiet.appToken } }))
  await gate.handle(coreRequest())
  await gate.close()
  return { store, busy: busy.appToken, quiet: quiet.appToken }
}

describe('open-data-gate usage', () => {
  it("shows an application's buckets with their totals and a sparkline, and the same as JSON", async () => {
    const { store, busy } = await storeWithUsage()
    const ran = await exec(store, ['usage', busy, '--since', '3h'])
    expect(ran).toMatchObject({ code: 0, stderr: '' })
    expect(ran.stdout).toContain(`${busy}  `)
    expect(ran.stdout).toMatch(/requests 6, 429 2, refused 0, 2xx 0, 4xx 0, 5xx 0, per hour since /)
    expect(ran.stdout).toMatch(/^START\s+REQUESTS\s+429\s+REFUSED\s+2XX\s+4XX\s+5XX$/m)
    expect(ran.stdout.trimEnd().split('\n').at(-1)).toMatch(/\s6\s+2\s+0\s+0\s+0\s+0\s+█+$/)
    const json = JSON.parse((await exec(store, ['usage', busy, '--since', '90m', '--granularity', 'minute', '--json'])).stdout)
    expect(json).toMatchObject({ appToken: busy, granularity: 'minute' })
    expect(json.buckets.length).toBeGreaterThanOrEqual(90)
    expect(json.buckets.reduce((n: number, b: { requests: number }) => n + b.requests, 0)).toBe(6)
  })

  it('shows the anonymous pool with `anonymous`, and refuses an unknown app token or a bad duration', async () => {
    const { store } = await storeWithUsage()
    expect((await exec(store, ['usage', 'anonymous'])).stdout).toMatch(/requests 1, .*unknown app tokens 0/)
    expect(await exec(store, ['usage', 'nobody-has-this'])).toMatchObject({ code: 1, stderr: 'open-data-gate: no application with app token nobody-has-this\n' })
    expect(await exec(store, ['usage', 'anonymous', '--since', 'yesterday'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--since takes a duration') })
    expect(await exec(store, ['usage', 'anonymous', '--since', '3000d', '--granularity', 'minute'])).toMatchObject({ code: 1, stderr: expect.stringContaining('at most 10000') })
  })

  it('ranks the top applications with their names and a sparkline each', async () => {
    const { store, busy, quiet } = await storeWithUsage()
    const ran = await exec(store, ['usage', 'top', '--since', '7d'])
    expect(ran.code).toBe(0)
    const lines = ran.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^APP TOKEN\s+NAME\s+REQUESTS\s+429\s+PER DAY$/)
    expect(lines[1]).toMatch(new RegExp(`^${busy}\\s+Busy\\s+6\\s+2\\s+ *█$`))
    expect(lines[2]).toMatch(new RegExp(`^${quiet}\\s+Quiet\\s+1\\s+0\\s+ *█$`))
    expect(JSON.parse((await exec(store, ['usage', 'top', '--by', 'throttled', '--json'])).stdout)).toEqual([{ appToken: busy, name: 'Busy', requests: 6, throttled: 2 }])
  })

  it('draws a sparkline scaled to the largest value, blank for zero', () => {
    expect(sparkline([0, 1, 2, 4, 8])).toBe(' ▁▂▄█')
    expect(sparkline([0, 0])).toBe('  ')
  })
})
