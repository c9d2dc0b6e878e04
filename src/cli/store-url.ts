/**
 * Opens the stores a command line names. Each store module is imported only when its
 * URL scheme is used, so `ioredis` and `pg` stay optional: an operator on PostgreSQL
 * never installs the Redis driver.
 */
import type { Cluster, Redis } from 'ioredis'
import type { GateStore } from '../store/store.js'
import { causeOf, isConnectionError, NotMigratedError, RefusedError, UnreachableError, UsageError } from './cli-errors.js'

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
  /** Resolves once the store is connected; rejects with what failed. Absent: the first call connects. */
  connect?(withinMs: number): Promise<void>
  /** The schema in the database and the version this release reads; absent for a store that has none. */
  schema?(): Promise<{ readonly name: string; readonly version: number; readonly needed: number }>
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
  redis(options: { url: string; prefix?: string; commandTimeoutMs: number }): GateStore & { readonly client: Redis | Cluster }
  postgres: {
    (options: { connectionString: string; schema?: string }): GateStore & { readonly schema: string; migrate(): Promise<MigrateResult>; version(): Promise<number> }
    /** The schema version this release reads (`PostgresStore.schemaVersion`). */
    readonly schemaVersion: number
  }
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
    return { kind, store, migrate: async () => null, connect: (withinMs) => connected(store.client, withinMs) }
  }
  const make = modules.postgres ?? (await loadPostgres())
  const store = make({ connectionString: url, ...(spec.schema === undefined ? {} : { schema: spec.schema }) })
  return { kind, store, migrate: () => store.migrate(), schema: async () => ({ name: store.schema, version: await store.version(), needed: make.schemaVersion }) }
}

/**
 * Before a command runs: each store is reachable, and its schema is the one this release
 * reads (but for `migrate`, which makes it so). What failed is said in the command's terms
 * (`could not connect to redis://127.0.0.1:6390 within 2 s: connect ECONNREFUSED ...`,
 * `run open-data-gate migrate`), not in the driver's.
 * @param shown each store's URL as it may be printed, records first
 * @throws {UnreachableError} exit 3
 * @throws {NotMigratedError} exit 4
 */
export async function checkStores(stores: OpenedStores, shown: ReadonlyArray<string | undefined>, migrating: boolean): Promise<void> {
  const opened = [stores.records, stores.rates]
  for (const [i, store] of opened.entries()) {
    if (store === undefined) continue
    const url = shown[i] ?? 'the given URL'
    const unreachable = (error: unknown) => new UnreachableError(`could not connect to ${url} within ${COMMAND_TIMEOUT_MS / 1000} s: ${causeOf(error)}`)
    if (store.connect !== undefined) await store.connect(COMMAND_TIMEOUT_MS).catch((error: unknown) => Promise.reject(unreachable(error)))
    if (migrating || store.schema === undefined) continue
    const schema = await store.schema().catch((error: unknown) => Promise.reject(isConnectionError(error) ? unreachable(error) : error))
    const option = i === 0 ? '--store' : '--rate-store'
    if (schema.version === 0) {
      throw new NotMigratedError(`the store at ${url} has no open-data-gate schema "${schema.name}" (never migrated): run open-data-gate migrate with the same ${option} and --schema first`)
    }
    if (schema.version < schema.needed) {
      throw new NotMigratedError(
        `the store at ${url} has schema "${schema.name}" at version ${schema.version}, and this release reads version ${schema.needed}: run open-data-gate migrate with the same ${option} and --schema first (see CHANGELOG.md)`,
      )
    }
  }
}

/**
 * Resolves once the client is ready, or rejects after `withinMs` with the last connection
 * error it saw (an ioredis client without an offline queue would otherwise fail each call
 * with "Stream isn't writeable", which says nothing of why).
 */
function connected(client: Redis | Cluster, withinMs: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve()
  return new Promise((resolve, reject) => {
    let last: unknown
    const onError = (error: unknown) => (last = error)
    const onReady = () => settle()
    const timer = setTimeout(() => settle(last ?? new Error('no answer')), withinMs)
    function settle(error?: unknown): void {
      clearTimeout(timer)
      client.off('error', onError)
      client.off('ready', onReady)
      if (error === undefined) resolve()
      else reject(error)
    }
    client.on('error', onError)
    client.once('ready', onReady)
  })
}

// Each store module is imported on first use of its scheme; its driver (ioredis, pg) is
// an optional peer dependency that only then has to be installed.
async function loadRedis(): Promise<StoreModules['redis']> {
  const { RedisStore } = await importDriver(() => import('../store/redis/store.js'), 'ioredis')
  return (options) => new RedisStore(options)
}

async function loadPostgres(): Promise<StoreModules['postgres']> {
  const { PostgresStore } = await importDriver(() => import('../store/postgres/store.js'), 'pg')
  const make = (options: Parameters<StoreModules['postgres']>[0]) =>
    new PostgresStore({ sweepIntervalMs: 0, poolOptions: { max: 2, connectionTimeoutMillis: COMMAND_TIMEOUT_MS }, ...options })
  return Object.assign(make, { schemaVersion: PostgresStore.schemaVersion })
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
