/**
 * Opens the stores a command line names. Each store module is imported only when its
 * URL scheme is used, so `ioredis` and `pg` stay optional: an operator on PostgreSQL
 * never installs the Redis driver.
 */
import type { GateStore } from '../store/store.js'
import { RefusedError, UsageError } from './cli-errors.js'

/** What the command line says about stores. */
export interface StoreSpec {
  /** `--store` or `OPEN_DATA_GATE_STORE`. */
  readonly store: string
  /** `--rate-store` or `OPEN_DATA_GATE_RATE_STORE`: rate counters elsewhere. */
  readonly rateStore?: string | undefined
  /** `--prefix`: the Redis key prefix (RedisStore's `prefix`). */
  readonly prefix?: string | undefined
  /** `--schema`: the PostgreSQL schema (PostgresStore's `schema`). */
  readonly schema?: string | undefined
}

/** A store the command opened, with what `migrate` does to it. */
export interface OpenedStore {
  readonly kind: 'redis' | 'postgres'
  readonly store: GateStore
  /** Brings the store's schema up to date; `null` for a store that has none (Redis). */
  migrate(): Promise<MigrateResult | null>
}

/** What a schema migration did, as PostgresStore reports it. */
export interface MigrateResult {
  readonly from: number
  readonly to: number
  readonly applied: readonly number[]
}

/** The stores of a command: records, and rates if they live elsewhere. */
export interface OpenedStores {
  readonly records: OpenedStore
  readonly rates: OpenedStore | undefined
  /** Releases both (connections, timers). */
  close(): Promise<void>
}

/** How long one store call may take in the command: long enough for a slow link, short enough to fail fast. */
export const COMMAND_TIMEOUT_MS = 2000

/** How long the command waits for the stores to close before it exits anyway. */
const CLOSE_WAIT_MS = 500

type Kind = OpenedStore['kind']

/**
 * The kind of store a URL names. `shown` is the URL as it may be printed (see
 * `inspectStoreUrl`); without it a refused value is not repeated.
 * @throws {UsageError} for `memory:` and anything unknown
 */
export function storeKind(url: string, option: string, shown?: string): Kind {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase()
  if (scheme === 'redis' || scheme === 'rediss') return 'redis'
  if (scheme === 'postgres' || scheme === 'postgresql') return 'postgres'
  if (scheme === 'memory') {
    throw new UsageError(`${option} memory: keeps records inside one process, and this command exits when it is done, so nothing it did would remain; use redis://, rediss:// or postgres://`)
  }
  if (shown === undefined && /^\s*[a-z_]+\s*=/i.test(url)) {
    throw new UsageError(`${option} must be a URL, not a libpq keyword string (host=... dbname=...): write it as postgres://USER@HOST:PORT/DBNAME`)
  }
  throw new UsageError(`${option} must be a redis://, rediss:// or postgres:// URL, not ${shown === undefined ? 'this value (not repeated here: it may hold a password)' : JSON.stringify(shown)}`)
}

/** What the command needs of the store modules. */
interface StoreModules {
  redis(options: { url: string; prefix?: string; commandTimeoutMs: number }): GateStore
  postgres(options: { connectionString: string; schema?: string }): GateStore & { migrate(): Promise<MigrateResult> }
}

/** Opens the stores named on the command line (nothing connects until the first call). */
export async function openStores(spec: StoreSpec, modules: Partial<StoreModules> = {}): Promise<OpenedStores> {
  const recordsKind = storeKind(spec.store, '--store')
  const ratesKind = spec.rateStore === undefined ? undefined : storeKind(spec.rateStore, '--rate-store')
  const records = await open(recordsKind, spec.store, spec, modules)
  let rates: OpenedStore | undefined
  try {
    rates = ratesKind === undefined || spec.rateStore === undefined ? undefined : await open(ratesKind, spec.rateStore, spec, modules)
  } catch (error) {
    await records.store.close?.()
    throw error
  }
  return {
    records,
    rates,
    async close() {
      // A driver that never connected may take its time to give up; the command is done.
      await Promise.race([Promise.allSettled([records.store.close?.(), rates?.store.close?.()]), new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref())])
    },
  }
}

async function open(kind: Kind, url: string, spec: StoreSpec, modules: Partial<StoreModules>): Promise<OpenedStore> {
  if (kind === 'redis') {
    const make = modules.redis ?? (await loadRedis())
    const store = make({ url, commandTimeoutMs: COMMAND_TIMEOUT_MS / 2, ...(spec.prefix === undefined ? {} : { prefix: spec.prefix }) })
    return { kind, store, migrate: async () => null }
  }
  const make = modules.postgres ?? (await loadPostgres())
  const store = make({ connectionString: url, ...(spec.schema === undefined ? {} : { schema: spec.schema }) })
  return { kind, store, migrate: () => store.migrate() }
}

// Each store module is imported on first use of its scheme; its driver (ioredis, pg) is
// an optional peer dependency that only then has to be installed.
async function loadRedis(): Promise<StoreModules['redis']> {
  const { RedisStore } = await importDriver(() => import('../store/redis/store.js'), 'ioredis')
  return (options) => new RedisStore(options)
}

async function loadPostgres(): Promise<StoreModules['postgres']> {
  const { PostgresStore } = await importDriver(() => import('../store/postgres/store.js'), 'pg')
  return (options) => new PostgresStore({ sweepIntervalMs: 0, poolOptions: { max: 2, connectionTimeoutMillis: COMMAND_TIMEOUT_MS }, ...options })
}

async function importDriver<T>(load: () => Promise<T>, driver: string): Promise<T> {
  try {
    return await load()
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String((error as Error).message).includes(`'${driver}'`)) {
      throw new RefusedError(`this store needs the ${driver} package: npm install ${driver}`)
    }
    throw error
  }
}
