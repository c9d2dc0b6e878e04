/**
 * What a command of `open-data-gate` is: its usage line, its arguments and options, and
 * what it runs on (the gate over the stores the command line names). The commands
 * themselves are in src/cli/commands/, one module per group; src/cli/main.ts parses the
 * line and dispatches.
 */
import type { Gate } from '../gate.js'
import type { RateStore } from '../store/store.js'
import { RefusedError } from './cli-errors.js'
import type { SecretSource } from './secret-input.js'
import type { OpenedStores, StoreSpec } from './store-url.js'

/** What the command reads and writes: the process's streams and environment, or a test's. */
export interface CliIo {
  readonly stdout: { write(text: string): unknown }
  readonly stderr: { write(text: string): unknown }
  /** Where a password is read from: a prompt when it is a terminal, all of it otherwise. */
  readonly stdin: SecretSource
  readonly env: Readonly<Record<string, string | undefined>>
  /** Opens the stores; by default the Redis and PostgreSQL store modules. */
  readonly openStores?: (spec: StoreSpec) => Promise<OpenedStores>
}

/** Every option of the command line, in `node:util` `parseArgs` form; each command says which it takes. */
export const OPTIONS = {
  store: { type: 'string' },
  'rate-store': { type: 'string' },
  prefix: { type: 'string' },
  schema: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
  name: { type: 'string' },
  'callback-prefix': { type: 'string' },
  limit: { type: 'string' },
  'window-ms': { type: 'string' },
  period: { type: 'string' },
  'time-zone': { type: 'string' },
  'grace-ms': { type: 'string' },
  'retire-now': { type: 'boolean' },
  reason: { type: 'string' },
  default: { type: 'boolean' },
  plans: { type: 'string' },
  user: { type: 'string' },
  app: { type: 'string' },
  username: { type: 'string' },
  'display-name': { type: 'string' },
  'screen-name': { type: 'string' },
  email: { type: 'string' },
  right: { type: 'string', multiple: true },
  'no-password': { type: 'boolean' },
  since: { type: 'string' },
  granularity: { type: 'string' },
  by: { type: 'string' },
} as const

export type OptionName = keyof typeof OPTIONS

/** The options given on the line, by name. */
export type Values = { [K in OptionName]?: (typeof OPTIONS)[K] extends { type: 'boolean' } ? boolean : (typeof OPTIONS)[K] extends { multiple: true } ? string[] : string }

/** What a command prints: the JSON document for `--json`, the text for people. */
export interface Output {
  readonly json: unknown
  readonly human: string
}

/** What a command runs on. */
export interface Context {
  readonly gate: Gate
  readonly stores: OpenedStores
  readonly rates: RateStore
  readonly args: readonly string[]
  readonly values: Values
  readonly io: CliIo
}

/** One command: `apps register`, `rate show`, ... */
export interface Command {
  /** The words after `open-data-gate`, then positional arguments and options, for the help. */
  readonly usage: string
  readonly summary: string
  /** Names of the positional arguments, all required. */
  readonly args: readonly string[]
  /** Names of positional arguments that may follow the required ones. */
  readonly optionalArgs?: readonly string[]
  readonly options: readonly OptionName[]
  readonly required?: readonly OptionName[]
  /** Checks what the argument and option lists cannot say (one of two forms), before any store is opened. @throws {UsageError} */
  readonly checkLine?: (args: readonly string[], values: Values) => void
  run(context: Context): Promise<Output>
}

/** Said under every secret the command prints. */
export const SHOWN_ONCE = 'Shown once: store it now. Only its hash is kept.'

/** `text` as a positive whole number. @throws {RefusedError} naming `what` */
export function integer(what: string, text: string): number {
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text)) || Number(text) < 1) throw new RefusedError(`${what} must be a positive whole number, not ${JSON.stringify(text)}`)
  return Number(text)
}
