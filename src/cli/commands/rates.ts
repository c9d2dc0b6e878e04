/**
 * `rate ...`: read and forget rate keys in the rate store directly (the key formats are
 * in src/limits/rate-keys.ts).
 */
import type { Gate } from '../../gate.js'
import { parseRateKey } from '../../limits/rate-keys.js'
import { UnreachableError, UsageError } from '../cli-errors.js'
import { integer, type Command, type Output, type Values } from '../command.js'
import { periodBounds, type PeriodBounds } from '../../limits/calendar-period.js'
import type { LimitResult, LimitStep } from '../../limits/limit-steps.js'
import type { RateStore } from '../../store/store.js'
import { fields } from '../output.js'
import { COMMAND_TIMEOUT_MS } from '../store-url.js'
import { findApplication } from './applications.js'
import { checkRateKey } from './rate-key-check.js'

export const RATE_COMMANDS: Record<string, Command> = {
  'rate show': {
    usage: 'rate show KEY --limit N (--window-ms MS | --period day|month [--time-zone ZONE])',
    summary:
      "show what is left of a rate key (app:APP_TOKEN, anon, anon:ADDRESS, a plan's limit {app:APP_TOKEN}:NAME or one per address {app:APP_TOKEN}:NAME@ADDRESS) under the policy the serving gate uses, without consuming any of it (--limit may be left out for an application with its own limit; --period for a plan's calendar quota)",
    args: ['KEY'],
    options: ['limit', 'window-ms', 'period', 'time-zone'],
    async run({ gate, rates, args, values }) {
      const key = args[0] as string
      const parsed = await checkRateKey(gate, key)
      if (parsed.kind === 'limit') return showLimit(rates, key, values)
      if (values.period !== undefined || values['time-zone'] !== undefined) throw new UsageError(`rate show ${key}: --period and --time-zone are for a plan's calendar quota ({app:APP_TOKEN}:NAME); this key is a rolling window, read with --window-ms`)
      const policy = await ratePolicy(gate, key, values)
      // A step of cost 0 reads the state without consuming: the store's own arithmetic.
      const result = await withTimeout(rates.consumeRate(key, policy.limit, policy.windowMs, 0), 'consumeRate')
      const out = { key, limit: policy.limit, windowMs: policy.windowMs, remaining: result.remaining, resetMs: result.resetMs, retryAfterMs: result.retryAfterMs }
      return {
        json: out,
        human: fields([
          ['key', key],
          ['policy', `${policy.limit} per ${policy.windowMs} ms${policy.ownLimit ? " (the application's own limit)" : ''}`],
          ['remaining', String(out.remaining)],
          ['full again in', `${Math.ceil(out.resetMs / 1000)} s`],
          ['next request in', `${Math.ceil(out.retryAfterMs / 1000)} s`],
        ]),
      }
    },
  },
  'rate reset': {
    usage: 'rate reset KEY',
    summary: 'forget a rate key (one the gate writes, as for rate show): its client starts with a full budget (instances drop their local block within its wait)',
    args: ['KEY'],
    options: [],
    async run({ gate, rates, args }) {
      const key = args[0] as string
      await checkRateKey(gate, key)
      await withTimeout(rates.resetRate(key), 'resetRate')
      return { json: { key, reset: true }, human: `reset rate key ${key}\n` }
    },
  },
}

/**
 * `rate show` of a plan's limit (`{app:APP_TOKEN}:NAME`, or `…@ADDRESS` per client
 * address): read as the gate decides it, with `consumeLimits` and a step of cost 0, a
 * rolling window (`--window-ms`) or a calendar quota (`--period`, `--time-zone`) as the
 * serving gate's plan says; neither is in the store, so both are told, never guessed.
 */
