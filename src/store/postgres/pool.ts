/**
 * What the PostgreSQL store talks to: the part of a `pg.Pool` it uses (so any pool of that
 * shape fits), the options of the pool the store makes itself, and the cache of prepared
 * statements, each named after its text so that two stores on one pool never clash.
 */
import { createHash } from 'node:crypto'

/** A statement as `pg` takes it; `name` makes it a prepared statement. */
export interface PostgresQuery {
  readonly name?: string
  readonly text: string
  readonly values?: unknown[]
}

/** What the store reads from a result. */
export interface PostgresResult {
  readonly rows: Row[]
  readonly rowCount: number | null
}

/** A connection checked out of a pool (`pg.PoolClient`). */
export interface PostgresPoolClient {
  query(query: PostgresQuery): Promise<PostgresResult>
  release(destroy?: boolean | Error): void
  on(event: 'notification', listener: (message: { channel: string; payload?: string | undefined }) => void): unknown
  on(event: 'error', listener: (error: Error) => void): unknown
  removeAllListeners(event?: string): unknown
}

/** The part of a `pg.Pool` the store uses: a `pg.Pool` fits. */
export interface PostgresPool {
  query(query: PostgresQuery): Promise<PostgresResult>
  connect(): Promise<PostgresPoolClient>
  end(): Promise<void>
}

/** A result row, by column name. */
export type Row = Record<string, unknown>

/** Options for the store's own `pg.Pool`: any `pg.PoolConfig` field but the connection string. */
export interface PostgresPoolOptions {
  /** Connections at most. Default 10. */
  max?: number
  /** How long a new connection may take, in ms. Default 5000 (pg's own default waits forever). */
  connectionTimeoutMillis?: number
  idleTimeoutMillis?: number
  /** Server-side statement timeout, in ms. */
  statement_timeout?: number
  application_name?: string
  ssl?: boolean | object
  [option: string]: unknown
}

/**
 * Request-path statements, prepared per connection (`pg` keeps a named statement parsed
 * on each connection that ran it), named `odg_` and a hash of their text.
 */
export class PreparedStatements {
  readonly #pool: PostgresPool
  readonly #names = new Map<string, string>()

  constructor(pool: PostgresPool) {
    this.#pool = pool
  }

  /** One prepared statement on the pool. */
  run(text: string, values: unknown[]): Promise<PostgresResult> {
    return this.#pool.query({ name: this.name(text), text, values })
  }

  /** The name of the statement with this text, for a connection checked out of the pool. */
  name(text: string): string {
    let name = this.#names.get(text)
    if (name === undefined) {
      name = `odg_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`
      this.#names.set(text, name)
    }
    return name
  }
}
