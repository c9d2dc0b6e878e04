/**
 * Version 8: several limits of one request at once (`consumeLimits`).
 *
 * - `quotas`: one calendar quota's counter per key, carrying its period
 *   (`period_start`, `period_end`, epoch ms) and kept until `expires_us` (the period's end,
 *   and at least `QUOTA_KEEP_MS` after it was written); the sweep deletes by it.
 * - `consume_limits(...)`: the limits of one call decided all or nothing in one round trip.
 *   It makes the rows of keys never seen that a step consumes (a read makes none), then locks every row, each time in key order
 *   (rates, then quotas), so concurrent calls on the same keys queue in one order and
 *   never deadlock; reads the clock once it holds the locks (and never before the last
 *   step's `seen_us`, as the one-step statement does); decides every step with the
 *   arithmetic of `limitsStep`, and writes only when all of them allow. It returns the state
 *   each step found and the clock, for `limitsStep` to compute the same answers in the store.
 *
 * A new table and a new function only: an instance of the previous version keeps serving on
 * the migrated schema while the new one rolls out.
 */
import type { Migration } from './migration.js'

export const migration: Migration = {
  version: 8,
  description: 'calendar quotas, and several limits decided at once',
  sql: (s) => `
CREATE TABLE ${s}.quotas (
  key text COLLATE "C" PRIMARY KEY,
  period_start bigint NOT NULL,
  period_end bigint NOT NULL,
  used bigint NOT NULL,
  expires_us bigint NOT NULL
);
CREATE INDEX quotas_by_expiry ON ${s}.quotas (expires_us);

CREATE FUNCTION ${s}.consume_limits(p_keys text[], p_kinds text[], p_limits bigint[], p_a bigint[], p_b bigint[], p_costs bigint[], p_keep_us bigint)
RETURNS TABLE (o_tat bigint, o_start bigint, o_end bigint, o_used bigint, o_now bigint, o_taken boolean)
LANGUAGE plpgsql AS $fn$
DECLARE
  n int := coalesce(array_length(p_keys, 1), 0);
  rate_keys text[] := ARRAY(SELECT k FROM unnest(p_keys, p_kinds) AS x(k, kind) WHERE kind = 'r');
  quota_keys text[] := ARRAY(SELECT k FROM unnest(p_keys, p_kinds) AS x(k, kind) WHERE kind = 'q');
  tats bigint[] := array_fill(NULL::bigint, ARRAY[n]);
  starts bigint[] := array_fill(NULL::bigint, ARRAY[n]);
  ends bigint[] := array_fill(NULL::bigint, ARRAY[n]);
  useds bigint[] := array_fill(NULL::bigint, ARRAY[n]);
  now_v bigint;
  ok boolean := true;
  step_interval bigint;
  t bigint;
  st bigint;
  en bigint;
  us bigint;
BEGIN
  INSERT INTO ${s}.rates (key, tat_us, seen_us, allowed)
    SELECT k, 0, 0, false FROM unnest(p_keys, p_kinds, p_costs) AS x(k, kind, cost) WHERE kind = 'r' AND cost > 0 ORDER BY k ON CONFLICT (key) DO NOTHING;
  INSERT INTO ${s}.quotas (key, period_start, period_end, used, expires_us)
    SELECT k, 0, 0, 0, 0 FROM unnest(p_keys, p_kinds, p_costs) AS x(k, kind, cost) WHERE kind = 'q' AND cost > 0 ORDER BY k ON CONFLICT (key) DO NOTHING;
  PERFORM 1 FROM ${s}.rates r WHERE r.key = ANY(rate_keys) ORDER BY r.key FOR UPDATE;
  PERFORM 1 FROM ${s}.quotas q WHERE q.key = ANY(quota_keys) ORDER BY q.key FOR UPDATE;
  SELECT GREATEST((extract(epoch FROM clock_timestamp()) * 1000000)::bigint, max(r.seen_us)) INTO now_v FROM ${s}.rates r WHERE r.key = ANY(rate_keys);
  FOR i IN 1..n LOOP
    IF p_kinds[i] = 'r' THEN
      t := COALESCE((SELECT r.tat_us FROM ${s}.rates r WHERE r.key = p_keys[i]), 0);
      tats[i] := t;
      step_interval := (p_a[i] * 1000 + p_limits[i] - 1) / p_limits[i];
      IF now_v < GREATEST(t, now_v) + p_costs[i] * step_interval - step_interval * p_limits[i] THEN ok := false; END IF;
    ELSE
      SELECT q.period_start, q.period_end, q.used INTO st, en, us FROM ${s}.quotas q WHERE q.key = p_keys[i];
      IF NOT FOUND THEN st := 0; en := 0; us := 0; END IF;
      starts[i] := st;
      ends[i] := en;
      useds[i] := us;
      IF st < p_a[i] THEN us := 0; END IF;
      IF us + p_costs[i] > p_limits[i] THEN ok := false; END IF;
    END IF;
  END LOOP;
  IF ok THEN
    FOR i IN 1..n LOOP
      CONTINUE WHEN p_costs[i] = 0;
      IF p_kinds[i] = 'r' THEN
        step_interval := (p_a[i] * 1000 + p_limits[i] - 1) / p_limits[i];
        UPDATE ${s}.rates SET tat_us = GREATEST(tats[i], now_v) + p_costs[i] * step_interval, seen_us = now_v, allowed = true WHERE key = p_keys[i];
      ELSIF starts[i] >= p_a[i] THEN
        UPDATE ${s}.quotas SET used = useds[i] + p_costs[i], expires_us = GREATEST(ends[i] * 1000, now_v + p_keep_us) WHERE key = p_keys[i];
      ELSE
        UPDATE ${s}.quotas SET period_start = p_a[i], period_end = p_b[i], used = p_costs[i], expires_us = GREATEST(p_b[i] * 1000, now_v + p_keep_us) WHERE key = p_keys[i];
      END IF;
    END LOOP;
  END IF;
  RETURN QUERY SELECT tats[i], starts[i], ends[i], useds[i], now_v, ok FROM generate_subscripts(p_keys, 1) AS i ORDER BY i;
END
$fn$;
`,
}
