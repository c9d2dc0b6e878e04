/**
 * Version 5: usage buckets (see src/store/usage-contract.ts).
 *
 * - `usage_buckets`: one row per application (`''` for the anonymous pool), granularity
 *   (`m`, `h`, `d`) and start (epoch ms), with its counts and the time it may be swept.
 *   A flush adds to them with one `INSERT ... ON CONFLICT DO UPDATE`.
 * - `usage_writers`: the last batch applied per gate process, so that a batch sent again
 *   (its answer lost) is not counted twice; swept once forgotten.
 * - Indexes for the sweep (expiry) and for the top query (granularity and start).
 */
import type { Migration } from './migration.js'

export const migration: Migration = {
  version: 5,
  description: 'usage buckets per application and the last batch of each writer',
  sql: (s) => `
CREATE TABLE ${s}.usage_buckets (
  app_token text COLLATE "C" NOT NULL,
  granularity "char" NOT NULL CHECK (granularity IN ('m', 'h', 'd')),
  start_at bigint NOT NULL,
  requests bigint NOT NULL,
  throttled bigint NOT NULL,
  refused bigint NOT NULL,
  s2xx bigint NOT NULL,
  s3xx bigint NOT NULL,
  s4xx bigint NOT NULL,
  s5xx bigint NOT NULL,
  unknown_app_token bigint NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (app_token, granularity, start_at)
);
CREATE INDEX usage_buckets_expiry ON ${s}.usage_buckets (expires_at);
CREATE INDEX usage_buckets_by_time ON ${s}.usage_buckets (granularity, start_at) WHERE app_token <> '';

CREATE TABLE ${s}.usage_writers (
  writer text COLLATE "C" PRIMARY KEY,
  sequence bigint NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX usage_writers_expiry ON ${s}.usage_writers (expires_at);
`,
}
