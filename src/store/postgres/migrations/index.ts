/**
 * The PostgreSQL store's schema, one module per version, applied in order by
 * `PostgresStore.migrate()`. A released migration never changes: a new version is a new
 * module appended here. Each one is SQL in a TypeScript string, so it is bundled into
 * both builds (ESM and CommonJS) and needs no file lookup at run time.
 */
import { migration as v1 } from './001-records-and-rates.js'
import { migration as v2 } from './002-connected-apps.js'
import { migration as v3 } from './003-api-key-purge.js'
import { migration as v4 } from './004-username-skeletons.js'
import { migration as v5 } from './005-usage.js'

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

/** Every version, in order. */
export const MIGRATIONS: readonly Migration[] = [v1, v2, v3, v4, v5]