async function showLimit(rates: RateStore, key: string, values: Values): Promise<Output> {
  if (values.limit === undefined || (values['window-ms'] === undefined) === (values.period === undefined)) {
    throw new UsageError(`rate show ${key} needs --limit and either --window-ms (a rolling limit) or --period day|month (a calendar quota): the plan ${cannotKnow('throttle.plans')}`)
  }
  const limit = integer('--limit', values.limit)
  let step: LimitStep
  let policy: string
  if (values.period === undefined) {
    if (values['time-zone'] !== undefined) throw new UsageError(`rate show ${key}: --time-zone is for a calendar quota (--period)`)
    const windowMs = integer('--window-ms', values['window-ms'] as string)
    step = { kind: 'rate', key, limit, windowMs, cost: 0 }
    policy = `${limit} per ${windowMs} ms`
  } else {
    const period = values.period
    if (period !== 'day' && period !== 'month') throw new UsageError(`--period must be day or month, not ${JSON.stringify(period)}`)
    const timeZone = values['time-zone'] ?? 'UTC'
    let bounds: PeriodBounds
    try {
      bounds = periodBounds(period, timeZone, Date.now())
    } catch {
      throw new UsageError(`--time-zone must be an IANA time zone such as Europe/Paris, not ${JSON.stringify(timeZone)}`)
    }
    step = { kind: 'quota', key, limit, periodStart: bounds.start, periodEnd: bounds.end, cost: 0 }
    policy = `${limit} per ${period} (${timeZone}), this one from ${new Date(bounds.start).toISOString()} to ${new Date(bounds.end).toISOString()}`
  }
  if (typeof rates.consumeLimits !== 'function') throw new UsageError(`rate show ${key}: this rate store has no consumeLimits, so it keeps no plan's limits`)
  const [result] = await withTimeout(rates.consumeLimits([step]), 'consumeLimits')
  const { remaining, resetMs, retryAfterMs } = result as LimitResult
  const out = step.kind === 'rate' ? { key, limit, windowMs: step.windowMs, remaining, resetMs, retryAfterMs } : { key, limit, period: values.period, timeZone: values['time-zone'] ?? 'UTC', periodStart: step.periodStart, periodEnd: step.periodEnd, remaining, resetMs, retryAfterMs }
  return {
    json: out,
    human: fields([
      ['key', key],
      ['policy', policy],
      ['remaining', String(remaining)],
      ['full again in', `${Math.ceil(resetMs / 1000)} s`],
      ['next request in', `${Math.ceil(retryAfterMs / 1000)} s`],
    ]),
  }
}

/**
 * The policy `rate show` reads a key under. The throttle configuration lives in the
 * serving process (createGate's `throttle`), not in the store, so the command cannot know
 * it, and a key read under another policy shows a wrong state (a spent budget of 5 a
 * minute reads as nearly full under 60 an hour). So it is told, never guessed: only an
 * application's own limit is in the store, and its window is still the serving gate's.
 */
async function ratePolicy(gate: Gate, key: string, values: Values): Promise<{ limit: number; windowMs: number; ownLimit: boolean }> {
  const limit = values.limit === undefined ? undefined : integer('--limit', values.limit)
  const windowMs = values['window-ms'] === undefined ? undefined : integer('--window-ms', values['window-ms'])
  const parsed = parseRateKey(key)
  // An application must exist, whatever the line says: a typo in its token would read an empty key as "full".
  const app = parsed?.kind === 'application' ? await findApplication(gate, parsed.appToken) : undefined
  if (limit !== undefined && windowMs !== undefined) return { limit, windowMs, ownLimit: false }
  if (app !== undefined && app.limit !== null) {
    if (windowMs !== undefined) return { limit: app.limit, windowMs, ownLimit: true }
    throw new UsageError(`rate show ${key} needs --window-ms: this application's own limit (${app.limit}) is in the store, but its window ${cannotKnow('throttle.application.windowMs')}`)
  }
  if (app !== undefined) throw new UsageError(`rate show ${key} needs --limit and --window-ms: this application has no limit of its own, and the configured one ${cannotKnow('throttle.application')}`)
  if (parsed?.kind === 'anonymous') throw new UsageError(`rate show ${key} needs --limit and --window-ms: the throttle policy ${cannotKnow('throttle.anonymous')}`)
  throw new UsageError(`rate show ${key} needs --limit and --window-ms (the policy of this key is not known to the command)`)
}

/** Why the command refuses to guess a policy set by the serving gate's `option`. */
function cannotKnow(option: string): string {
  return `is set in the serving process (createGate's ${option}), not kept in the store, so the command cannot know it; read under another policy, the key's state would show a wrong remaining`
}

function withTimeout<T>(value: T | PromiseLike<T>, operation: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`${operation} timed out after ${COMMAND_TIMEOUT_MS} ms`), { code: 'ETIMEDOUT' })), COMMAND_TIMEOUT_MS)
  })
  // The rate store is called directly (the gate guards only its own calls): any failure is an outage.
  return Promise.race([Promise.resolve(value), timeout])
    .catch((error: unknown) => {
      throw new UnreachableError(`the rate store did not answer (${operation}): ${error instanceof Error ? error.message : String(error)}`)
    })
    .finally(() => clearTimeout(timer))
}
