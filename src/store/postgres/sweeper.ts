/**
 * The PostgreSQL store's sweeper: deletes what expired (revoked API keys past their purge
 * time, access tokens, sessions, drained rate rows and quota counters, authorization codes an hour after
 * they expired, and usage buckets past their retention) in bounded batches, so that no sweep holds many locks or a long
 * transaction; on an unref'd timer, and on demand.
 */
import type { PreparedStatements } from './pool.js'
import type { PostgresUsage } from './usage.js'

/** What {@link PostgresStore.sweep} deleted. */
export interface SweepResult {
  /** Revoked API keys past their purge time. */
  readonly apiKeys: number
  readonly accessTokens: number
  readonly authorizationCodes: number
  readonly sessions: number
  /** Drained rate rows and quota counters past their keeping time. */
  readonly rates: number
  /** Usage buckets past their retention, and forgotten usage writers. */
  readonly usage: number
}

/** A used or expired code is kept this long after it expires, so a late replay still revokes the tokens issued from it. */
const CODE_RETENTION_MS = 3_600_000
/** The database's clock in integer microseconds, fixed for the statement (a stable expression, so a range over it can use an index). */
const STATEMENT_US = `(extract(epoch FROM statement_timestamp()) * 1000000)::bigint`

/** What the sweeper is made of, and how often it runs. */
export interface SweeperParts {
  readonly statements: PreparedStatements
  /** The quoted schema name. */
  readonly q: string
  readonly usage: PostgresUsage
  /** How often to sweep; 0 sweeps only when asked. */
  readonly intervalMs: number
  /** How many rows one statement deletes at most. */
  readonly batchSize: number
  /** Where a timed sweep's failure goes. */
  readonly onError: (error: unknown) => void
}

export class Sweeper {
  readonly #statements: PreparedStatements
  readonly #q: string
  readonly #usage: PostgresUsage
  readonly #batchSize: number
  #timer: NodeJS.Timeout | undefined
  #sweeping: Promise<SweepResult> | undefined
  #closed = false

  constructor(parts: SweeperParts) {
    this.#statements = parts.statements
    this.#q = parts.q
    this.#usage = parts.usage
    this.#batchSize = parts.batchSize
    const onError = parts.onError
    if (parts.intervalMs > 0) {
      this.#timer = setInterval(() => {
        this.sweep().catch((error: unknown) => onError(error))
      }, parts.intervalMs)
      this.#timer.unref()
    }
  }

  /** One sweep of every table; concurrent calls share one run. */
  sweep(): Promise<SweepResult> {
    this.#sweeping ??= this.#sweep().finally(() => {
      this.#sweeping = undefined
    })
    return this.#sweeping
  }

  async #sweep(): Promise<SweepResult> {
    const now = Date.now()
    const q = this.#q
    const batch = (table: string, key: string, condition: string, value: number | null) =>
      this.#drain(`DELETE FROM ${q}.${table} WHERE ${key} IN (SELECT ${key} FROM ${q}.${table} WHERE ${condition} LIMIT $1 FOR UPDATE SKIP LOCKED)`, value)
    return {
      apiKeys: await batch('api_keys', 'key_id', 'purge_at <= $2', now),
      accessTokens: await batch('access_tokens', 'token_hash', 'expires_at < $2', now),
      authorizationCodes: await batch('authorization_codes', 'code_hash', 'expires_at < $2', now - CODE_RETENTION_MS),
      sessions: await batch('sessions', 'session_hash', 'expires_at < $2', now),
      rates: (await batch('rates', 'key', `tat_us < ${STATEMENT_US}`, null)) + (await batch('quotas', 'key', `expires_us < ${STATEMENT_US}`, null)),
      usage: await this.#usage.sweep((text, value) => this.#drain(text, value), now),
    }
  }

  /** Runs a bounded DELETE until it deletes less than a batch. */
  async #drain(text: string, value: number | null): Promise<number> {
    let total = 0
    for (;;) {
      if (this.#closed) return total
      const values: unknown[] = value === null ? [this.#batchSize] : [this.#batchSize, value]
      const { rowCount } = await this.#statements.run(text, values)
      total += rowCount ?? 0
      if ((rowCount ?? 0) < this.#batchSize) return total
    }
  }

  /** Stops the timer, and waits for a sweep under way (which stops after its current batch). */
  async close(): Promise<void> {
    this.#closed = true
    clearInterval(this.#timer)
    await this.#sweeping?.catch(() => {})
  }
}
