/**
 * examples/custom-store: a user's own store on MariaDB passes the same conformance suite
 * as the project's stores, on the real server (MARIADB_URL), in tables of its own.
 */
import mysql from 'mysql2/promise'
import { afterAll, beforeAll, describe } from 'vitest'
import { MariaDbStore } from '../examples/custom-store/mariadb-store.js'
import { describeStoreConformance } from './store-conformance.js'
import { describeAgreementWithMemoryStore } from './store-agreement.js'
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

  describeStoreConformance('MariaDbStore', () => ({ store }))
  describeAgreementWithMemoryStore('MariaDbStore', () => store)
})
