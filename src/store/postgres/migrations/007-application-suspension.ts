/**
 * Version 7: an operator can suspend an application.
 *
 * - `applications.suspended_at`: when it was suspended (epoch ms), `NULL` while it is active.
 * - `applications.suspension_reason`: the operator's reason, shown to its clients and its
 *   owner; set and cleared with `suspended_at`, which the check holds.
 *
 * Nullable columns only, and every existing row is active: an instance of the previous
 * version keeps serving on the migrated schema while the new one rolls out (it inserts
 * neither column, which the check accepts, and cannot see a suspension).
 */
import type { Migration } from './migration.js'

export const migration: Migration = {
  version: 7,
  description: 'application suspension: when it began and why',
  sql: (s) => `
ALTER TABLE ${s}.applications
  ADD COLUMN suspended_at bigint,
  ADD COLUMN suspension_reason text,
  ADD CONSTRAINT applications_suspension_whole CHECK ((suspended_at IS NULL) = (suspension_reason IS NULL));
`,
}
