/**
 * Where the gate tells the operator what went wrong: the `logger` option. The gate calls
 * `logger.warn(message, fields)` (and `error`, `info`): a message string first, then a
 * plain object of fields. That is `console`'s shape and winston's (`logger.warn(message,
 * meta)` merges the fields into the entry). pino and bunyan take the fields first
 * (`pino.warn(fields, message)`; a second argument after a message would be a format
 * argument, dropped): a logger recognised as one of theirs, a child and Fastify's
 * `app.log` included, is called that way, so its entries keep `code`, `hint` and the rest.
 *
 * Without a `logger` the lines go where the gate's warnings always went:
 * `process.emitWarning(message, { code })`, one line on stderr, each with its code
 * (`ODG_STORE_ERROR`, ...), which `process.on('warning')` and `--no-warnings` see as for
 * any other warning. `logger: false` says nothing.
 *
 * Never a secret in a line: the lines are made from the gate's own words and a store's
 * error message, from which any password a URL or a `password=` carries is struck.
 * @see docs/guides/operating.md
 */
import { redactPasswords } from '../util/redact-passwords.js'

/** The fields of a log line: a stable `code` (`ODG_STORE_ERROR`, ...) and what the line is about. */
export interface GateLogFields {
  /** The line's code, the same as the process warning's without a logger. */
  readonly code: string
  /** The request the line is about, when there is one (the `X-Request-Id` the client got). */
  readonly requestId?: string | undefined
  /** What to do about it, when the gate knows (`run \`open-data-gate migrate\` or \`store.migrate()\``). */
  readonly hint?: string | undefined
  readonly [field: string]: string | number | boolean | undefined
}

/**
 * Any logger with `console`'s four methods: `console`, winston, pino, bunyan, Fastify's
 * `request.log`, your own. Each is called as a method, so a logger that needs its `this`
 * keeps it; pino and bunyan are called `(fields, message)`, as they expect, the others
 * `(message, fields)`.
 */
export interface GateLogger {
  error(message: string, fields: GateLogFields): unknown
  warn(message: string, fields: GateLogFields): unknown
  info(message: string, fields: GateLogFields): unknown
  debug(message: string, fields: GateLogFields): unknown
}

type Level = keyof GateLogger

const LEVELS: readonly Level[] = ['error', 'warn', 'info', 'debug']

/** @throws {TypeError} naming the option, unless `value` is a logger, `false` or left out */
export function resolveLogger(value: unknown): GateLog {
  if (value === undefined) return new GateLog('process')
  if (value === false) return new GateLog(null)
  if (typeof value !== 'object' && typeof value !== 'function') {
    throw new TypeError(`open-data-gate: logger must be an object with error, warn, info and debug methods (console, pino, winston), or false, got ${value === null ? 'null' : typeof value}`)
  }
  if (value === null) throw new TypeError('open-data-gate: logger must be an object with error, warn, info and debug methods (console, pino, winston), or false, got null')
  const missing = LEVELS.filter((level) => typeof (value as Partial<Record<Level, unknown>>)[level] !== 'function')
  if (missing.length > 0) throw new TypeError(`open-data-gate: logger has no ${missing.join(', ')} method${missing.length > 1 ? 's' : ''}; it needs error, warn, info and debug (console, pino, winston)`)
  return new GateLog(value as GateLogger, takesFieldsFirst(value))
}

/** pino marks each logger (children too) with its serializers under a global symbol. */
const PINO_SERIALIZERS = Symbol.for('pino.serializers')

/**
 * Whether a logger takes `(fields, message)`: a pino logger (it carries pino's global
 * serializers symbol) or a bunyan one (its `streams` list, `fields` object and `child`).
 */
function takesFieldsFirst(logger: object): boolean {
  if (PINO_SERIALIZERS in logger) return true
  const candidate = logger as { streams?: unknown; fields?: unknown; child?: unknown }
  return Array.isArray(candidate.streams) && typeof candidate.fields === 'object' && candidate.fields !== null && typeof candidate.child === 'function'
}

/** The gate's side of the logger: one line per call, never a newline, never a password. */
export class GateLog {
  /** `'process'`: process warnings (the default); `null`: `logger: false`. */
  readonly #target: GateLogger | 'process' | null
  /** pino's and bunyan's order: the fields, then the message. */
  readonly #fieldsFirst: boolean

  constructor(target: GateLogger | 'process' | null, fieldsFirst = false) {
    this.#target = target
    this.#fieldsFirst = fieldsFirst
  }

  /**
   * Whether the operator gave a logger. Some lines go only there: one per failing request
   * (a 500) would flood the process warnings, which say each thing once.
   */
  get given(): boolean {
    return this.#target !== null && this.#target !== 'process'
  }

  error(message: string, fields: GateLogFields): void {
    this.#write('error', message, fields)
  }

  warn(message: string, fields: GateLogFields): void {
    this.#write('warn', message, fields)
  }

  info(message: string, fields: GateLogFields): void {
    this.#write('info', message, fields)
  }

  #write(level: Level, message: string, fields: GateLogFields): void {
    const target = this.#target
    if (target === null) return
    const line = oneLine(message, fields)
    if (target === 'process') {
      process.emitWarning(line, { code: fields.code })
      return
    }
    try {
      if (this.#fieldsFirst) (target[level] as unknown as (fields: GateLogFields, message: string) => unknown).call(target, cleanFields(fields), line)
      else target[level](line, cleanFields(fields))
    } catch {
      // A logger that throws must not turn the request it writes about into a 500.
    }
  }
}

/** The message as one line: the hint and the request id appended, whitespace runs folded, passwords struck. */
function oneLine(message: string, fields: GateLogFields): string {
  let line = message
  if (fields.hint !== undefined) line += ` Hint: ${fields.hint}`
  if (fields.requestId !== undefined) line += ` (request ${fields.requestId})`
  return redactPasswords(line.replace(/\s+/g, ' ').trim())
}

/** The fields without those left undefined, their strings as careful as the line. */
function cleanFields(fields: GateLogFields): GateLogFields {
  const out: Record<string, string | number | boolean> = { code: fields.code }
  for (const key of Object.keys(fields)) {
    const value = fields[key]
    if (value === undefined) continue
    out[key] = typeof value === 'string' ? redactPasswords(value.replace(/\s+/g, ' ').trim()) : value
  }
  return out as GateLogFields
}

/** A thrown value's message, as a log line may show it. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message === '' ? error.name : error.message
  return String(error)
}
