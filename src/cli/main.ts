/**
 * The `open-data-gate` command: manage applications, users, API keys, tokens and rate
 * counters in a shared store, without writing code.
 *
 * Every command goes through the gate's public API (`gate.applications`, `gate.users`,
 * `gate.apiKeys`, `gate.tokens`) on the store the command line names, so the rules are
 * the library's own: the same validation, the same hashing, the same revocations.
 */
import { parseArgs } from 'node:util'
import { createGate, type Gate } from '../gate.js'
import type { RateStore } from '../store/store.js'
import type { Application } from '../management/applications.js'
import type { ApiKey } from '../management/api-keys.js'
import type { User } from '../management/users.js'
import { classify, EXIT, RefusedError, UnreachableError, UsageError } from './cli-errors.js'
import { fields, json, orDash, table, time } from './output.js'
import { readNewPassword, type SecretSource } from './secret-input.js'
import { inspectStoreUrl, type StoreUrl } from '../store/connection-url.js'
import { COMMAND_TIMEOUT_MS, openStores, storeKind, type OpenedStores, type StoreSpec } from './store-url.js'
import { USAGE_COMMANDS, usageCommandName } from './usage-commands.js'

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

const OPTIONS = {
  store: { type: 'string' },
  'rate-store': { type: 'string' },
  prefix: { type: 'string' },
  schema: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  name: { type: 'string' },
  'callback-prefix': { type: 'string' },
  limit: { type: 'string' },
  'window-ms': { type: 'string' },
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

type OptionName = keyof typeof OPTIONS
type Values = { [K in OptionName]?: (typeof OPTIONS)[K] extends { type: 'boolean' } ? boolean : (typeof OPTIONS)[K] extends { multiple: true } ? string[] : string }

/** Accepted on every command, anywhere on the line. */
const GLOBAL_OPTIONS: readonly OptionName[] = ['store', 'rate-store', 'prefix', 'schema', 'json', 'help']

/** Options that would carry a secret: refused with a word on how to pass it instead. */
const SECRET_OPTION = /^--(password|pass|secret|secret-token|key-secret|client-secret|token-secret)(=|$)/

/** What a command prints: the JSON document for `--json`, the text for people. */
interface Output {
  readonly json: unknown
  readonly human: string
}

interface Context {
  readonly gate: Gate
  readonly stores: OpenedStores
  readonly rates: RateStore
  readonly args: readonly string[]
  readonly values: Values
  readonly io: CliIo
}

interface Command {
  /** The words after `open-data-gate`, then positional arguments and options, for the help. */
  readonly usage: string
  readonly summary: string
  /** Names of the positional arguments, all required. */
  readonly args: readonly string[]
  readonly options: readonly OptionName[]
  readonly required?: readonly OptionName[]
  run(context: Context): Promise<Output>
}

const SHOWN_ONCE = 'Shown once: store it now. Only its hash is kept.'

const COMMANDS: Record<string, Command> = {
  migrate: {
    usage: 'migrate',
    summary: 'create or update the PostgreSQL schema (Redis needs none)',
    args: [],
    options: [],
    async run({ stores }) {
      const results = []
      for (const opened of [stores.records, stores.rates]) {
        if (opened === undefined) continue
        const result = await opened.migrate()
        results.push({ store: opened.kind, ...(result ?? { from: null, to: null, applied: [] }) })
      }
      const human = results
        .map((r) =>
          r.from === null
            ? `${r.store}: nothing to migrate\n`
            : r.applied.length === 0
              ? `${r.store}: schema is up to date (version ${r.to})\n`
              : `${r.store}: schema migrated from version ${r.from} to ${r.to}\n`,
        )
        .join('')
      return { json: results.length === 1 ? results[0] : results, human }
    },
  },

  'apps register': {
    usage: 'apps register --name NAME [--callback-prefix URL] [--limit N]',
    summary: 'register an application; prints its app token and secret token once',
    args: [],
    options: ['name', 'callback-prefix', 'limit'],
    required: ['name'],
    async run({ gate, values }) {
      const registered = await gate.applications.register({
        name: values.name as string,
        callbackPrefix: values['callback-prefix'] ?? null,
        limit: values.limit === undefined ? null : integer('--limit', values.limit),
      })
      return {
        json: registered,
        human: fields([...applicationFields(registered.application), ['secret token', registered.secretToken]]) + SHOWN_ONCE + '\n',
      }
    },
  },
  'apps list': {
    usage: 'apps list',
    summary: 'list every application',
    args: [],
    options: [],
    async run({ gate }) {
      const apps = await gate.applications.list()
      return {
        json: apps,
        human: table(apps, [
          { heading: 'APP TOKEN', value: (a) => a.appToken },
          { heading: 'NAME', value: (a) => a.name },
          { heading: 'LIMIT', value: (a) => (a.limit === null ? 'default' : String(a.limit)) },
          { heading: 'CALLBACK PREFIX', value: (a) => orDash(a.callbackPrefix) },
          { heading: 'CREATED', value: (a) => time(a.createdAt) },
        ]),
      }
    },
  },
  'apps show': {
    usage: 'apps show APP_TOKEN',
    summary: 'show one application',
    args: ['APP_TOKEN'],
    options: [],
    async run({ gate, args }) {
      const app = await findApplication(gate, args[0] as string)
      return { json: app, human: fields(applicationFields(app)) }
    },
  },
  'apps set-limit': {
    usage: 'apps set-limit APP_TOKEN N|default',
    summary: "raise or lower one application's throttle limit; `default` goes back to the configured one",
    args: ['APP_TOKEN', 'LIMIT'],
    options: [],
    async run({ gate, args }) {
      const [appToken, limit] = args as [string, string]
      const value = limit === 'default' ? null : integer('LIMIT', limit)
      const app = await gate.applications.update(appToken, { limit: value })
      return { json: app, human: fields(applicationFields(app)) }
    },
  },
  'apps rotate-secret': {
    usage: 'apps rotate-secret APP_TOKEN',
    summary: 'issue a new secret token; the old one stops working at once',
    args: ['APP_TOKEN'],
    options: [],
    async run({ gate, args }) {
      const appToken = args[0] as string
      const secretToken = await gate.applications.rotateSecret(appToken)
      return { json: { appToken, secretToken }, human: fields([['app token', appToken], ['secret token', secretToken]]) + SHOWN_ONCE + '\n' }
    },
  },
  'apps delete': {
    usage: 'apps delete APP_TOKEN',
    summary: 'delete an application; its token is refused and its access tokens stop working',
    args: ['APP_TOKEN'],
    options: [],
    async run({ gate, args }) {
      const appToken = args[0] as string
      if (!(await gate.applications.delete(appToken))) throw noApplication(appToken)
      return { json: { appToken, deleted: true }, human: `deleted application ${appToken}\n` }
    },
  },

  'users create': {
    usage: 'users create --username NAME --display-name NAME --email ADDRESS [--screen-name NAME] [--right RIGHT]... [--no-password]',
    summary: 'create an account; the password is read from a prompt, or standard input',
    args: [],
    options: ['username', 'display-name', 'email', 'screen-name', 'right', 'no-password'],
    required: ['username', 'display-name', 'email'],
    async run({ gate, values, io }) {
      // Check everything but the password before asking for it.
      if (values['no-password'] !== true && (await gate.users.findByUsername(values.username as string)) !== undefined) {
        throw new RefusedError(`the username ${JSON.stringify(values.username)} is taken`)
      }
      const password = values['no-password'] === true ? null : await readNewPassword(io.stdin, io.stderr)
      const user = await gate.users.create({
        username: values.username as string,
        password,
        displayName: values['display-name'] as string,
        email: values.email as string,
        ...(values['screen-name'] === undefined ? {} : { screenName: values['screen-name'] }),
        rights: values.right ?? [],
      })
      return { json: user, human: fields(userFields(user)) }
    },
  },
  'users list': {
    usage: 'users list',
    summary: 'list every account',
    args: [],
    options: [],
    async run({ gate }) {
      const users = await gate.users.list()
      return {
        json: users,
        human: table(users, [
          { heading: 'ID', value: (u) => u.id },
          { heading: 'USERNAME', value: (u) => u.username },
          { heading: 'DISPLAY NAME', value: (u) => u.displayName },
          { heading: 'EMAIL', value: (u) => u.email },
          { heading: 'PASSWORD', value: (u) => (u.hasPassword ? 'yes' : 'no') },
          { heading: 'RIGHTS', value: (u) => u.rights.join(',') || '-' },
        ]),
      }
    },
  },
  'users show': {
    usage: 'users show ID|USERNAME',
    summary: 'show one account',
    args: ['USER'],
    options: [],
    async run({ gate, args }) {
      const user = await findUser(gate, args[0] as string)
      return { json: user, human: fields(userFields(user)) }
    },
  },
  'users set-password': {
    usage: 'users set-password ID|USERNAME [--no-password]',
    summary: 'set (from a prompt or standard input) or remove a password; sessions signed in with the old one end',
    args: ['USER'],
    options: ['no-password'],
    async run({ gate, args, values, io }) {
      const user = await findUser(gate, args[0] as string)
      const password = values['no-password'] === true ? null : await readNewPassword(io.stdin, io.stderr, `New password for ${user.username}`)
      await gate.users.setPassword(user.id, password)
      return {
        json: { id: user.id, hasPassword: password !== null },
        human: password === null ? `removed the password of ${user.username}\n` : `set the password of ${user.username}\n`,
      }
    },
  },
  'users delete': {
    usage: 'users delete ID|USERNAME',
    summary: 'delete an account; its password, API keys and tokens stop working',
    args: ['USER'],
    options: [],
    async run({ gate, args }) {
      const user = await findUser(gate, args[0] as string)
      if (!(await gate.users.delete(user.id))) throw noUser(user.id)
      return { json: { id: user.id, deleted: true }, human: `deleted user ${user.username} (${user.id})\n` }
    },
  },

  'keys create': {
    usage: 'keys create --user ID|USERNAME --name NAME',
    summary: 'create an API key for a user; prints its secret once',
    args: [],
    options: ['user', 'name'],
    required: ['user', 'name'],
    async run({ gate, values }) {
      const user = await findUser(gate, values.user as string)
      const issued = await gate.apiKeys.create(user.id, { name: values.name as string })
      return { json: issued, human: fields([...keyFields(issued.apiKey), ['key secret', issued.keySecret]]) + SHOWN_ONCE + '\n' }
    },
  },
  'keys list': {
    usage: 'keys list --user ID|USERNAME',
    summary: "list a user's API keys, revoked ones included",
    args: [],
    options: ['user'],
    required: ['user'],
    async run({ gate, values }) {
      const user = await findUser(gate, values.user as string)
      const keys = await gate.apiKeys.list(user.id)
      return {
        json: keys,
        human: table(keys, [
          { heading: 'KEY ID', value: (k) => k.keyId },
          { heading: 'NAME', value: (k) => k.name },
          { heading: 'CREATED', value: (k) => time(k.createdAt) },
          { heading: 'LAST USED', value: (k) => time(k.lastUsedAt) },
          { heading: 'REVOKED', value: (k) => time(k.revokedAt) },
        ]),
      }
    },
  },
  'keys revoke': {
    usage: 'keys revoke KEY_ID',
    summary: 'revoke an API key; it stops working at once and stays listed',
    args: ['KEY_ID'],
    options: [],
    async run({ gate, args }) {
      const keyId = args[0] as string
      if (!(await gate.apiKeys.revoke(keyId))) throw new RefusedError(`no active API key ${keyId}`)
      return { json: { keyId, revoked: true }, human: `revoked API key ${keyId}\n` }
    },
  },
  'keys rotate': {
    usage: 'keys rotate KEY_ID',
    summary: 'give an API key a new secret; the old one stops working at once',
    args: ['KEY_ID'],
    options: [],
    async run({ gate, args }) {
      const keyId = args[0] as string
      const issued = await gate.apiKeys.rotate(keyId)
      return { json: issued, human: fields([...keyFields(issued.apiKey), ['key secret', issued.keySecret]]) + SHOWN_ONCE + '\n' }
    },
  },

  'tokens revoke': {
    usage: 'tokens revoke --user ID|USERNAME | --app APP_TOKEN',
    summary: 'revoke every OAuth access token of a user, or of an application',
    args: [],
    options: ['user', 'app'],
    async run({ gate, values }) {
      if ((values.user === undefined) === (values.app === undefined)) throw new UsageError('tokens revoke takes --user or --app (one of them)')
      if (values.app !== undefined) {
        await findApplication(gate, values.app)
        const revoked = await gate.tokens.revokeAllForApplication(values.app)
        return { json: { appToken: values.app, revoked }, human: `revoked ${revoked} access token${revoked === 1 ? '' : 's'} of application ${values.app}\n` }
      }
      const user = await findUser(gate, values.user as string)
      const revoked = await gate.tokens.revokeAllForUser(user.id)
      return { json: { userId: user.id, revoked }, human: `revoked ${revoked} access token${revoked === 1 ? '' : 's'} of user ${user.username}\n` }
    },
  },

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
    if (values.help === true || command === undefined) {
      io.stdout.write(help(name))
      return EXIT.ok
    }
    const given = storeUrls(values, io.env)
    urls = await Promise.all(given.map(({ url }) => inspectStoreUrl(url)))
    const spec = storeSpec(values, given, urls)
    storeName = `the store at ${urls[0]?.shown ?? 'the given URL'}`
    stores = await (io.openStores ?? openStores)(spec)
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
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true }) as { values: Values; positionals: string[] }
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/\. To specify a positional argument.*$/s, ''))
  }
  const { values, positionals } = parsed
  const [first, second] = positionals
  if (first === undefined) {
    if (values.help === true) return { command: undefined, name: '', args: [], values }
    throw new UsageError('no command given')
  }
  const name = first === 'migrate' ? first : first === 'usage' ? usageCommandName(second) : GROUPS.includes(first) && second !== undefined ? `${first} ${second}` : first
  const command = COMMANDS[name]
  if (command === undefined) {
    if (GROUPS.includes(first)) {
      if (values.help === true) return { command: undefined, name: first, args: [], values }
      throw new UsageError(second === undefined ? `${first} needs a subcommand: ${subcommands(first)}` : `unknown command "${first} ${second}"; ${first} has ${subcommands(first)}`)
    }
    throw new UsageError(`unknown command "${first}"`)
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
  if (args.length > command.args.length) throw new UsageError(`${name} takes ${command.args.length === 0 ? 'no arguments' : command.args.join(' ')}; unexpected ${JSON.stringify(args[command.args.length])}`)
  return { command, name, args, values }
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

Secrets are generated and printed once; a password is read from a prompt, or from
standard input when it is not a terminal. None is ever taken on the command line:
a store URL with a password goes in OPEN_DATA_GATE_STORE (or the PostgreSQL password
file, PGPASSFILE or ~/.pgpass), and messages show store URLs without passwords.
Exit codes: 0 done, 1 refused (bad input, not found), 2 usage, 3 store unreachable.
`
}

function integer(what: string, text: string): number {
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text)) || Number(text) < 1) throw new RefusedError(`${what} must be a positive whole number, not ${JSON.stringify(text)}`)
  return Number(text)
}

async function findApplication(gate: Gate, appToken: string): Promise<Application> {
  const app = await gate.applications.find(appToken)
  if (app === undefined) throw noApplication(appToken)
  return app
}

/** A user by id, or else by username. */
async function findUser(gate: Gate, idOrUsername: string): Promise<User> {
  const user = (await gate.users.find(idOrUsername)) ?? (await gate.users.findByUsername(idOrUsername))
  if (user === undefined) throw noUser(idOrUsername)
  return user
}

const noApplication = (appToken: string) => new RefusedError(`no application with app token ${appToken}`)
const noUser = (user: string) => new RefusedError(`no user ${user}`)

function applicationFields(app: Application): Array<[string, string]> {
  return [
    ['app token', app.appToken],
    ['name', app.name],
    ['callback prefix', orDash(app.callbackPrefix)],
    ['limit', app.limit === null ? 'default' : String(app.limit)],
    ['created', time(app.createdAt)],
    ['updated', time(app.updatedAt)],
  ]
}

function userFields(user: User): Array<[string, string]> {
  return [
    ['id', user.id],
    ['username', user.username],
    ['display name', user.displayName],
    ['screen name', user.screenName],
    ['email', user.email],
    ['rights', user.rights.join(', ') || '-'],
    ['password', user.hasPassword ? 'set' : 'none'],
    ['created', time(user.createdAt)],
  ]
}

function keyFields(key: ApiKey): Array<[string, string]> {
  return [
    ['key id', key.keyId],
    ['user', key.userId],
    ['name', key.name],
    ['created', time(key.createdAt)],
    ['last used', time(key.lastUsedAt)],
    ['revoked', time(key.revokedAt)],
  ]
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
  if (key.startsWith('app:')) {
    const app = await findApplication(gate, key.slice(4))
    return { limit: limit ?? app.limit ?? 1000, windowMs: windowMs ?? 3_600_000, assumed: limit === undefined && app.limit === null }
  }
  if (key === 'anon' || key.startsWith('anon:')) return { limit: limit ?? 60, windowMs: windowMs ?? 3_600_000, assumed: true }
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
