/**
 * Creating the PostgreSQL store's schema and bringing it to the version this release
 * reads and writes: the migrations of `migrations/` in order, in one transaction under an
 * advisory lock, each recorded in `schema_version`.
 */
import { MIGRATIONS } from './migrations/index.js'
import type { PostgresPool } from './pool.js'

/** What {@link PostgresStore.migrate} did. */
export interface MigrationResult {
  /** The schema's version before. 0 for a new schema. */
  readonly from: number
  /** The schema's version now. */
  readonly to: number
  /** The versions this call applied, in order; empty when the schema was up to date. */
  readonly applied: readonly number[]
}

/** Advisory lock class for migrations (any constant; the second key is the schema's hash). */
const MIGRATION_LOCK_CLASS = 0x0d6a7e

/** The schema version this release reads and writes. */
export const SCHEMA_VERSION = MIGRATIONS.length

/**
 * Creates `schema` (quoted: `q`) or brings it to {@link SCHEMA_VERSION}, in one transaction
 * under an advisory lock: several instances may run it at once, and one of them does the
 * work while the others wait and find nothing to do.
 */
export async function migrateSchema(pool: PostgresPool, schema: string, q: string): Promise<MigrationResult> {
  const client = await pool.connect()
  let failed: unknown
  try {
    await client.query({ text: 'BEGIN' })
    await client.query({ text: 'SELECT pg_advisory_xact_lock($1, hashtext($2))', values: [MIGRATION_LOCK_CLASS, schema] })
    await client.query({ text: `CREATE SCHEMA IF NOT EXISTS ${q}` })
    await client.query({
      text: `CREATE TABLE IF NOT EXISTS ${q}.schema_version (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    })
    const current = await client.query({ text: `SELECT COALESCE(max(version), 0) AS version FROM ${q}.schema_version` })
    const from = Number(current.rows[0]?.version ?? 0)
    if (from > MIGRATIONS.length) {
      throw new Error(`open-data-gate: schema ${schema} is at version ${from}, newer than this release knows (${MIGRATIONS.length}); upgrade open-data-gate`)
    }
    const applied: number[] = []
    for (const migration of MIGRATIONS.slice(from)) {
      await client.query({ text: migration.sql(q) })
      await migration.backfill?.((text, values) => client.query({ text, ...(values === undefined ? {} : { values }) }), q)
      await client.query({ text: `INSERT INTO ${q}.schema_version (version, description) VALUES ($1, $2)`, values: [migration.version, migration.description] })
      applied.push(migration.version)
    }
    await client.query({ text: 'COMMIT' })
    return { from, to: from + applied.length, applied }
  } catch (error) {
    failed = error
    await client.query({ text: 'ROLLBACK' }).catch(() => {})
    throw error
  } finally {
    client.release(failed instanceof Error ? failed : undefined)
  }
}

/** The version of the schema `q` in the database (0 when it was never migrated). */
export async function schemaVersionOf(pool: PostgresPool, q: string): Promise<number> {
  const exists = await pool.query({ text: 'SELECT to_regclass($1) IS NOT NULL AS exists', values: [`${q}.schema_version`] })
  if (exists.rows[0]?.exists !== true) return 0
  const result = await pool.query({ text: `SELECT COALESCE(max(version), 0) AS version FROM ${q}.schema_version` })
  return Number(result.rows[0]?.version ?? 0)
}
