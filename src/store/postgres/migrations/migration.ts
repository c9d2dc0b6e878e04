/**
 * What a migration of the PostgreSQL store's schema is. In a module of its own so that the
 * migrations and the list of them (`index.ts`) both import it, and not each other.
 */

/** One version of the schema. */
export interface Migration {
  readonly version: number
  /** One line, stored in `schema_version`. */
  readonly description: string
  /** The statements, given the quoted schema name; they run in one transaction. */
  readonly sql: (schema: string) => string
  /**
   * Runs after `sql`, in the same transaction, for data SQL cannot compute; `query` is the
   * migrating connection's.
   */
  readonly backfill?: (query: (text: string, values?: unknown[]) => Promise<{ rows: Array<Record<string, unknown>> }>, schema: string) => Promise<void>
}
