/**
 * The `open-data-gate` command: manage applications, users, API keys, tokens and rate
 * counters in a shared store, without writing code. This module reads the command line,
 * opens the stores and runs one command; the commands are in src/cli/commands/, one
 * module per group.
 *
 * Every command goes through the gate's public API (`gate.applications`, `gate.users`,
 * `gate.apiKeys`, `gate.tokens`) on the store the command line names, so the rules are
 * the library's own: the same validation, the same hashing, the same revocations.
 */
import { parseArgs } from 'node:util'
import { nearestName } from '../util/did-you-mean.js'
import { createGate } from '../gate.js'
import manifest from '../../package.json' with { type: 'json' }
import { classify, EXIT, UsageError } from './cli-errors.js'
import { OPTIONS, type CliIo, type Command, type OptionName, type Values } from './command.js'
import { API_KEY_COMMANDS } from './commands/api-keys.js'
import { APPLICATION_COMMANDS } from './commands/applications.js'
import { MIGRATE_COMMANDS } from './commands/migrate.js'
import { RATE_COMMANDS } from './commands/rates.js'
import { TOKEN_COMMANDS } from './commands/tokens.js'
import { USAGE_COMMANDS, usageCommandName } from './commands/usage.js'
import { USER_COMMANDS } from './commands/users.js'
import { json } from './output.js'
import { inspectStoreUrl, type StoreUrl } from '../store/connection-url.js'
import { checkStores, COMMAND_TIMEOUT_MS, openStores, storeKind, type OpenedStores, type StoreSpec } from './store-url.js'

export type { CliIo } from './command.js'

/** Accepted on every command, anywhere on the line. */
const GLOBAL_OPTIONS: readonly OptionName[] = ['store', 'rate-store', 'prefix', 'schema', 'json', 'help', 'version']

/** The package's version, printed by `--version`. */
export const VERSION: string = manifest.version

/** Options that would carry a secret: refused with a word on how to pass it instead. */
const SECRET_OPTION = /^--?(password|pass|secret|secret[-_]token|key[-_]secret|client[-_]secret|token[-_]secret)(=|$)/i

/** Every command by its words, in the order the help lists them. */
const COMMANDS: Record<string, Command> = {
  ...MIGRATE_COMMANDS,
  ...APPLICATION_COMMANDS,
  ...USER_COMMANDS,
  ...API_KEY_COMMANDS,
  ...TOKEN_COMMANDS,
  ...RATE_COMMANDS,
  ...(USAGE_COMMANDS as Record<string, Command>),
}

const GROUPS = ['apps', 'users', 'keys', 'tokens', 'rate']

/**
 * Runs one command line and says how it ended: 0 done, 1 refused, 2 usage, 3 store
 * unreachable. Never throws; every failure is one line on standard error.
 */
export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  let stores: OpenedStores | undefined
  let storeName: string | undefined
  // Every password of the store URLs, struck from whatever the command prints.
  let urls: StoreUrl[] = []
  try {
    const { command, name, args, values } = parse(argv)
    if (values.version === true) {
      io.stdout.write(`open-data-gate ${VERSION}\n`)
      return EXIT.ok
    }
    if (values.help === true || command === undefined) {
      io.stdout.write(help(name))
      return EXIT.ok
    }
    const given = storeUrls(values, io.env)
    urls = await Promise.all(given.map(({ url }) => inspectStoreUrl(url)))
    const spec = storeSpec(values, given, urls)
    storeName = `the store at ${urls[0]?.shown ?? 'the given URL'}`
    stores = await (io.openStores ?? openStores)(spec)
    await checkStores(stores, urls.map((url) => url.shown), command === COMMANDS.migrate)
    const gate = createGate({
      store: stores.records.store,
      ...(stores.rates === undefined ? {} : { rateStore: stores.rates.store }),
      storeTimeoutMs: COMMAND_TIMEOUT_MS,
      // A command makes one or two calls: nothing to cache.
      applicationCacheMs: 0,
    })
    const output = await command.run({ gate, stores, rates: stores.rates?.store ?? gate.store, args, values, io })
    io.stdout.write(values.json === true ? json(output.json) : output.human)
    return EXIT.ok
  } catch (error) {
    const { code, message } = classify(error, storeName)
    io.stderr.write(`open-data-gate: ${urls.reduce((text, url) => url.redact(text), message)}\n`)
    return code
  } finally {
    await stores?.close()
  }
}

