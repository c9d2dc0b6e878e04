/**
 * The Lua scripts of {@link RedisStore}. Each runs as one atomic step on the server and
 * touches only keys that share one hash slot (the store builds the keys with hash tags),
 * so every one of them also runs on Redis Cluster.
 *
 * Scripts are called by `EVALSHA` with the SHA-1 computed here, and by `EVAL` when the
 * server answers `NOSCRIPT` (after a restart, a `SCRIPT FLUSH`, a failover, or on another
 * cluster node): Redis then caches the script again by itself.
 */
import { createHash } from 'node:crypto'

/** A script and its SHA-1, as `EVALSHA` names it. */
export interface RedisScript {
  readonly lua: string
  readonly sha: string
  readonly keys: number
}

function script(keys: number, lua: string): RedisScript {
  return { lua, sha: createHash('sha1').update(lua).digest('hex'), keys }
}

/**
 * One GCRA step, on the server's clock: exactly the arithmetic of `gcraStep` in
 * `src/gcra.ts` (integer microseconds, emission interval rounded up to a whole µs, times
 * rounded up to whole ms). The arrival time is one integer string with a TTL of the time
 * the budget takes to drain, so an idle key costs nothing.
 *
 * KEYS[1] the rate key; ARGV limit, windowMs, cost.
 * Returns {allowed 0|1, remaining, resetMs, retryAfterMs}.
 */
export const GCRA = script(
  1,
  `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
local cost = tonumber(ARGV[3])
local interval = math.ceil(tonumber(ARGV[2]) * 1000 / limit)
local stored = redis.call('GET', KEYS[1])
local tat = now
if stored then
  local s = tonumber(stored)
  if s and s > now then tat = s end
end
local function ms(us) if us <= 0 then return 0 end return math.ceil(us / 1000) end
local newTat = tat + cost * interval
local allowAt = newTat - interval * limit
if now < allowAt then return {0, 0, ms(tat - now), ms(allowAt - now)} end
local remaining = math.floor((now - allowAt) / interval)
local retry = 0
if remaining <= 0 then retry = ms(allowAt + interval - now) end
if cost > 0 then redis.call('SET', KEYS[1], string.format('%.0f', newTat), 'PX', math.ceil((newTat - now) / 1000)) end
return {1, remaining, ms(newTat - now), retry}`,
)

/**
 * Creates a hash if no key of that name exists, with an optional absolute expiry.
 * KEYS[1] the record; ARGV expireAtMs ('' for none), then field, value pairs.
 * Returns 1 when created, 0 when the key existed.
 */
export const CREATE = script(
  1,
  `if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
if ARGV[1] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[1]) end
return 1`,
)

/**
 * Applies a patch to an existing hash: sets some fields, deletes others (a `null`), in
 * one step, never a read-merge-write.
 * KEYS[1] the record; ARGV number of pairs to set, the pairs, then the fields to delete.
 * Returns the whole new hash as a flat array, or nil when there is no such record.
 */
export const PATCH = script(
  1,
  `if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local n = tonumber(ARGV[1])
if n > 0 then redis.call('HSET', KEYS[1], unpack(ARGV, 2, 1 + 2 * n)) end
if #ARGV > 1 + 2 * n then redis.call('HDEL', KEYS[1], unpack(ARGV, 2 + 2 * n)) end
return redis.call('HGETALL', KEYS[1])`,
)

/**
 * Sets a field once, if the record exists, the field is not set yet, and (optionally) a
 * condition field holds an expected value: the compare-and-set behind consuming a code and
 * revoking a token.
 * KEYS[1] the record; ARGV field, value, [conditionField, expected].
 * Returns 1 when this call set it, 0 when it was set already or the condition failed,
 * -1 when there is no such record.
 */
export const SET_ONCE = script(
  1,
  `if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
if ARGV[3] and redis.call('HGET', KEYS[1], ARGV[3]) ~= ARGV[4] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1`,
)

/**
 * Adds a member to an index (a sorted set) and makes the index live at least as long as
 * the record it points to, so indexes of expiring records expire too.
 * KEYS[1] the index; ARGV score, member, expireAtMs ('' to keep the index forever).
 */
export const INDEX_ADD = script(
  1,
  `local added = redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
if ARGV[3] ~= '' then
  local ttl = redis.call('PTTL', KEYS[1])
  local t = redis.call('TIME')
  local wanted = tonumber(ARGV[3]) - (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
  if ttl == -1 or ttl < wanted then redis.call('PEXPIRE', KEYS[1], math.max(wanted, 1)) end
end
return added`,
)

/**
 * Saves a record and adds it to an index in the same slot, unless the record exists.
 * KEYS[1] the record, KEYS[2] the index; ARGV score, member, then field, value pairs.
 * Returns 1 when created, 0 when the record existed.
 */
