/**
 * Version 10: usage outcomes of their own (see src/store/usage-contract.ts).
 *
 * - `usage_buckets.suspended`: of the refused requests, those of a suspended application.
 * - `usage_buckets.shadow`: per shadow limit, by name, how many requests it would have
 *   refused: a JSON object of counts (`{}` for most buckets), at most 10 names
 *   (`MAX_SHADOW_NAMES`).
 * - `usage_shadow_add(kept, added)`: the merge the flush's one statement applies to a
 *   bucket's `shadow`: every name `kept` has is added to, a new one only while there are
 *   fewer than 10. A function over two small objects, so that the statement's plan has no
 *   sort of its own.
 *
 * Both with a default, so every existing bucket reads as 0 and `{}`, and an instance of the
 * previous version keeps flushing on the migrated schema while the new one rolls out (it
 * inserts neither column).
 */
import type { Migration } from './migration.js'

export const migration: Migration = {
  version: 10,
  description: 'usage: suspended requests and shadow limits',
  sql: (s) => `
ALTER TABLE ${s}.usage_buckets
  ADD COLUMN suspended bigint NOT NULL DEFAULT 0,
  ADD COLUMN shadow jsonb NOT NULL DEFAULT '{}'::jsonb;

CREATE FUNCTION ${s}.usage_shadow_add(kept jsonb, added jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  item record;
  names integer := (SELECT count(*) FROM jsonb_object_keys(kept));
BEGIN
  FOR item IN SELECT key, value FROM jsonb_each_text(added) LOOP
    IF kept ? item.key THEN
      kept := jsonb_set(kept, ARRAY[item.key], to_jsonb((kept ->> item.key)::bigint + item.value::bigint));
    ELSIF names < 10 THEN
      kept := kept || jsonb_build_object(item.key, item.value::bigint);
      names := names + 1;
    END IF;
  END LOOP;
  RETURN kept;
END
$$;
`,
}
