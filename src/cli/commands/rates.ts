/**
 * `rate ...`: read and forget rate keys in the rate store directly (the key formats are
 * in src/limits/rate-keys.ts).
 */
import { DEFAULT_ANONYMOUS_LIMIT, DEFAULT_APPLICATION_LIMIT } from '../../config/defaults.js'
import type { Gate } from '../../gate.js'
import { parseRateKey } from '../../limits/rate-keys.js'
import { UnreachableError, UsageError } from '../cli-errors.js'
import { integer, type Command, type Values } from '../command.js'
import { fields } from '../output.js'
import { COMMAND_TIMEOUT_MS } from '../store-url.js'
import { findApplication } from './applications.js'

export const RATE_COMMANDS: Record<string, Command> = {
  'rate show': {
    usage: 'rate show KEY [--limit N --window-ms MS]',
    summary: 'show what is left of a rate key (app:APP_TOKEN, anon, anon:ADDRESS) without consuming any of it',
    args: ['KEY'],
    options: ['limit', 'window-ms'],
    async run({ gate, rates, args, values }) {
      const key = args[0] as string
      const policy = await ratePolicy(gate, key, values)
      // A step of cost 0 reads the state without consuming: the store's own arithmetic.
      const result = await withTimeout(rates.consumeRate(key, policy.limit, policy.windowMs, 0), 'consumeRate')
      const out = { key, limit: policy.limit, windowMs: policy.windowMs, remaining: result.remaining, resetMs: result.resetMs, retryAfterMs: result.retryAfterMs }
      return {
        json: out,
        human: fields([
          ['key', key],
          ['policy', `${policy.limit} per ${policy.windowMs} ms${policy.assumed ? ' (assumed: say --limit and --window-ms if the gate is configured otherwise)' : ''}`],
          ['remaining', String(out.remaining)],
          ['full again in', `${Math.ceil(out.resetMs / 1000)} s`],
          ['next request in', `${Math.ceil(out.retryAfterMs / 1000)} s`],
        ]),
      }
    },
  },
  'rate reset': {
    usage: 'rate reset KEY',
    summary: 'forget a rate key: its client starts with a full budget (instances drop their local block within its wait)',
    args: ['KEY'],
    options: [],
    async run({ rates, args }) {
      const key = args[0] as string
      await withTimeout(rates.resetRate(key), 'resetRate')
      return { json: { key, reset: true }, human: `reset rate key ${key}\n` }
    },
  },
}

/**
 * The policy `rate show` reads a key under. The gate's throttle configuration lives in
 * the serving process, not the store, so the command assumes the gate's defaults (an
 * application's own limit when it has one) unless told.
 */
async function ratePolicy(gate: Gate, key: string, values: Values): Promise<{ limit: number; windowMs: number; assumed: boolean }> {
  const limit = values.limit === undefined ? undefined : integer('--limit', values.limit)
  const windowMs = values['window-ms'] === undefined ? undefined : integer('--window-ms', values['window-ms'])
  if (limit !== undefined && windowMs !== undefined) return { limit, windowMs, assumed: false }
  const parsed = parseRateKey(key)
  if (parsed?.kind === 'application') {
    const app = await findApplication(gate, parsed.appToken)
    return { limit: limit ?? app.limit ?? DEFAULT_APPLICATION_LIMIT.limit, windowMs: windowMs ?? DEFAULT_APPLICATION_LIMIT.windowMs, assumed: limit === undefined && app.limit === null }
  }
  if (parsed?.kind === 'anonymous') return { limit: limit ?? DEFAULT_ANONYMOUS_LIMIT.limit, windowMs: windowMs ?? DEFAULT_ANONYMOUS_LIMIT.windowMs, assumed: true }
  throw new UsageError(`rate show ${key} needs --limit and --window-ms (the policy of this key is not known to the command)`)
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
