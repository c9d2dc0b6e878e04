/**
 * Version 6: developers own their applications, and a rotated secret has a grace period.
 *
 * - `applications.owner_id`: the user who registered the application on the portal;
 *   `NULL` for an operator's. An index by owner and creation time serves an owner's list
 *   and the count of the per-owner cap at registration.
 * - `applications.previous_secret_hash` and `previous_secret_expires_at`: the secret before
 *   the last rotation, accepted by the token endpoint until that time.
 *
 * Nullable columns only: an instance of the previous version keeps serving on the migrated
 * schema while the new one rolls out.
 */
import type { Migration } from './migration.js'

export const migration: Migration = {
  version: 6,
  description: 'application owners, and the previous secret of a rotation with its expiry',
  sql: (s) => `
ALTER TABLE ${s}.applications
  ADD COLUMN owner_id text COLLATE "C",
  ADD COLUMN previous_secret_hash text,
  ADD COLUMN previous_secret_expires_at bigint;
CREATE INDEX applications_by_owner ON ${s}.applications (owner_id, created_at) WHERE owner_id IS NOT NULL;
`,
}