/** The command, its positional arguments and options. @throws {UsageError} */
function parse(argv: readonly string[]): { command: Command | undefined; name: string; args: string[]; values: Values } {
  const secret = argv.find((arg) => SECRET_OPTION.test(arg))
  if (secret !== undefined) {
    throw new UsageError(
      `${secret.split('=')[0]} is not accepted: secrets never go on the command line (shell history, ps); a password is read from a prompt or standard input, and secrets are generated and printed once`,
    )
  }
  let parsed: { values: Values; positionals: string[] }
  const line = withDashValues(argv)
  try {
    parsed = parseArgs({ args: line, options: OPTIONS, allowPositionals: true, strict: true }) as { values: Values; positionals: string[] }
  } catch (error) {
    throw new UsageError(unknownOptionHint(error as Error & { code?: unknown }))
  }
  const { values, positionals } = parsed
  const [first, second] = positionals
  if (values.version === true) return { command: undefined, name: '', args: [], values }
  if (first === undefined) {
    if (values.help === true) return { command: undefined, name: '', args: [], values }
    throw new UsageError('no command given')
  }
  const name = first === 'migrate' ? first : first === 'usage' ? usageCommandName(second) : GROUPS.includes(first) && second !== undefined ? `${first} ${second}` : first
  const command = COMMANDS[name]
  if (command === undefined) {
    if (GROUPS.includes(first)) {
      if (values.help === true) return { command: undefined, name: first, args: [], values }
      if (second === undefined) throw new UsageError(`${first} needs a subcommand: ${subcommands(first)}`)
      const nearest = nearestName(second, subcommands(first).split(', '))
      throw new UsageError(`unknown command "${first} ${second}"; ${nearest === undefined ? `${first} has ${subcommands(first)}` : `did you mean "${first} ${nearest}"?`}`)
    }
    const nearest = nearestName(first, ['migrate', ...GROUPS])
    throw new UsageError(`unknown command "${first}"${nearest === undefined ? '' : `; did you mean "${nearest}"?`}`)
  }
  if (values.help === true) return { command: undefined, name, args: [], values }
  const args = positionals.slice(name.split(' ').length)
  const allowed = new Set([...GLOBAL_OPTIONS, ...command.options])
  for (const option of Object.keys(values) as OptionName[]) {
    if (!allowed.has(option)) throw new UsageError(`${name} does not take --${option}`)
  }
  for (const option of command.required ?? []) {
    if (values[option] === undefined) throw new UsageError(`${name} needs --${option}`)
  }
  if (args.length < command.args.length) throw new UsageError(`${name} needs ${command.args.slice(args.length).join(' ')}`)
  const most = [...command.args, ...(command.optionalArgs ?? []).map((arg) => `[${arg}]`)]
  if (args.length > most.length) throw new UsageError(`${name} takes ${most.length === 0 ? 'no arguments' : most.join(' ')}; unexpected ${JSON.stringify(args[most.length])}`)
  command.checkLine?.(args, values)
  return { command, name, args, values }
}

/** What a long option looks like: `--rate-store`, `--lmit`, `--store=URL`. */
const LONG_OPTION = /^--[a-z][a-z0-9-]*(=|$)/

/** The short options, alone or together: `-h`, `-v`, `-hv`. */
const SHORT_OPTIONS = new RegExp(`^-[${Object.values(OPTIONS).flatMap((option) => ('short' in option ? [option.short] : [])).join('')}]+$`)

/**
 * A word that starts with a dash and is a credential, not an option: base64url, as long as
 * a generated app token (24 characters) or near it. A shorter word, or one with `=` or a
 * space, is an option, and parseArgs says what is wrong with it (`--Json`: did you mean --json?).
 */
const DASH_VALUE = /^-[A-Za-z0-9_-]{15,}$/

/** Whether parseArgs should read `word` as an option: a long option, `-h`/`-v`, or any other dash-word that is not a credential. */
function isOptionWord(word: string): boolean {
  return LONG_OPTION.test(word) || SHORT_OPTIONS.test(word) || (word.startsWith('-') && !DASH_VALUE.test(word))
}

/**
 * The line as parseArgs reads it, with a credential that starts with a dash kept a value.
 * App tokens and secrets are base64url, so one in 64 starts with `-` (and one in 4,096 with
 * `--`); parseArgs alone reads `apps show -kQ2…` as the options -k, -Q, … and
 * `--app -kQ2…` as an option without its value. Here such a word ({@link DASH_VALUE}) is a
 * positional argument (it goes after `--`), or the value of the string option before it;
 * every other word that starts with a dash stays an option for parseArgs to judge.
 * @throws {UsageError} for a string option followed by an option instead of its value
 */
