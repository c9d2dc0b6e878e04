/**
 * `open-data-gate usage APP_TOKEN` and `open-data-gate usage top`: an application's usage
 * over time, and the applications that use the portal most, read from the store through
 * `gate.usage` (docs/guides/usage.md).
 */
import type { Gate } from '../../gate.js'
import type { UsageGranularity } from '../../store/usage-contract.js'
import { topRange } from '../../usage/ranges.js'
import { RefusedError, UsageError } from '../cli-errors.js'
import { table, time } from '../output.js'

/** What these commands read of the command line (the rest of main.ts's context is theirs too). */
interface UsageCommandContext {
  readonly gate: Gate
  readonly args: readonly string[]
  readonly values: { readonly since?: string; readonly granularity?: string; readonly by?: string; readonly limit?: string; readonly app?: string }
}

/** A command, as main.ts's table of commands holds them. */
interface UsageCommand {
  readonly usage: string
  readonly summary: string
  readonly args: readonly string[]
  readonly options: ReadonlyArray<'since' | 'granularity' | 'by' | 'limit'>
  run(context: UsageCommandContext): Promise<{ json: unknown; human: string }>
}

const UNIT_MS: Readonly<Record<string, number>> = { m: 60_000, h: 3_600_000, d: 86_400_000 }
const BLOCKS = '▁▂▃▄▅▆▇█'

/** `--since 24h`, `90m`, `7d` as milliseconds; 24 hours without it. */
function since(text: string | undefined): number {
  if (text === undefined) return 86_400_000
  const match = /^(\d{1,6})([mhd])$/.exec(text)
  if (match === null || Number(match[1]) === 0) throw new UsageError(`--since takes a duration such as 90m, 24h or 7d, not ${JSON.stringify(text)}`)
  return Number(match[1]) * (UNIT_MS[match[2] as string] as number)
}

/** The granularity asked for, or the one that suits the range: minutes up to 2 hours, hours up to 7 days, days beyond. */
function granularity(text: string | undefined, rangeMs: number): UsageGranularity {
  if (text === undefined) return rangeMs <= 2 * UNIT_MS.h! ? 'minute' : rangeMs <= 7 * UNIT_MS.d! ? 'hour' : 'day'
  if (text !== 'minute' && text !== 'hour' && text !== 'day') throw new UsageError(`--granularity is minute, hour or day, not ${JSON.stringify(text)}`)
  return text
}

/** A row of block characters, one per value, scaled to the largest. */
export function sparkline(values: readonly number[]): string {
  const max = Math.max(0, ...values)
  return values.map((v) => (max === 0 || v === 0 ? ' ' : (BLOCKS[Math.min(BLOCKS.length - 1, Math.ceil((v / max) * BLOCKS.length) - 1)] as string))).join('')
}

/** The shadow limits' counts over `buckets`, as `name N, name N` by name, or `''` when none would have refused anything. */
function shadowTotals(buckets: ReadonlyArray<{ readonly shadow: Readonly<Record<string, number>> }>): string {
  const totals = new Map<string, number>()
  for (const bucket of buckets) for (const [name, count] of Object.entries(bucket.shadow)) totals.set(name, (totals.get(name) ?? 0) + count)
  return [...totals]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, count]) => `${name} ${count}`)
    .join(', ')
}

/** Reads the store's answer as the command's own refusal when the store keeps no usage or the range is refused. */
async function reading<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (error) {
    if (error instanceof TypeError) throw new RefusedError(error.message.replace(/^open-data-gate: /, ''))
    throw error
  }
}

