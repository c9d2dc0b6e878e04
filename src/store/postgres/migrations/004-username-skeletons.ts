/**
 * Version 4: the skeleton of every username (UTS #39, what it looks like), so that a new
 * username that looks like an existing one (`аda` in Cyrillic beside `ada`) is refused by
 * one index lookup. Users saved before get theirs in the same transaction, computed here
 * (SQL has no confusables table). Not unique: users saved before may already look alike.
 */
import { usernameSkeleton } from '../../../rules/usernames.js'
import type { Migration } from './migration.js'

/** Users given their skeleton per statement. */
const BATCH = 1000

export const migration: Migration = {
  version: 4,
  description: 'username skeletons (UTS #39) for refusing look-alike usernames',
  sql: (s) => `
ALTER TABLE ${s}.users ADD COLUMN username_skeleton text COLLATE "C";
CREATE INDEX users_by_skeleton ON ${s}.users (username_skeleton);
`,
  async backfill(query, s) {
    for (;;) {
      const { rows } = await query(`SELECT id, username FROM ${s}.users WHERE username_skeleton IS NULL ORDER BY id LIMIT ${BATCH}`)
      if (rows.length === 0) return
      const ids = rows.map((row) => row.id as string)
      const skeletons = await Promise.all(rows.map((row) => usernameSkeleton(row.username as string)))
      await query(`UPDATE ${s}.users u SET username_skeleton = v.skeleton FROM unnest($1::text[], $2::text[]) AS v(id, skeleton) WHERE u.id = v.id`, [ids, skeletons])
    }
  },
}
