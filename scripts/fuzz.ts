/**
 * `npm run fuzz`: the hostile-input properties of `test/fuzz.test.ts`, for as long as
 * you like, with a random seed (or the one you give). Prints the seed first, and for a
 * failure fast-check's report: the shrunk counterexample and the seed and path that
 * replay it.
 *
 *   npm run fuzz                         # 200 000 core cases, the pure properties x4, random seed
 *   npm run fuzz -- --runs 1000000       # longer
 *   npm run fuzz -- --seed 1234 --only core
 *   npm run fuzz -- --seed 1234 --path "5:1:0"   # replay one counterexample
 *
 * The `unstorable` property runs on PostgreSQL (DATABASE_URL, default the local test
 * database) in a schema of its own, dropped afterwards; it is left out when no server answers.
 */
import { parseArgs } from 'node:util'
import fc from 'fast-check'
import pg from 'pg'
import { PostgresStore } from '../src/store/postgres/store.js'
import { appTokenProperty, authorizationProperty, coreProperty, redirectUriProperty, unstorableProperty, untrustedProxyProperty, type StoreWorld } from '../test/fuzz/properties.js'
import { createStoreWorld } from '../test/fuzz/world.js'
import { DATABASE_URL, dropSchema, freshSchema, postgresAvailable } from '../test/support/postgres.js'

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '200000' },
    seed: { type: 'string' },
    only: { type: 'string' },
    path: { type: 'string' },
  },
})

const runs = Number(values.runs)
if (!Number.isSafeInteger(runs) || runs < 1) throw new TypeError(`--runs must be a positive integer, got ${values.runs}`)
const seed = values.seed === undefined ? (Date.now() ^ (Math.random() * 0x100000000)) | 0 : Number(values.seed)
if (!Number.isSafeInteger(seed)) throw new TypeError(`--seed must be an integer, got ${values.seed}`)

// The properties provoke the gate's one-time warnings on purpose (proxy headers from a
// private peer): count them instead of printing one per fresh gate.
const warnings = new Map<string, number>()
process.emitWarning = ((warning: string | Error, options?: { code?: string } | string) => {
  const code = typeof options === 'object' ? (options.code ?? 'warning') : String(options ?? 'warning')
  warnings.set(code, (warnings.get(code) ?? 0) + 1)
  void warning
}) as typeof process.emitWarning

const wantsPostgres = values.only === undefined || values.only === 'unstorable'
const schema = freshSchema('fuzz')
let pool: pg.Pool | undefined
let storeWorld: StoreWorld | undefined
if (wantsPostgres && (await postgresAvailable())) {
  pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 })
  const store = new PostgresStore({ pool, schema, sweepIntervalMs: 0 })
  await store.migrate()
  storeWorld = await createStoreWorld(store)
}

const onPostgres = storeWorld
const properties: Record<string, { property: () => fc.IRawProperty<unknown, boolean>; share: number }> = {
  core: { property: coreProperty as () => fc.IRawProperty<unknown, boolean>, share: 1 },
  untrustedProxy: { property: untrustedProxyProperty as () => fc.IRawProperty<unknown, boolean>, share: 0.2 },
  redirect: { property: () => redirectUriProperty() as fc.IRawProperty<unknown, boolean>, share: 4 },
  loopbackRedirect: { property: () => redirectUriProperty(true) as fc.IRawProperty<unknown, boolean>, share: 2 },
  ...(onPostgres === undefined ? {} : { unstorable: { property: () => unstorableProperty(onPostgres) as fc.IRawProperty<unknown, boolean>, share: 0.15 } }),
  authorization: { property: authorizationProperty as () => fc.IRawProperty<unknown, boolean>, share: 4 },
  appToken: { property: appTokenProperty as () => fc.IRawProperty<unknown, boolean>, share: 4 },
}

console.log(`fuzz: seed ${seed} (replay with --seed ${seed}), ${runs} core runs`)
let failed = false
for (const [name, { property, share }] of Object.entries(properties)) {
  if (values.only !== undefined && values.only !== name) continue
  const numRuns = Math.max(1, Math.round(runs * share))
  const started = performance.now()
  const result = await fc.check(property(), { seed, numRuns, ...(values.path === undefined ? {} : { path: values.path }) })
  const seconds = ((performance.now() - started) / 1000).toFixed(1)
  if (result.failed) {
    failed = true
    const error = result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance)
    console.log(`\n✗ ${name}: failed after ${result.numRuns} runs (${seconds} s)\n${fc.defaultReportMessage(result)}\n${error}\n`)
  } else {
    console.log(`✓ ${name}: ${result.numRuns} runs in ${seconds} s`)
  }
}
if (storeWorld !== undefined) {
  await storeWorld.gate.close()
  await pool?.end()
  await dropSchema(schema)
}
if (warnings.size > 0) console.log(`warnings (expected: ODG_UNTRUSTED_PROXY_HEADERS, ODG_DERIVED_ISSUER): ${JSON.stringify(Object.fromEntries(warnings))}`)
process.exitCode = failed ? 1 : 0
