/**
 * examples/custom-store: a user's own store on MariaDB passes the conformance kit
 * (`open-data-gate/testing`) like the project's stores, on the real server (MARIADB_URL), in tables of its own.
 */
import mysql from 'mysql2/promise'
import { afterAll, beforeAll, describe, it } from 'vitest'
import { MariaDbStore } from '../examples/custom-store/mariadb-store.js'
import { describeStore } from 'open-data-gate/testing'
import { describeAgreementWithMemoryStore } from './support/store-agreement.js'
import { freshPrefix, MARIADB_URL, mariadbAvailable } from './support/mariadb.js'

const available = await mariadbAvailable()

describe.skipIf(!available)('examples/custom-store (MariaDB)', () => {
  let pool: mysql.Pool
  let store: MariaDbStore

  beforeAll(async () => {
    pool = mysql.createPool({ uri: MARIADB_URL, connectionLimit: 20 })
    store = new MariaDbStore({ pool, prefix: freshPrefix() })
    await store.createTables()
  })

  afterAll(async () => {
    await store?.dropTables()
    await pool?.end()
  })

  // As a user runs the kit on their own store: the package's published entry point.
  describeStore('MariaDbStore', () => store, { describe, it })
  describeAgreementWithMemoryStore('MariaDbStore', () => store)
})
