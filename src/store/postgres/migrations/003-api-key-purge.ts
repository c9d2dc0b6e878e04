/**
 * Version 3: deleted API keys are purged after a retention.
 *
 * - `api_keys.purge_at`: when a revoked key may be forgotten (set by `revokeApiKey`);
 *   the sweep deletes keys past it, and a user's cap on all keys counts only keys before it.
 * - An index of the keys to purge, for the sweep, and of a user's active keys, for the cap
 *   and the unique-name check at creation.
 */
import type { Migration } from './migration.js'

export const migration: Migration = {
  version: 3,
  description: 'API key purge time, and indexes for purging and for the checks at creation',
  sql: (s) => `
ALTER TABLE ${s}.api_keys ADD COLUMN purge_at bigint;
CREATE INDEX api_keys_to_purge ON ${s}.api_keys (purge_at) WHERE purge_at IS NOT NULL;
CREATE INDEX api_keys_active_by_user ON ${s}.api_keys (user_id, name) WHERE revoked_at IS NULL;
`,
}
