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
import { migration as v6 } from './006-application-owners.js'
import { migration as v7 } from './007-application-suspension.js'
import { migration as v8 } from './008-limits.js'
import { migration as v9 } from './009-application-plans.js'
import { migration as v10 } from './010-usage-outcomes.js'
import type { Migration } from './migration.js'

export type { Migration } from './migration.js'

/** Every version, in order. */
export const MIGRATIONS: readonly Migration[] = [v1, v2, v3, v4, v5, v6, v7, v8, v9, v10]
