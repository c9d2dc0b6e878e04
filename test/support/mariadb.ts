/**
 * The MariaDB the custom-store example runs on: MARIADB_URL, or the development machine's
 * server (127.0.0.1:3306, root without a password, database `test`). Each run works in
 * tables of its own (a random prefix), dropped afterwards. Without a server the suite is
 * skipped with a notice, except in CI (CI=true), where a missing server is a failure.
 */
import { randomBytes } from 'node:crypto'
import mysql from 'mysql2/promise'

export const MARIADB_URL = process.env.MARIADB_URL ?? 'mysql://root@127.0.0.1:3306/test'

/** Whether the MariaDB tests run. Throws in CI when the server does not answer. */
export async function mariadbAvailable(): Promise<boolean> {
  try {
    const connection = await mysql.createConnection({ uri: MARIADB_URL, connectTimeout: 3000 })
    await connection.query('SELECT 1')
    await connection.end()
    return true
  } catch {
    const where = MARIADB_URL.replace(/\/\/[^@/]*@/, '//')
    if (process.env.CI === 'true') throw new Error(`MariaDB does not answer at ${where}: in CI the MariaDB suite must run (set MARIADB_URL)`)
    console.warn(`MariaDB tests skipped: no server answers at ${where} (start one, or set MARIADB_URL=mysql://user@host:port/db)`)
    return false
  }
}

/** A table prefix no other run uses. */
export function freshPrefix(): string {
  return `odg_test_${randomBytes(4).toString('hex')}_`
}
