/**
 * Usage buckets on PostgreSQL, for {@link PostgresStore} (tables of migration 5; the
 * `suspended` and `shadow` columns of migration 9).
 *
 * A batch is one statement: a data-modifying CTE claims the writer's sequence (an upsert
 * that changes the writer's row only when the sequence is new), and the buckets are upserted
 * from arrays (`unnest`) only if it did, all in one transaction, so a batch sent again adds
 * nothing. A bucket's shadow counts are a jsonb object, merged in the same statement by
 * `usage_shadow_add` (the names it has first, then new ones while it has fewer than
 * `MAX_SHADOW_NAMES`), and only when the row brings some. Rows are sent sorted by key, so that concurrent flushes of several processes
 * lock the buckets they share in the same order. Expired buckets and forgotten writers go
 * with the store's bounded sweep.
 */
import type { PostgresResult } from './pool.js'
import { usageCounts, type UsageBatch, type UsageBucket, type UsageGranularity, type UsageTopQuery, type UsageTotal } from '../usage-contract.js'

type Run = (text: string, values: unknown[]) => Promise<PostgresResult>

const LETTER: Readonly<Record<UsageGranularity, string>> = { minute: 'm', hour: 'h', day: 'd' }
/** The numeric counts, in `USAGE_FIELDS` order. */
const COUNTS = 'requests, throttled, refused, s2xx, s3xx, s4xx, s5xx, unknown_app_token, suspended'

export class PostgresUsage {
  readonly #run: Run
  readonly #add: string
  readonly #get: string
  readonly #top: Record<UsageTopQuery['by'], string>
  readonly #q: string

  /** @param q the quoted schema name */
  constructor(run: Run, q: string) {
    this.#run = run
    this.#q = q
    // A bucket found expired (not swept yet) starts again from zero.
    const add = COUNTS.split(', ')
      .map((c) => `${c} = CASE WHEN b.expires_at <= $4 THEN 0 ELSE b.${c} END + EXCLUDED.${c}`)
      .join(', ')
    // The bucket's names first (kept whatever comes), then the row's new ones up to the
    // bound (usage_shadow_add, migration 9); an expired bucket's (not swept yet) are
    // forgotten like its counts. A row without shadow counts leaves them as they are.
    const shadow = `CASE WHEN EXCLUDED.shadow = '{}'::jsonb AND b.expires_at > $4 THEN b.shadow
    ELSE ${q}.usage_shadow_add(CASE WHEN b.expires_at <= $4 THEN '{}'::jsonb ELSE b.shadow END, EXCLUDED.shadow) END`
    this.#add = `WITH claimed AS (
  INSERT INTO ${q}.usage_writers AS w (writer, sequence, expires_at) VALUES ($1, $2, $3)
  ON CONFLICT (writer) DO UPDATE SET sequence = EXCLUDED.sequence, expires_at = EXCLUDED.expires_at
  WHERE w.sequence < EXCLUDED.sequence OR w.expires_at <= $4
  RETURNING 1
)
INSERT INTO ${q}.usage_buckets AS b (app_token, granularity, start_at, ${COUNTS}, shadow, expires_at)
SELECT r.* FROM unnest($5::text[], $6::"char"[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[], $17::jsonb[], $18::bigint[])
  AS r(app_token, granularity, start_at, requests, throttled, refused, s2xx, s3xx, s4xx, s5xx, unknown_app_token, suspended, shadow, expires_at)
WHERE EXISTS (SELECT 1 FROM claimed)
ON CONFLICT (app_token, granularity, start_at) DO UPDATE SET
  ${add}, shadow = ${shadow}, expires_at = CASE WHEN b.expires_at <= $4 THEN EXCLUDED.expires_at ELSE GREATEST(b.expires_at, EXCLUDED.expires_at) END`
    // A bucket found expired (not swept yet) is read as absent.
    this.#get = `SELECT start_at, ${COUNTS}, shadow FROM ${q}.usage_buckets
WHERE app_token = $1 AND granularity = $2 AND start_at >= $3 AND start_at < $4 AND expires_at > $5 ORDER BY start_at`
    const top = (by: string) => `SELECT app_token, sum(requests) AS requests, sum(throttled) AS throttled FROM ${q}.usage_buckets
WHERE granularity = $1 AND start_at >= $2 AND start_at < $3 AND app_token <> '' AND expires_at > $4
GROUP BY app_token HAVING sum(${by}) > 0 ORDER BY sum(${by}) DESC, app_token LIMIT $5`
    this.#top = { requests: top('requests'), throttled: top('throttled') }
  }

  async add(batch: UsageBatch): Promise<void> {
    const now = Date.now()
    const rows = [...batch.rows].sort((a, b) =>
      (a.appToken ?? '') < (b.appToken ?? '') ? -1 : (a.appToken ?? '') > (b.appToken ?? '') ? 1 : a.granularity < b.granularity ? -1 : a.granularity > b.granularity ? 1 : a.start - b.start,
    )
    const columns: unknown[][] = Array.from({ length: 14 }, () => [])
    for (const row of rows) {
      const s = row.statuses
      const shadow = JSON.stringify(row.shadow ?? {})
      const values = [row.appToken ?? '', LETTER[row.granularity], row.start, row.requests, row.throttled, row.refused, s['2xx'], s['3xx'], s['4xx'], s['5xx'], row.unknownAppToken, row.suspended ?? 0, shadow, row.expiresAt]
      values.forEach((value, i) => columns[i]?.push(value))
    }
    await this.#run(this.#add, [batch.writer, batch.sequence, batch.idExpiresAt, now, ...columns])
  }

  async get(appToken: string | null, granularity: UsageGranularity, from: number, to: number): Promise<UsageBucket[]> {
    const { rows } = await this.#run(this.#get, [appToken ?? '', LETTER[granularity], from, to, Date.now()])
    return rows.map((row) => ({ start: Number(row.start_at), ...usageCounts(COUNTS.split(', ').map((c) => Number(row[c])), shadowCounts(row.shadow)) }))
  }

  async top(query: UsageTopQuery): Promise<UsageTotal[]> {
    const { rows } = await this.#run(this.#top[query.by], [LETTER[query.granularity], query.from, query.to, Date.now(), query.limit])
    return rows.map((row) => ({ appToken: String(row.app_token), requests: Number(row.requests), throttled: Number(row.throttled) }))
  }

  /** Deletes expired buckets and forgotten writers with the store's bounded `drain`. */
  async sweep(drain: (text: string, value: number) => Promise<number>, now: number): Promise<number> {
    const buckets = await drain(`DELETE FROM ${this.#q}.usage_buckets WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${this.#q}.usage_buckets WHERE expires_at <= $2 LIMIT $1 FOR UPDATE SKIP LOCKED))`, now)
    const writers = await drain(`DELETE FROM ${this.#q}.usage_writers WHERE writer IN (SELECT writer FROM ${this.#q}.usage_writers WHERE expires_at <= $2 LIMIT $1 FOR UPDATE SKIP LOCKED)`, now)
    return buckets + writers
  }
}

/** A bucket's `shadow` column as counts (the driver gives jsonb parsed). */
function shadowCounts(value: unknown): Record<string, number> {
  const counts: Record<string, number> = {}
  if (typeof value !== 'object' || value === null) return counts
  for (const [name, count] of Object.entries(value)) counts[name] = Number(count)
  return counts
}