export const USAGE_COMMANDS: Record<string, UsageCommand> = {
  usage: {
    usage: 'usage APP_TOKEN|anonymous [--since 24h] [--granularity minute|hour|day]',
    summary: "an application's requests, 429s, refusals (those of a suspension apart), answers and shadow limits' would-be refusals over time, bucket by bucket (`anonymous`: requests without an app token)",
    args: ['APP_TOKEN'],
    options: ['since', 'granularity'],
    async run({ gate, args, values }) {
      const word = args[0] as string
      const appToken = word === 'anonymous' ? null : word
      if (appToken !== null && (await gate.applications.find(appToken)) === undefined) throw new RefusedError(`no application with app token ${appToken}`)
      const rangeMs = since(values.since)
      const to = Date.now()
      const series = await reading(() => gate.usage.query({ appToken, from: to - rangeMs, to, granularity: granularity(values.granularity, rangeMs) }))
      const { buckets } = series
      const total = (pick: (b: (typeof buckets)[number]) => number) => buckets.reduce((n, b) => n + pick(b), 0)
      const max = Math.max(0, ...buckets.map((b) => b.requests))
      const bar = (n: number) => (max === 0 ? '' : '█'.repeat(Math.round((n / max) * 30)) || (n > 0 ? '▏' : ''))
      const shadow = shadowTotals(buckets)
      const summary =
        `${appToken ?? 'anonymous'}  ${sparkline(buckets.map((b) => b.requests))}\n` +
        `requests ${total((b) => b.requests)}, 429 ${total((b) => b.throttled)}, refused ${total((b) => b.refused)} (suspended ${total((b) => b.suspended)}), ` +
        `2xx ${total((b) => b.statuses['2xx'])}, 4xx ${total((b) => b.statuses['4xx'])}, 5xx ${total((b) => b.statuses['5xx'])}` +
        (appToken === null ? `, unknown app tokens ${total((b) => b.unknownAppToken)}` : '') +
        `, per ${series.granularity} since ${time(buckets[0]?.start)}\n` +
        (shadow === '' ? '' : `shadow limits would have refused: ${shadow}\n`) +
        '\n'
      return {
        json: series,
        human:
          summary +
          table(buckets, [
            { heading: 'START', value: (b) => time(b.start) },
            { heading: 'REQUESTS', value: (b) => String(b.requests) },
            { heading: '429', value: (b) => String(b.throttled) },
            { heading: 'REFUSED', value: (b) => String(b.refused) },
            { heading: 'SUSPENDED', value: (b) => String(b.suspended) },
            { heading: '2XX', value: (b) => String(b.statuses['2xx']) },
            { heading: '4XX', value: (b) => String(b.statuses['4xx']) },
            { heading: '5XX', value: (b) => String(b.statuses['5xx']) },
            { heading: 'SHADOW', value: (b) => shadowTotals([b]) || '-' },
            { heading: '', value: (b) => bar(b.requests) },
          ]),
      }
    },
  },
  'usage top': {
    usage: 'usage top [--since 24h] [--by requests|throttled] [--limit N] [--granularity minute|hour|day]',
    summary: 'the applications with the most requests (or 429s), each with a sparkline of its requests, and the range it added up',
    args: [],
    options: ['since', 'by', 'limit', 'granularity'],
    async run({ gate, values }) {
      const rangeMs = since(values.since)
      const to = Date.now()
      const by = values.by ?? 'requests'
      if (by !== 'requests' && by !== 'throttled') throw new UsageError(`--by is requests or throttled, not ${JSON.stringify(by)}`)
      const limit = values.limit === undefined ? 10 : Number(values.limit)
      if (!/^\d+$/.test(values.limit ?? '10') || limit < 1 || limit > 1000) throw new RefusedError(`--limit must be a whole number from 1 to 1000, not ${JSON.stringify(values.limit)}`)
      // The range the ranking adds up, said as it is: from the start of the bucket the asked start falls in.
      const used = await reading(async () => topRange(to - rangeMs, to, values.granularity === undefined ? undefined : granularity(values.granularity, rangeMs)))
      const { from } = used
      const top = await reading(() => gate.usage.top({ from, to, by, limit, granularity: used.granularity }))
      // A line fits a terminal: minutes up to 2 hours, hours up to 2 days, days beyond.
      const shape: UsageGranularity = rangeMs <= 2 * UNIT_MS.h! ? 'minute' : rangeMs <= 2 * UNIT_MS.d! ? 'hour' : 'day'
      const lines = await Promise.all(top.map(async (entry) => sparkline((await gate.usage.query({ appToken: entry.appToken, from, to, granularity: shape })).buckets.map((b) => b.requests))))
      const heading = `top ${limit} by ${by}, ${time(from)} to ${time(to)} (${used.buckets} ${used.granularity} ${used.buckets === 1 ? 'bucket' : 'buckets'})\n\n`
      return {
        json: { from, to, granularity: used.granularity, by, applications: top },
        human:
          heading +
          table(
            top.map((entry, i) => ({ ...entry, line: lines[i] as string })),
            [
              { heading: 'APP TOKEN', value: (e) => e.appToken },
              { heading: 'NAME', value: (e) => e.name ?? '(deleted)' },
              { heading: 'REQUESTS', value: (e) => String(e.requests) },
              { heading: '429', value: (e) => String(e.throttled) },
              { heading: `PER ${shape.toUpperCase()}`, value: (e) => e.line },
            ],
          ),
      }
    },
  },
}

/** The command name of a line starting with `usage`: `usage top`, or `usage` with an app token. */
export function usageCommandName(second: string | undefined): string {
  return second === 'top' ? 'usage top' : 'usage'
}
