/**
 * Version 2: connected apps, capped login sessions, API key listing, and change
 * notifications.
 *
 * - `grants`: which applications a user authorized, first and last use, listed oldest first.
 * - Sessions by user, newest first, so that trimming a user's sessions is one index range.
 * - API key pages sorted by last use, revocation or name, each an index range (creation
 *   time is the index of version 1); a missing time sorts as 0.
 * - A trigger that announces every change to an application on the channel
 *   `open_data_gate:<schema>` with the app token as payload, whoever made it (another
 *   instance, an operator in psql): every instance drops its cached copy.
 */
import type { Migration } from './migration.js'

export const migration: Migration = {
  version: 2,
  description: 'connected apps (grants), sessions by user, API key listing indexes, application change notifications',
  sql: (s) => `
CREATE TABLE ${s}.grants (
  user_id text COLLATE "C" NOT NULL,
  app_token text COLLATE "C" NOT NULL,
  first_authorized_at bigint NOT NULL,
  last_used_at bigint NOT NULL,
  PRIMARY KEY (user_id, app_token)
);
-- A user's connected apps, oldest first.
CREATE INDEX grants_by_user ON ${s}.grants (user_id, first_authorized_at, app_token);

CREATE INDEX sessions_by_user ON ${s}.sessions (user_id, created_at DESC, session_hash DESC);

CREATE INDEX api_keys_by_user_last_used ON ${s}.api_keys (user_id, (COALESCE(last_used_at, 0)), key_id);
CREATE INDEX api_keys_by_user_revoked ON ${s}.api_keys (user_id, (COALESCE(revoked_at, 0)), key_id);
CREATE INDEX api_keys_by_user_name ON ${s}.api_keys (user_id, (name COLLATE "C"), key_id);

CREATE FUNCTION ${s}.notify_application_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('open_data_gate:' || TG_TABLE_SCHEMA, OLD.app_token);
  ELSE
    PERFORM pg_notify('open_data_gate:' || TG_TABLE_SCHEMA, NEW.app_token);
    IF TG_OP = 'UPDATE' AND OLD.app_token IS DISTINCT FROM NEW.app_token THEN
      PERFORM pg_notify('open_data_gate:' || TG_TABLE_SCHEMA, OLD.app_token);
    END IF;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER application_changed AFTER INSERT OR UPDATE OR DELETE ON ${s}.applications
  FOR EACH ROW EXECUTE FUNCTION ${s}.notify_application_changed();
`,
}
