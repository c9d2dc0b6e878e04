/**
 * Version 1: every record of the base contract, and the rate state.
 *
 * Times of records are epoch milliseconds (`bigint`), exactly as the gate hands them over;
 * a rate row holds its GCRA arrival time in microseconds of the database's own clock.
 * Identifiers compare by code units (`COLLATE "C"`), as the gate's own maps do. There are
 * no foreign keys: a deleted user's keys and tokens stop working because they no longer
 * resolve to a user, and they go with the sweep or an operator's cleanup.
 */
import type { Migration } from './migration.js'

export const migration: Migration = {
  version: 1,
  description: 'applications, users, API keys, access tokens, authorization codes, sessions and rate state',
  sql: (s) => `
CREATE TABLE ${s}.applications (
  app_token text COLLATE "C" PRIMARY KEY,
  name text NOT NULL,
  secret_hash text NOT NULL,
  callback_prefix text,
  rate_limit integer,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE ${s}.users (
  id text COLLATE "C" PRIMARY KEY,
  username text COLLATE "C" NOT NULL UNIQUE,
  screen_name text NOT NULL,
  display_name text NOT NULL,
  email text NOT NULL,
  rights text[] NOT NULL,
  password_hash text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE ${s}.api_keys (
  key_id text COLLATE "C" PRIMARY KEY,
  user_id text COLLATE "C" NOT NULL,
  name text NOT NULL,
  secret_hash text NOT NULL,
  created_at bigint NOT NULL,
  last_used_at bigint,
  revoked_at bigint
);
-- A user's keys, oldest first.
CREATE INDEX api_keys_by_user ON ${s}.api_keys (user_id, created_at, key_id);

CREATE TABLE ${s}.access_tokens (
  token_hash text COLLATE "C" PRIMARY KEY,
  user_id text COLLATE "C" NOT NULL,
  app_token text COLLATE "C" NOT NULL,
  code_hash text COLLATE "C",
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  revoked_at bigint
);
-- Revocation by user and by application touches active tokens only; a user's are listed oldest first.
CREATE INDEX access_tokens_active_by_user ON ${s}.access_tokens (user_id, created_at, token_hash) WHERE revoked_at IS NULL;
CREATE INDEX access_tokens_active_by_app ON ${s}.access_tokens (app_token) WHERE revoked_at IS NULL;
CREATE INDEX access_tokens_by_code ON ${s}.access_tokens (code_hash) WHERE code_hash IS NOT NULL;
CREATE INDEX access_tokens_by_expiry ON ${s}.access_tokens (expires_at);

CREATE TABLE ${s}.authorization_codes (
  code_hash text COLLATE "C" PRIMARY KEY,
  app_token text COLLATE "C" NOT NULL,
  user_id text COLLATE "C" NOT NULL,
  redirect_uri text NOT NULL,
  code_challenge text,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  used_at bigint
);
CREATE INDEX authorization_codes_by_expiry ON ${s}.authorization_codes (expires_at);

CREATE TABLE ${s}.sessions (
  session_hash text COLLATE "C" PRIMARY KEY,
  user_id text COLLATE "C" NOT NULL,
  password_stamp text NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX sessions_by_expiry ON ${s}.sessions (expires_at);

-- One GCRA cell per key: the theoretical arrival time and what the last step saw and
-- decided (so that one INSERT ... ON CONFLICT ... RETURNING can report it).
CREATE TABLE ${s}.rates (
  key text COLLATE "C" PRIMARY KEY,
  tat_us bigint NOT NULL,
  seen_us bigint NOT NULL,
  allowed boolean NOT NULL
);
-- A row whose arrival time has passed holds no state: the sweep deletes by it.
CREATE INDEX rates_by_tat ON ${s}.rates (tat_us);
`,
}
