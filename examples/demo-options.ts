/**
 * The example portal's command line: `--store URL` (or `OPEN_DATA_GATE_STORE`) runs it on
 * Redis or PostgreSQL instead of the in-memory store, `--rate-store URL` keeps rate
 * counters elsewhere, `--config file.json` provisions applications, users and keys.
 *
 *   npm run demo -- --store redis://127.0.0.1:6379 --config examples/portal.config.json
 *
 * A store module is imported only when its scheme is used: ioredis and pg stay optional.
 */
import { parseArgs } from 'node:util'
import { inspectStoreUrl, type GateStore, type StoreUrl } from 'open-data-gate'
import { ConfigError, loadConfig, type PortalConfig } from './provision.js'

export interface DemoOptions {
  store: GateStore | undefined
  rateStore: GateStore | undefined
  config: PortalConfig | undefined
  /** What the store URLs were, for the banner (passwords hidden). */
  describe: string
}

/** Parses the demo's arguments and opens its stores; prints one line and exits 1 (or 2 for usage) on a problem. */
export async function demoOptions(argv: string[], env: NodeJS.ProcessEnv): Promise<DemoOptions> {
  // Every password of the store URLs, struck from whatever the demo prints.
  const urls: StoreUrl[] = []
  try {
    const { values } = parseArgs({ args: argv, options: { store: { type: 'string' }, 'rate-store': { type: 'string' }, config: { type: 'string' } }, strict: true })
    const storeUrl = values.store ?? (env.OPEN_DATA_GATE_STORE || undefined)
    const rateUrl = values['rate-store'] ?? (env.OPEN_DATA_GATE_RATE_STORE || undefined)
    const store = storeUrl === undefined ? undefined : await inspect(storeUrl, values.store !== undefined, '--store', 'OPEN_DATA_GATE_STORE', urls)
    const rates = rateUrl === undefined ? undefined : await inspect(rateUrl, values['rate-store'] !== undefined, '--rate-store', 'OPEN_DATA_GATE_RATE_STORE', urls)
    const config = values.config === undefined ? undefined : await loadConfig(values.config)
    const opened = storeUrl === undefined || store?.kind === 'memory' ? undefined : await openStore(storeUrl, store)
    const rateStore = rateUrl === undefined ? undefined : await openStore(rateUrl, rates)
    const describe = [store === undefined || store.kind === 'memory' ? 'the in-memory store' : store.shown, rates === undefined ? '' : `rates in ${rates.shown}`].filter(Boolean).join(', ')
    return { store: opened, rateStore, config, describe }
  } catch (error) {
    const usage = error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true
    const message = urls.reduce((text, url) => url.redact(text), (error as Error).message)
    console.error(`demo: ${message}${usage ? '\nusage: npm run demo -- [--store URL] [--rate-store URL] [--config file.json]' : ''}`)
    process.exit(error instanceof ConfigError || !usage ? 1 : 2)
  }
}

class UsageError extends Error {}

/**
 * Reads a store URL with its driver's parser (the library's `inspectStoreUrl`): how to show
 * it without its passwords, and a password given on the command line is refused (shell
 * history and `ps` keep it), as the `open-data-gate` command does.
 */
async function inspect(url: string, onLine: boolean, option: string, variable: string, urls: StoreUrl[]): Promise<StoreUrl> {
  const read = await inspectStoreUrl(url)
  urls.push(read)
  if (onLine && read.hasPassword) {
    const driver = read.kind === 'redis' ? '' : ', or leave it out and let the PostgreSQL driver find it in PGPASSWORD or the password file (PGPASSFILE, by default ~/.pgpass)'
    throw new UsageError(`${option} carries a password, and the command line lands in shell history and ps: set the URL in ${variable} instead${driver}`)
  }
  return read
}

async function openStore(url: string, read: StoreUrl | undefined): Promise<GateStore> {
  if (read?.kind === 'redis') {
    // Imported only for this scheme: ioredis stays optional.
    const { RedisStore } = await import('open-data-gate/redis')
    return new RedisStore({ url })
  }
  if (read?.kind === 'postgres') {
    const { PostgresStore } = await import('open-data-gate/postgres')
    const store = new PostgresStore({ connectionString: url })
    await store.migrate()
    return store
  }
  throw new UsageError(`--store must be memory:, redis://, rediss:// or postgres://, not ${read?.shown === undefined ? 'this value (not repeated here: it may hold a password)' : JSON.stringify(read.shown)}`)
}
