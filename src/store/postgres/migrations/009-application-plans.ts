/**
 * Version 9: an operator can put an application on a plan.
 *
 * - `applications.plan`: the plan's name, `NULL` for the configured default plan.
 *
 * One nullable column, and every existing row is on the default plan: an instance of the
 * previous version keeps serving on the migrated schema while the new one rolls out (it
 * inserts no plan, and cannot see one).
 */
import type { Migration } from './migration.js'

export const migration: Migration = {
  version: 9,
  description: 'application plans',
  sql: (s) => `
ALTER TABLE ${s}.applications ADD COLUMN plan text;
`,
}