export const CREATE_INDEXED = script(
  2,
  `if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
return 1`,
)

/**
 * Deletes a record and its index entry.
 * KEYS[1] the record, KEYS[2] the index; ARGV member. Returns 1 when the record existed.
 */
export const DELETE_INDEXED = script(
  2,
  `local n = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return n`,
)

/**
 * Every record of an index, oldest first, skipping (and dropping) entries whose record
 * is gone. KEYS[1] the index; ARGV the record key prefix (record key = prefix .. member).
 * Returns an array of flat hashes.
 */
export const LIST_INDEXED = script(
  1,
  `local out = {}
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local record = redis.call('HGETALL', ARGV[1] .. member)
  if #record == 0 then redis.call('ZREM', KEYS[1], member) else out[#out + 1] = record end
end
return out`,
)

/**
 * Saves a user unless the id or the username is taken.
 * KEYS[1] the user, KEYS[2] the username → id hash; ARGV username, id, then pairs.
 * Returns 1 when created, 0 when the id exists, -1 when the username is taken.
 */
export const CREATE_USER = script(
  2,
  `if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return -1 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1`,
)

/**
 * A user by username, in one round trip. KEYS[1] the username → id hash; ARGV username,
 * the user key prefix. Returns the flat hash, or an empty array.
 */
export const USER_BY_NAME = script(
  1,
  `local id = redis.call('HGET', KEYS[1], ARGV[1])
if not id then return {} end
return redis.call('HGETALL', ARGV[2] .. id)`,
)

/**
 * Deletes a user and frees the username. KEYS[1] the user, KEYS[2] the username → id hash;
 * ARGV id. Returns 1 when the user existed.
 */
export const DELETE_USER = script(
  2,
  `local name = redis.call('HGET', KEYS[1], 'username')
if not name then return 0 end
redis.call('DEL', KEYS[1])
if redis.call('HGET', KEYS[2], name) == ARGV[1] then redis.call('HDEL', KEYS[2], name) end
return 1`,
)

/**
 * Saves a session and indexes it under its user. KEYS[1] the session, KEYS[2] the user's
 * session index; ARGV createdAt, sessionHash, expireAtMs, then pairs. Returns 1, or 0 when
 * the session exists.
 */
export const CREATE_SESSION = script(
  2,
  `if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[2])
local left = redis.call('PTTL', KEYS[1])
if ttl == -1 or ttl < left then redis.call('PEXPIRE', KEYS[2], math.max(left, 1)) end
return 1`,
)

/**
 * Deletes a session and its index entry. KEYS[1] the session; ARGV the session hash, the
 * index key prefix (index = prefix .. userId). Returns 1 when it existed.
 */
export const DELETE_SESSION = script(
  1,
  `local user = redis.call('HGET', KEYS[1], 'userId')
if not user then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', ARGV[2] .. user, ARGV[1])
return 1`,
)

/**
 * Deletes all but the newest `keep` sessions of a user (newest by createdAt, then by
 * session hash), and index entries whose session expired. KEYS[1] the user's session
 * index; ARGV keep, the session key prefix. Returns how many live sessions it deleted.
 */
export const TRIM_SESSIONS = script(
  1,
  `local live = {}
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if redis.call('EXISTS', ARGV[2] .. member) == 1 then live[#live + 1] = member
  else redis.call('ZREM', KEYS[1], member) end
end
local deleted = 0
for i = 1, #live - tonumber(ARGV[1]) do
  redis.call('DEL', ARGV[2] .. live[i])
  redis.call('ZREM', KEYS[1], live[i])
  deleted = deleted + 1
end
return deleted`,
)

/**
 * Records that a user authorized an application: a new grant starts at `at`, an existing
 * one moves its last use forward only. KEYS[1] the user's grants hash; ARGV appToken, at.
 * A grant is stored as "firstAuthorizedAt:lastUsedAt" under the app token.
 */
export const RECORD_GRANT = script(
  1,
  `local at = tonumber(ARGV[2])
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. ARGV[2])
  return 1
end
local first, last = string.match(current, '^(%d+):(%d+)$')
if at > tonumber(last) then redis.call('HSET', KEYS[1], ARGV[1], first .. ':' .. ARGV[2]) end
return 0`,
)

/**
 * Notes a use of a grant: moves its last use forward, and never creates a grant that is
 * not there (a revoked one must stay gone). KEYS[1] the user's grants hash; ARGV appToken, at.
 */
export const TOUCH_GRANT = script(
  1,
  `local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current then return 0 end
local first, last = string.match(current, '^(%d+):(%d+)$')
if tonumber(ARGV[2]) > tonumber(last) then redis.call('HSET', KEYS[1], ARGV[1], first .. ':' .. ARGV[2]) end
return 1`,
)
