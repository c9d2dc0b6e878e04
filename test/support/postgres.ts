/**
 * The PostgreSQL the tests run on: DATABASE_URL, or the development machine's server
 * (127.0.0.1:5432, trust auth, database `test`). Each test file works in a schema of its
 * own, dropped afterwards. Without a server the suites are skipped with a notice, except
 * in CI (CI=true), where a missing server is a failure.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'

export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('SELECT 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

/** Whether the PostgreSQL tests run. Throws in CI when the server does not answer. */
export async function postgresAvailable(): Promise<boolean> {
  if (await answers(DATABASE_URL)) return true
  const where = DATABASE_URL.replace(/\/\/[^@/]*@/, '//')
  if (process.env.CI === 'true') throw new Error(`PostgreSQL does not answer at ${where}: in CI the PostgreSQL suites must run (set DATABASE_URL)`)
  console.warn(`PostgreSQL tests skipped: no server answers at ${where} (start one, or set DATABASE_URL=postgres://user@host:port/db)`)
  return false
}

/** A schema name no other run uses. */
export function freshSchema(label: string): string {
  return `odg_test_${label}_${randomBytes(5).toString('hex')}`
}

/** Drops a test schema and everything in it. */
export async function dropSchema(schema: string, url = DATABASE_URL): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`)
  } finally {
    await client.end()
  }
}
