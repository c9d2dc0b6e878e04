/**
 * `open-data-gate usage`: an application's usage as a table with a sparkline, or JSON, and
 * the top applications, run in this process on a MemoryStore handed in as the opened store.
 */
import { Readable } from 'node:stream'
import { describe, expect, it, vi } from 'vitest'
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
    expect(ran.stdout).toMatch(/requests 6, 429 2, refused 0 \(suspended 0\), 2xx 0, 4xx 0, 5xx 0, per hour since \S+\n\n/)
    expect(ran.stdout).toMatch(/^START\s+REQUESTS\s+429\s+REFUSED\s+SUSPENDED\s+2XX\s+4XX\s+5XX\s+SHADOW$/m)
    expect(ran.stdout.trimEnd().split('\n').at(-1)).toMatch(/\s6\s+2\s+0\s+0\s+0\s+0\s+0\s+-\s+█+$/)
    const json = JSON.parse((await exec(store, ['usage', busy, '--since', '90m', '--granularity', 'minute', '--json'])).stdout)
    expect(json).toMatchObject({ appToken: busy, granularity: 'minute' })
    expect(json.buckets.length).toBeGreaterThanOrEqual(90)
    expect(json.buckets.reduce((n: number, b: { requests: number }) => n + b.requests, 0)).toBe(6)
  })

  it("shows a suspended application's refusals and the shadow limits' counts, per bucket and in all", async () => {
    const store = new MemoryStore()
    const gate = createGate({ store, throttle: false })
    const { appToken } = await gate.applications.register({ name: 'Busy' })
    // This hour and the one before: the table's last two lines, whatever the minute now.
    const now = Date.now()
    const hour = now - (now % 3_600_000)
    const row = (start: number, counts: { requests: number; refused: number; suspended: number; shadow: Record<string, number> }) => ({
      appToken, granularity: 'hour' as const, start, expiresAt: Date.now() + 86_400_000, throttled: 0, statuses: { '2xx': counts.requests - counts.refused, '3xx': 0, '4xx': 0, '5xx': 0 }, unknownAppToken: 0, ...counts,
    })
    await store.addUsage({
      writer: 'w', sequence: 1, createdAt: Date.now(), idExpiresAt: Date.now() + 86_400_000,
      rows: [row(hour - 3_600_000, { requests: 5, refused: 3, suspended: 2, shadow: { 'burst-10s': 1 } }), row(hour, { requests: 4, refused: 0, suspended: 0, shadow: { 'burst-10s': 2, 'daily-cap': 4 } })],
    })
    const ran = await exec(store, ['usage', appToken, '--since', '3h'])
    expect(ran).toMatchObject({ code: 0, stderr: '' })
    expect(ran.stdout).toMatch(/requests 9, 429 0, refused 3 \(suspended 2\), 2xx 6, .*\nshadow limits would have refused: burst-10s 3, daily-cap 4\n\n/)
    const lines = ran.stdout.trimEnd().split('\n')
    expect(lines.at(-2)).toMatch(/\s5\s+0\s+3\s+2\s+2\s+0\s+0\s+burst-10s 1\s+█+$/)
    expect(lines.at(-1)).toMatch(/\s4\s+0\s+0\s+0\s+4\s+0\s+0\s+burst-10s 2, daily-cap 4\s+█+$/)
    const json = JSON.parse((await exec(store, ['usage', appToken, '--since', '3h', '--json'])).stdout)
    expect(json.buckets.at(-2)).toMatchObject({ suspended: 2, shadow: { 'burst-10s': 1 } })
    expect(json.buckets.at(-1)).toMatchObject({ suspended: 0, shadow: { 'burst-10s': 2, 'daily-cap': 4 } })
    await gate.close()
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
    expect(lines[0]).toMatch(/^top 10 by requests, \S+Z to \S+Z \((168|169) hour buckets\)$/)
    expect(lines[2]).toMatch(/^APP TOKEN\s+NAME\s+REQUESTS\s+429\s+PER DAY$/)
    expect(lines[3]).toMatch(new RegExp(`^${busy}\\s+Busy\\s+6\\s+2\\s+ *█$`))
    expect(lines[4]).toMatch(new RegExp(`^${quiet}\\s+Quiet\\s+1\\s+0\\s+ *█$`))
    const json = JSON.parse((await exec(store, ['usage', 'top', '--by', 'throttled', '--json'])).stdout)
    expect(json).toMatchObject({ granularity: 'hour', by: 'throttled', applications: [{ appToken: busy, name: 'Busy', requests: 6, throttled: 2 }] })
    expect(json.to - json.from).toBeGreaterThanOrEqual(24 * 3_600_000)
    expect(json.to - json.from).toBeLessThan(25 * 3_600_000)
  })

  it('ranks "the last hour" over the last hour, by the minute, and prints the range it added up', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    try {
      vi.setSystemTime(Date.UTC(2026, 10, 27, 12, 45))
      const store = new MemoryStore()
      const gate = createGate({ store })
      const [early, late] = await Promise.all(['Early', 'Late'].map((name) => gate.applications.register({ name })))
      const minute = 60_000
      // What a gate writes for a request at 11:30 (75 minutes ago) and two at 12:40.
      const rows = (appToken: string, start: number, requests: number) =>
        (['minute', 'hour', 'day'] as const).map((granularity) => {
          const step = { minute, hour: 60 * minute, day: 1440 * minute }[granularity]
          return { appToken, granularity, start: start - (start % step), expiresAt: Date.now() + 86_400_000, requests, throttled: 0, refused: 0, suspended: 0, shadow: {}, statuses: { '2xx': requests, '3xx': 0, '4xx': 0, '5xx': 0 }, unknownAppToken: 0 }
        })
      await store.addUsage({ writer: 'w', sequence: 1, createdAt: Date.now(), idExpiresAt: Date.now() + 86_400_000, rows: [...rows(early!.appToken, Date.UTC(2026, 10, 27, 11, 30), 5), ...rows(late!.appToken, Date.UTC(2026, 10, 27, 12, 40), 2)] })
      const ran = await exec(store, ['usage', 'top', '--since', '1h'])
      expect(ran).toMatchObject({ code: 0, stderr: '' })
      const lines = ran.stdout.trimEnd().split('\n')
      expect(lines[0]).toBe('top 10 by requests, 2026-11-27T11:45:00Z to 2026-11-27T12:45:00Z (60 minute buckets)')
      expect(lines.slice(3).map((line) => line.split(/\s+/)[1])).toEqual(['Late'])
      expect(JSON.parse((await exec(store, ['usage', 'top', '--since', '1h', '--json'])).stdout)).toEqual({
        from: Date.UTC(2026, 10, 27, 11, 45),
        to: Date.UTC(2026, 10, 27, 12, 45),
        granularity: 'minute',
        by: 'requests',
        applications: [{ appToken: late!.appToken, name: 'Late', requests: 2, throttled: 0 }],
      })
      // The library ranks the same way.
      expect((await gate.usage.top({ from: Date.now() - 3_600_000 })).map((entry) => entry.name)).toEqual(['Late'])
      // Asked for hours, it says so, and the range it then adds up.
      expect((await exec(store, ['usage', 'top', '--since', '1h', '--granularity', 'hour'])).stdout.split('\n')[0]).toBe('top 10 by requests, 2026-11-27T11:00:00Z to 2026-11-27T12:45:00Z (2 hour buckets)')
      await gate.close()
    } finally {
      vi.useRealTimers()
    }
  })

  it('draws a sparkline scaled to the largest value, blank for zero', () => {
    expect(sparkline([0, 1, 2, 4, 8])).toBe(' ▁▂▄█')
    expect(sparkline([0, 0])).toBe('  ')
  })
})