function withDashValues(argv: readonly string[]): string[] {
  const options: string[] = []
  const positionals: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1))
      break
    }
    if (!isOptionWord(arg)) {
      positionals.push(arg)
      continue
    }
    const name = arg.slice(2)
    const takesValue = LONG_OPTION.test(arg) && !name.includes('=') && (OPTIONS as Record<string, { type: string }>)[name]?.type === 'string'
    if (!takesValue) {
      options.push(arg)
      continue
    }
    const next = argv[i + 1]
    if (next === undefined || next === '--' || isOptionWord(next)) {
      throw new UsageError(`${arg} needs a value (a value that starts with - goes as ${arg}=VALUE)`)
    }
    options.push(`${arg}=${next}`)
    i++
  }
  return [...options, '--', ...positionals]
}

/** parseArgs's complaint, without its advice on positionals, and with the nearest option for a misspelt one. */
function unknownOptionHint(error: Error & { code?: unknown }): string {
  const message = error.message.replace(/\. To specify a positional argument.*$/s, '')
  const unknown = error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /^Unknown option '--([^'=]+)'/.exec(message)?.[1] : undefined
  const nearest = unknown === undefined ? undefined : nearestName(unknown, Object.keys(OPTIONS))
  return nearest === undefined ? message : `${message}; did you mean --${nearest}?`
}

/** The store URLs of the line or the environment: the records' first, then the rates'. */
function storeUrls(values: Values, env: CliIo['env']): Array<{ url: string; option: string; onLine: boolean; variable: string }> {
  const store = values.store ?? nonEmpty(env.OPEN_DATA_GATE_STORE)
  if (store === undefined) throw new UsageError('no store: give --store URL or set OPEN_DATA_GATE_STORE (redis://, rediss:// or postgres://)')
  const rateStore = values['rate-store'] ?? nonEmpty(env.OPEN_DATA_GATE_RATE_STORE)
  return [
    { url: store, option: '--store', onLine: values.store !== undefined, variable: 'OPEN_DATA_GATE_STORE' },
    ...(rateStore === undefined ? [] : [{ url: rateStore, option: '--rate-store', onLine: values['rate-store'] !== undefined, variable: 'OPEN_DATA_GATE_RATE_STORE' }]),
  ]
}

/**
 * What the command line says about stores, refusing before anything connects: a URL the
 * command cannot use, and a password on the command line, where shell history and `ps`
 * keep it (the same rule as `--password`).
 */
function storeSpec(values: Values, given: ReturnType<typeof storeUrls>, urls: readonly StoreUrl[]): StoreSpec {
  given.forEach(({ option, onLine, variable }, i) => {
    const url = urls[i] as StoreUrl
    if (!onLine || !url.hasPassword) return
    const driver =
      url.kind === 'redis'
        ? ''
        : ', or leave it out and let the PostgreSQL driver find it in PGPASSWORD or the password file (PGPASSFILE, by default ~/.pgpass)'
    throw new UsageError(`${option} carries a password, and the command line lands in shell history and ps: set the URL in ${variable} instead${driver}`)
  })
  given.forEach(({ url, option }, i) => storeKind(url, option, urls[i]?.shown))
  return { store: (given[0] as { url: string }).url, rateStore: given[1]?.url, prefix: values.prefix, schema: values.schema }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value
}

function subcommands(group: string): string {
  return Object.keys(COMMANDS)
    .filter((name) => name.startsWith(`${group} `))
    .map((name) => name.slice(group.length + 1))
    .join(', ')
}

/** The help: of everything, of a group, or of one command. */
export function help(name = ''): string {
  const shown = Object.values(COMMANDS).filter((c) => name === '' || c.usage === name || c.usage.startsWith(`${name} `))
  const lines = shown.map((c) => `  ${c.usage}\n      ${c.summary}`)
  return `Usage: open-data-gate [--store URL] [--rate-store URL] [--json] COMMAND

Commands:
${lines.join('\n')}

Options (anywhere on the line):
  --store URL        the store: redis://, rediss:// or postgres:// (or OPEN_DATA_GATE_STORE)
  --rate-store URL   rate counters in another store (or OPEN_DATA_GATE_RATE_STORE)
  --prefix PREFIX    Redis key prefix (default odg:)
  --schema NAME      PostgreSQL schema (default open_data_gate)
  --json             print JSON with the library's field names
  -h, --help         this help
  -v, --version      the version of open-data-gate

Secrets are generated and printed once; a password is read from a prompt, or from
standard input when it is not a terminal. None is ever taken on the command line:
a store URL with a password goes in OPEN_DATA_GATE_STORE (or the PostgreSQL password
file, PGPASSFILE or ~/.pgpass), and messages show store URLs without passwords.
Exit codes: 0 done, 1 refused (bad input, not found), 2 usage, 3 store unreachable,
4 store schema missing or older than this release (run migrate).
`
}
