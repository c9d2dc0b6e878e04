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
import type { GateStore } from 'open-data-gate'
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
  try {
    const { values } = parseArgs({ args: argv, options: { store: { type: 'string' }, 'rate-store': { type: 'string' }, config: { type: 'string' } }, strict: true })
    const storeUrl = values.store ?? (env.OPEN_DATA_GATE_STORE || undefined)
    const rateUrl = values['rate-store'] ?? (env.OPEN_DATA_GATE_RATE_STORE || undefined)
    const config = values.config === undefined ? undefined : await loadConfig(values.config)
    const store = storeUrl === undefined || storeUrl === 'memory:' ? undefined : await openStore(storeUrl)
    const rateStore = rateUrl === undefined ? undefined : await openStore(rateUrl)
    const describe = [storeUrl === undefined ? 'the in-memory store' : hidePassword(storeUrl), rateUrl === undefined ? '' : `rates in ${hidePassword(rateUrl)}`].filter(Boolean).join(', ')
    return { store, rateStore, config, describe }
  } catch (error) {
    const usage = (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true
    console.error(`demo: ${(error as Error).message}${usage ? '\nusage: npm run demo -- [--store URL] [--rate-store URL] [--config file.json]' : ''}`)
    process.exit(error instanceof ConfigError || !usage ? 1 : 2)
  }
}

const hidePassword = (url: string) => url.replace(/^([a-z]+:\/\/[^:/@]*:)[^@/]*@/i, '$1***@')

async function openStore(url: string): Promise<GateStore> {
  if (/^rediss?:\/\//.test(url)) {
    // Imported only for this scheme: ioredis stays optional.
    const { RedisStore } = await import('open-data-gate/redis')
    return new RedisStore({ url })
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    const { PostgresStore } = await import('open-data-gate/postgres')
    const store = new PostgresStore({ connectionString: url })
    await store.migrate()
    return store
  }
  throw new Error(`--store must be memory:, redis://, rediss:// or postgres://, not ${JSON.stringify(hidePassword(url))}`)
}
