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
import { QUOTA_KEEP_MS } from '../../limits/limit-steps.js'

/** A script and its SHA-1, as `EVALSHA` names it. */
export interface RedisScript {
  readonly lua: string
  readonly sha: string
  /** How many keys it takes, or {@link VARIADIC}: as many as the call gives. */
  readonly keys: number
}

/** The `keys` of a script that takes as many keys as the call gives. */
export const VARIADIC = -1

function script(keys: number, lua: string): RedisScript {
  return { lua, sha: createHash('sha1').update(lua).digest('hex'), keys }
}

/**
 * The Lua of one GCRA step, shared by {@link GCRA}, {@link LIMITS} and {@link LOOKUP_REQUEST}:
 * `now` from the server's clock in µs; `gcra(stored, limit, windowMs, cost)`, the decision on
 * a stored arrival time (a string, or false for none), returning allowed (0|1), remaining,
 * resetMs, retryAfterMs and the new arrival time to store (nil: keep it); `setTat(key,
 * tat)`; and `step(key, limit, windowMs, cost)`, the two together, returning allowed and the
 * reply string 'allowed remaining resetMs retryAfterMs'.
 *
 * What a script costs Redis is mostly its Lua, not its commands (bench/limits-cost.ts counts
 * the server's instructions): so a decision returns its numbers as values, never in a
 * table (a table is an allocation and, later, the collector's work), every number is
 * parsed once, and numbers are written by `%d` (see {@link GCRA}).
 */
const GCRA_STEP_LUA = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function ms(us) if us <= 0 then return 0 end return math.ceil(us / 1000) end
local function gcra(stored, limitArg, windowArg, costArg)
  local limit = tonumber(limitArg)
  local cost = tonumber(costArg)
  local interval = math.ceil(tonumber(windowArg) * 1000 / limit)
  local tat = now
  if stored then
    local s = tonumber(stored)
    if s and s > now then tat = s end
  end
  local newTat = tat + cost * interval
  local allowAt = tat + (cost - limit) * interval
  if now < allowAt then return 0, 0, ms(tat - now), ms(allowAt - now) end
  local remaining = math.floor((now - allowAt) / interval)
  local retry = 0
  if remaining <= 0 then retry = ms(allowAt + interval - now) end
  if cost > 0 then return 1, remaining, ms(newTat - now), retry, newTat end
  return 1, remaining, ms(newTat - now), retry
end
local function setTat(key, tat) redis.call('SET', key, string.format('%d', tat), 'PX', math.ceil((tat - now) / 1000)) end
local function step(key, limitArg, windowArg, costArg)
  local allowed, remaining, reset, retry, tat = gcra(redis.call('GET', key), limitArg, windowArg, costArg)
  if tat then setTat(key, tat) end
  return allowed, string.format('%d %d %d %d', allowed, remaining, reset, retry)
end
`

/** The reply formats of {@link LIMITS_LUA} for one to five limits, written out (a `string.rep` per call costs as much as a command). */
const LIMITS_FORMATS = [1, 2, 3, 4, 5].map((n) => `if n == ${n} then return '${Array.from({ length: n * 4 + 1 }, () => '%d').join(' ')}' end`).join('\n')

/**
 * The Lua of several limits all or nothing, after {@link GCRA_STEP_LUA}: the arithmetic of
 * `limitsStep` in `src/limits/limit-steps.ts`. A quota's value is the string
 * 'periodStart periodEnd used' under its key, kept until the period's end and at least
 * `QUOTA_KEEP_MS`. `limits(firstKey, n, base)` decides the `n` limits of KEYS[firstKey..],
 * each with five arguments from ARGV[base + 1]: 'r', limit, windowMs, '', cost for a rate,
 * 'q', limit, periodStart, periodEnd, cost for a quota. Every key is read first; only when
 * every step allows is any written. Returns 'taken' (0|1) and each step's four numbers, one
 * string, and 'taken' again as a number.
 */
const LIMITS_LUA = `local function quota(stored, limitArg, startArg, endArg, costArg)
  local limit, cost = tonumber(limitArg), tonumber(costArg)
  local period = startArg .. ' ' .. endArg .. ' '
  local start, finish, used = nil, nil, 0
  if stored then
    if string.sub(stored, 1, #period) == period then
      -- The period the gate counts in (nearly every call): one number to read.
      used = tonumber(string.sub(stored, #period + 1)) or 0
    else
      local s, e, u = string.match(stored, '^(%d+) (%d+) (%d+)$')
      if s then
        s = tonumber(s)
        if s >= tonumber(startArg) then start, finish, used = s, tonumber(e), tonumber(u) end
      end
    end
  end
  if not finish then finish = tonumber(endArg) end
  local toEnd = ms(finish * 1000 - now)
  if used + cost > limit then return 0, 0, toEnd, toEnd end
  local after = used + cost
  local remaining = limit - after
  local reset, retry = 0, 0
  if after > 0 then reset = toEnd end
  if remaining <= 0 then retry = toEnd end
  if cost == 0 then return 1, remaining, reset, retry end
  local value
  if start then value = string.format('%d %d %d', start, finish, after) else value = period .. string.format('%d', after) end
  return 1, remaining, reset, retry, value, math.max(toEnd, ${QUOTA_KEEP_MS})
end
local function limitsFormat(n)
${LIMITS_FORMATS}
  return string.rep('%d ', n * 4) .. '%d'
end
local function limits(firstKey, n, base)
  local stored = redis.call('MGET', unpack(KEYS, firstKey, firstKey + n - 1))
  -- Made at their size: a table grown one slot at a time is reallocated at every power of two.
  local numbers, values, ttls, taken = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {false, false, false, false, false}, {false, false, false, false, false}, 1
  for i = 1, n do
    local j, k = base + i * 5 - 5, i * 4 - 2
    if ARGV[j + 1] == 'r' then numbers[k], numbers[k + 1], numbers[k + 2], numbers[k + 3], values[i] = gcra(stored[i], ARGV[j + 2], ARGV[j + 3], ARGV[j + 5])
    else numbers[k], numbers[k + 1], numbers[k + 2], numbers[k + 3], values[i], ttls[i] = quota(stored[i], ARGV[j + 2], ARGV[j + 3], ARGV[j + 4], ARGV[j + 5]) end
    if numbers[k] == 0 then taken = 0 end
  end
  if taken == 1 then
    for i = 1, n do
      local value = values[i]
      if value then
        if ttls[i] then redis.call('SET', KEYS[firstKey + i - 1], value, 'PX', ttls[i]) else setTat(KEYS[firstKey + i - 1], value) end
      end
    end
  else
    numbers[1] = 0
    for i = 1, n do
      local j, k = base + i * 5 - 5, i * 4 - 2
      -- A step that would have fitted is answered as a read of the limit as it is.
      if numbers[k] == 1 then
        if ARGV[j + 1] == 'r' then numbers[k], numbers[k + 1], numbers[k + 2], numbers[k + 3] = gcra(stored[i], ARGV[j + 2], ARGV[j + 3], 0)
        else numbers[k], numbers[k + 1], numbers[k + 2], numbers[k + 3] = quota(stored[i], ARGV[j + 2], ARGV[j + 3], ARGV[j + 4], 0) end
      end
    end
  end
  return string.format(limitsFormat(n), unpack(numbers, 1, n * 4 + 1)), taken
end
`

/**
 * One GCRA step, on the server's clock: exactly the arithmetic of `gcraStep` in
 * `src/limits/gcra.ts` (integer microseconds, emission interval rounded up to a whole µs, times
 * rounded up to whole ms). The arrival time is one integer string with a TTL of the time
 * the budget takes to drain, so an idle key costs nothing.
 *
 * KEYS[1] the rate key; ARGV limit, windowMs, cost.
 * Returns 'allowed remaining resetMs retryAfterMs' (allowed 0|1), one string: ioredis 6
 * decodes a reply element by element at a few thousand instructions each, so one string
 * costs the client less than an array of four integers. Each number is written whole
 * by `%d`, which Redis's Lua 5.1 converts through a 64-bit integer: Lua's own
 * number-to-string keeps 14 digits, and a limit may have more; `%.0f` writes the same
 * digits at two to three times the cost (glibc formats a double exactly). Every number
 * written is a whole number below 2^63: the limits' validation keeps a window under 2^53
 * ms, so an arrival time in µs stays under 2^63.
 */
export const GCRA = script(1, `${GCRA_STEP_LUA}local _, reply = step(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
return reply`)

/**
 * Several limits of one request, all or nothing, on the server's clock (`consumeLimits`):
 * see {@link LIMITS_LUA}. A rate's stored value is the one {@link GCRA} keeps, so a rate
 * limit is one state whichever of the two steps it. On Cluster every key must be in one
 * slot (the store checks).
 *
 * KEYS the limits' keys; ARGV five per step ({@link LIMITS_LUA}).
 * Returns 'taken' then 'allowed remaining resetMs retryAfterMs' per step, one string.
 */
export const LIMITS = script(VARIADIC, `${GCRA_STEP_LUA}${LIMITS_LUA}return (limits(1, #KEYS, 0))`)

/**
 * A hash as one JSON string of its flat [field, value, …] array (cjson), or nil when it has
 * no field: what `HGETALL` reads, at a fraction of the client's work (ioredis 6 decodes a
 * reply element by element, a few thousand instructions each; a user is some twenty).
 *
 * KEYS[1] the hash. An error of `HGETALL` (WRONGTYPE) is answered as `HGETALL` would answer
 * it, not as the script's own failure: the gate's guard tells the two apart (a script that
 * fails is refused data, a command that fails is the store failing).
 */
export const READ_HASH = script(1, `local raw = redis.pcall('HGETALL', KEYS[1])
if raw.err then return raw end
if #raw == 0 then return false end
return cjson.encode(raw)`)

/**
 * Gives back a step {@link GCRA} took and allowed: the arrival time moves back by the step's
 * cost, on the server's clock; a key whose arrival time is then not in the future is
 * deleted (its whole budget is free, as for a key never stepped). Steps taken on the key
 * since are kept: GCRA steps add up, so undoing one leaves the key as if only the others had
 * been taken. (Should the key have drained to empty and been stepped again since, the undo
 * frees one count of those newer steps: at most one count, in the client's favour.) Used by
 * the Cluster request lookup, which takes a step before it knows a token was revoked (see
 * `./cluster-lookup.ts`).
 *
 * KEYS[1] the rate key; ARGV limit, windowMs, cost (as the step had them).
 * Returns 1 when the key was moved back, 0 when it had no arrival time.
 */
export const GCRA_UNDO = script(
  1,
  `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = math.ceil(tonumber(ARGV[2]) * 1000 / tonumber(ARGV[1]))
local stored = tonumber(redis.call('GET', KEYS[1]) or '')
if not stored then return 0 end
local tat = stored - tonumber(ARGV[3]) * interval
if tat <= now then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.ceil((tat - now) / 1000)) end
return 1`,
)

/**
 * Gives back the limits a {@link LIMITS} step took and allowed, as {@link GCRA_UNDO} gives
 * back one rate step: each rate's arrival time moves back by its cost (deleted when no
 * longer in the future); each quota's counter, when it is the step's period or a later one,
 * goes down by its cost (its expiry kept). Used by the Cluster request lookup
 * (`./cluster-lookup.ts`).
 *
 * KEYS the limits' keys; ARGV five per step, as {@link LIMITS} had them. Returns 1.
 */
export const LIMITS_UNDO = script(
  VARIADIC,
  `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
for i = 1, #KEYS do
  local j = (i - 1) * 5
  local key = KEYS[i]
  local stored = redis.call('GET', key)
  if stored and ARGV[j + 1] == 'r' then
    local tat = tonumber(stored)
    if tat then
      tat = tat - tonumber(ARGV[j + 5]) * math.ceil(tonumber(ARGV[j + 3]) * 1000 / tonumber(ARGV[j + 2]))
      if tat <= now then redis.call('DEL', key) else redis.call('SET', key, string.format('%d', tat), 'PX', math.ceil((tat - now) / 1000)) end
    end
  elseif stored then
    local s, e, u = string.match(stored, '^(%d+) (%d+) (%d+)$')
    if s and tonumber(s) >= tonumber(ARGV[j + 3]) then
      local value = string.format('%d %d %d', tonumber(s), tonumber(e), math.max(0, tonumber(u) - tonumber(ARGV[j + 5])))
      local ttl = redis.call('PTTL', key)
      if ttl > 0 then redis.call('SET', key, value, 'PX', ttl) else redis.call('SET', key, value) end
    end
  end
end
return 1`,
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
 * Saves a user, its username and the skeleton of its username, unless the id or the
 * username exists. KEYS[1] the user, KEYS[2] the username → id hash, KEYS[3] the skeleton
 * → id hash; ARGV username, id, skeleton ('' for none), then the field pairs (with the
 * version `v`, see {@link LOOKUP_REQUEST}). Returns 1,
 * 0 when the id exists, -1 when the username does. (A skeleton two users share, which
 * only users saved before skeletons existed can, names the first of them.)
 */
export const CREATE_USER = script(
  3,
  `if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return -1 end
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
if ARGV[3] ~= '' then redis.call('HSETNX', KEYS[3], ARGV[3], ARGV[2]) end
return 1`,
)

/**
 * Gives a user saved before skeletons existed its skeleton, and indexes it. KEYS[1] the
 * user, KEYS[2] the skeleton → id hash; ARGV skeleton, id, the user's new version `v` (see
 * {@link LOOKUP_REQUEST}). Returns 1, or 0 when the user is gone.
 */
export const INDEX_SKELETON = script(
  2,
  `if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if not redis.call('HGET', KEYS[1], 'usernameSkeleton') then redis.call('HSET', KEYS[1], 'usernameSkeleton', ARGV[1], 'v', ARGV[3]) end
redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2])
return 1`,
)

/**
 * A user by username, in one round trip. KEYS[1] the username → id hash; ARGV username,
 * the user key prefix. Returns the flat hash as one JSON string (as {@link READ_HASH} does,
 * for the same reason), or nil.
 */
export const USER_BY_NAME = script(
  1,
  `local id = redis.call('HGET', KEYS[1], ARGV[1])
if not id then return false end
local raw = redis.call('HGETALL', ARGV[2] .. id)
if #raw == 0 then return false end
return cjson.encode(raw)`,
)

/**
 * Deletes a user and frees the username and its skeleton. KEYS[1] the user, KEYS[2] the
 * username → id hash, KEYS[3] the skeleton → id hash; ARGV id. Returns 1 when the user existed.
 */
export const DELETE_USER = script(
  3,
  `local name = redis.call('HGET', KEYS[1], 'username')
if not name then return 0 end
local skeleton = redis.call('HGET', KEYS[1], 'usernameSkeleton')
redis.call('DEL', KEYS[1])
if redis.call('HGET', KEYS[2], name) == ARGV[1] then redis.call('HDEL', KEYS[2], name) end
if skeleton and redis.call('HGET', KEYS[3], skeleton) == ARGV[1] then redis.call('HDEL', KEYS[3], skeleton) end
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
 * What the API key scripts share. One user's keys all live in the user's slot (hash tag
 * `{u:<userId>}`), under the prefix `P` = ARGV[1] (`<prefix>{u:<userId>}:`):
 * - `P key:<keyId>`: the key's hash, with `lname` (the name in lower case, for searching),
 *   `nkey` (the name as fixed-width hex of its UTF-16 code units, so that byte order is
 *   code-unit order) and, once revoked by `REVOKE_API_KEY`, `purgeAt`.
 * - Sorted sets, one per sort field, of all keys and of the active ones: `keys:c`/`keys:ca`
 *   by createdAt, `keys:l`/`keys:la` by lastUsedAt (none = 0), `keys:r`/`keys:ra` by
 *   revokedAt (none = 0), with the key id as member, so equal scores order by key id; and
 *   `keys:n`/`keys:na` by name, all scores 0, members `nkey .. '.' .. keyId` (lexical order).
 * - `keys:p`: revoked keys by purge time.
 * A page is a rank range of one set: its cost follows the page size, not the user's keys.
 */
const API_KEY_LUA = `local P = ARGV[1]
local function rec(id) return P .. 'key:' .. id end
local function set(name) return P .. 'keys:' .. name end
local function fields(raw)
  local h = {}
  for i = 1, #raw, 2 do h[raw[i]] = raw[i + 1] end
  return h
end
local function load(id)
  local raw = redis.call('HGETALL', rec(id))
  if #raw == 0 then return nil, raw end
  return fields(raw), raw
end
local function unindex(id, h)
  for _, s in ipairs({'c', 'ca', 'l', 'la', 'r', 'ra', 'p'}) do redis.call('ZREM', set(s), id) end
  if h and h.nkey then
    redis.call('ZREM', set('n'), h.nkey .. '.' .. id)
    redis.call('ZREM', set('na'), h.nkey .. '.' .. id)
  end
end
local function index(id, h)
  local used = h.lastUsedAt or '0'
  local name = h.nkey .. '.' .. id
  redis.call('ZADD', set('c'), h.createdAt, id)
  redis.call('ZADD', set('l'), used, id)
  redis.call('ZADD', set('r'), h.revokedAt or '0', id)
  redis.call('ZADD', set('n'), 0, name)
  if not h.revokedAt then
    redis.call('ZADD', set('ca'), h.createdAt, id)
    redis.call('ZADD', set('la'), used, id)
    redis.call('ZADD', set('ra'), 0, id)
    redis.call('ZADD', set('na'), 0, name)
  elseif h.purgeAt then
    redis.call('ZADD', set('p'), h.purgeAt, id)
  end
end
-- Deletes up to n keys whose purge time is at or before now.
local function purge(now, n)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', set('p'), '-inf', now, 'LIMIT', 0, n)) do
    unindex(id, load(id))
    redis.call('DEL', rec(id))
  end
end
`

function apiKeyScript(lua: string): RedisScript {
  return script(1, API_KEY_LUA + lua)
}

/**
 * Saves a new key, and with limits refuses it atomically when an active key of the user
 * has its name or a cap is reached; purges up to 100 keys past their purge time first.
 * KEYS[1] the user's `keys:c`; ARGV P, now, maxActive ('' for no limits), maxTotal, keyId,
 * then field, value pairs (with lname, nkey and the version `v`, see {@link LOOKUP_REQUEST}).
 * Returns 'created', 'exists', 'name-taken', 'active-limit' or 'total-limit'.
 */
export const CREATE_API_KEY = apiKeyScript(
  `local now = ARGV[2]
local id = ARGV[5]
purge(now, 100)
if redis.call('EXISTS', rec(id)) == 1 then return 'exists' end
local h = fields({unpack(ARGV, 6)})
if ARGV[3] ~= '' then
  if #redis.call('ZRANGEBYLEX', set('na'), '[' .. h.nkey .. '.', '(' .. h.nkey .. '/', 'LIMIT', 0, 1) > 0 then return 'name-taken' end
  if redis.call('ZCARD', set('ca')) >= tonumber(ARGV[3]) then return 'active-limit' end
  local total = redis.call('ZCARD', set('c')) - redis.call('ZCOUNT', set('p'), '-inf', now)
  if total >= tonumber(ARGV[4]) then return 'total-limit' end
end
redis.call('HSET', rec(id), unpack(ARGV, 6))
index(id, h)
return 'created'`,
)

/**
 * Applies a patch to a key and moves it in the user's sorted sets to match.
 * KEYS[1] the user's `keys:c`; ARGV P, keyId, number of pairs to set, the pairs, then the
 * fields to delete (the pairs carry a new version `v`, see {@link LOOKUP_REQUEST}). Returns
 * the new hash as a flat array, or nil when there is no such key.
 */
export const PATCH_API_KEY = apiKeyScript(
  `local id = ARGV[2]
local h = load(id)
if not h then return false end
unindex(id, h)
local n = tonumber(ARGV[3])
if n > 0 then redis.call('HSET', rec(id), unpack(ARGV, 4, 3 + 2 * n)) end
if #ARGV > 3 + 2 * n then redis.call('HDEL', rec(id), unpack(ARGV, 4 + 2 * n)) end
local after, raw = load(id)
index(id, after)
return raw`,
)

/**
 * Revokes a key if it is not revoked yet (a compare-and-set), to be purged at purgeAt; the
 * hash expires by itself a day later, should the user never come back.
 * KEYS[1] the user's `keys:c`; ARGV P, keyId, at, purgeAt, expireAtMs, the key's new
 * version `v` (see {@link LOOKUP_REQUEST}).
 * Returns the new hash as a flat array, or nil when unknown or revoked already.
 */
export const REVOKE_API_KEY = apiKeyScript(
  `local id = ARGV[2]
local h = load(id)
if not h or h.revokedAt then return false end
unindex(id, h)
redis.call('HSET', rec(id), 'revokedAt', ARGV[3], 'purgeAt', ARGV[4], 'v', ARGV[6])
redis.call('PEXPIREAT', rec(id), ARGV[5])
local after, raw = load(id)
index(id, after)
return raw`,
)

/**
 * One page of a user's keys: the rank range after the seek key in one sorted set, each
 * key's hash read; with a search, keys are read in order until the page is full or
 * scanMax keys were looked at. Purges up to 100 keys past their purge time first. A
 * member whose hash is gone (expired) is skipped and dropped.
 * KEYS[1] the user's `keys:c`; ARGV P, now, set name, 'asc'|'desc', limit, seek keyId (''
 * for none), the seek key's score field ('' for a name set), search (lower case, '' for
 * none), search as sent (matches a key id), scanMax.
 * Returns an array of flat hashes.
 */
export const LIST_API_KEYS = apiKeyScript(
  `purge(ARGV[2], 100)
local s = set(ARGV[3])
local byName = ARGV[3] == 'n' or ARGV[3] == 'na'
local desc = ARGV[4] == 'desc'
local limit = tonumber(ARGV[5])
local search, exact, scanMax = ARGV[8], ARGV[9], tonumber(ARGV[10])
local start = 0
if ARGV[6] ~= '' then
  local a = load(ARGV[6])
  if not a then return {} end
  local member, score = ARGV[6], 0
  if byName then member = a.nkey .. '.' .. ARGV[6] else score = a[ARGV[7]] or '0' end
  -- Where the seek key is, or would be: put it in for the rank, take it out again.
  local added = redis.call('ZADD', s, 'NX', score, member)
  local rank
  if desc then rank = redis.call('ZREVRANK', s, member) else rank = redis.call('ZRANK', s, member) end
  if added == 1 then redis.call('ZREM', s, member) end
  start = rank + 1
end
local out, gone, scanned = {}, {}, 0
local chunk = limit
if search ~= '' then chunk = 100 end
while #out < limit do
  local members
  if desc then members = redis.call('ZREVRANGE', s, start, start + chunk - 1) else members = redis.call('ZRANGE', s, start, start + chunk - 1) end
  if #members == 0 then break end
  start = start + #members
  for _, member in ipairs(members) do
    local id = member
    if byName then id = string.sub(member, string.find(member, '.', 1, true) + 1) end
    local found = true
    if search ~= '' then
      scanned = scanned + 1
      local lname = redis.call('HGET', rec(id), 'lname')
      if not lname then found = nil; gone[#gone + 1] = member
      elseif id ~= exact and not string.find(lname, search, 1, true) then found = false end
    end
    if found then
      local raw = redis.call('HGETALL', rec(id))
      if #raw == 0 then gone[#gone + 1] = member else out[#out + 1] = raw end
      if #out == limit then break end
    end
    if search ~= '' and scanned >= scanMax then break end
  end
  if search ~= '' and scanned >= scanMax then break end
end
for _, member in ipairs(gone) do redis.call('ZREM', s, member) end
return out`,
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

/**
 * The store work of one authenticated request in one round trip (`lookupRequest`): a GCRA
 * step (the arithmetic of {@link GCRA}), or several limits all or nothing (that of
 * {@link LIMITS}), and the credential's records, in the order `RequestLookup` describes.
 * Single-node Redis only: it reads the user (and an API key's hash) under keys it builds
 * from what it read, which Cluster may keep on another node (there `./cluster-lookup.ts`
 * sends the same work as concurrent commands).
 *
 * The client keeps the records it has seen (`./record-copies.ts`) and says which copy it
 * holds; the script reads on every request what decides the request, and sends a record
 * whole only when the client's copy is not the record as it is now:
 * - a token: `HMGET revokedAt expiresAt userId` (and appToken with the token's budget), on
 *   which liveness and the app token are decided as before. Nothing of a token but
 *   revokedAt changes after its insert (`CREATE`; `SET_ONCE` sets revokedAt), and its hash
 *   expires at its expiresAt (a token of the same hash, the same secret, inserted later
 *   would expire later): a hash with the copy's expiresAt is the record the copy was made of,
 *   but for revokedAt, which the reply carries.
 * - an API key: `HMGET v revokedAt userId secretHash`. Every write of the key's hash by
 *   this release sets a new random version `v` in the same script; the secret is compared
 *   too, so a secret changed by a release that knows nothing of `v` is never missed.
 * - a user: `HMGET v updatedAt`. Every write of the user's hash sets a new `v` in the same
 *   script; `updatedAt` (which every change through the gate's management sets) is compared
 *   too, for writes by a release that knows nothing of `v`.
 * A hash without `v` (written before it existed) is always sent whole: no migration.
 * Reading a hash whole (`HGETALL`, some 24,000 instructions) and cjson of it (34,000) were
 * most of what a request cost the server; a few fields are a fraction of that.
 *
 * What a script pays is mostly per argument (about 1,000 instructions each), per command
 * (a field of `HMGET` some 2,000) and per `tonumber` (2,000): so the arguments are few, a
 * token's expiry is compared as a string when the client's copy has it (the client decided
 * on the same number), and the closures and tables are few.
 *
 * KEYS[1] the credential's key (`token:{hash}`, `keyowner:{keyId}` or the user's hash);
 * then, for one rate step, KEYS[2] its rate key and, with the token's budget and a step for
 * a token that is not live, KEYS[3] that step's rate key; for limits, the step's limits'
 * keys, then those of a token that is not live.
 * ARGV mode ('t' a token with a fixed budget, 'T' with the token's budget, 'k' an API key,
 * 'u' a user), the key prefix, now (ms, the gate's clock: a token's expiry is the gate's
 * decision; for a key, the key id), the app token a live token must have (mode 'T', '' for
 * any; for a key, the copy's secretHash), the client's copy of the record (a token's
 * expiresAt when the copy is live at now by it; a key's v; '' for none), of the user (v,
 * updatedAt; '' for none); then for one rate step limit, windowMs, cost of the step and of
 * the other step (none for none); for limits 'L', how many limits the step has, how many
 * the other step has ('' for none), and five arguments per limit ({@link LIMITS_LUA}).
 *
 * Returns one string: three flags, the step taken ('0' none, '1' the step, '2' the other
 * step), the record and the user each '0' not read, '-' there is none, '=' the client's copy
 * is it, '+' sent whole; a space, a token's revokedAt ('-' for none; for a copy the client
 * holds); a space, the step's reply as {@link GCRA} (or {@link LIMITS}) gives it ('' for
 * none); then, when something is sent whole, a newline and the JSON (cjson) array of the
 * flat hashes sent, record first. One string rather than nested arrays: ioredis 6 decodes a
 * reply element by element, at a few thousand instructions each.
 */
export const LOOKUP_REQUEST = lookupScript(false)

/** {@link LOOKUP_REQUEST} with several limits (`limits`): the same, with {@link LIMITS_LUA}'s step. */
export const LOOKUP_REQUEST_LIMITS = lookupScript(true)

function lookupScript(several: boolean): RedisScript {
  const take = several
    ? `local function take(other)
  local n = tonumber(ARGV[9])
  local reply, taken
  if other then reply, taken = limits(2 + n, tonumber(ARGV[10]), 10 + n * 5) else reply, taken = limits(2, n, 10) end
  return taken, reply
end
local hasOther = ARGV[10] ~= ''
`
    : `local function take(other)
  if other then return step(KEYS[3], ARGV[11], ARGV[12], ARGV[13]) end
  return step(KEYS[2], ARGV[8], ARGV[9], ARGV[10])
end
local hasOther = ARGV[11] ~= nil
`
  return script(
    VARIADIC,
    `${GCRA_STEP_LUA}${several ? LIMITS_LUA : ''}${take}local mode, P = ARGV[1], ARGV[2]
local whole
-- Sends a hash whole: its flag.
local function send(key)
  local raw = redis.call('HGETALL', key)
  if #raw == 0 then return '-' end
  if whole then whole[#whole + 1] = raw else whole = {raw} end
  return '+'
end
local function user(key)
  local r = redis.call('HMGET', key, 'v', 'updatedAt')
  if r[1] and r[1] == ARGV[6] and r[2] == ARGV[7] then return '=' end
  return send(key)
end
local function reply(stepped, stepReply, record, usr, revokedAt)
  local head = stepped .. record .. usr .. ' ' .. (revokedAt or '-') .. ' ' .. stepReply
  if whole then return head .. '\\n' .. cjson.encode(whole) end
  return head
end
-- A token: its flag, whether it is live, its userId, its appToken (mode 'T'), its revokedAt.
-- A token's hash never changes after its insert but for revokedAt, and lives until its
-- expiresAt: a hash of that name with the copy's expiresAt is the record the copy was made of.
local function token()
  local r
  if mode == 'T' then r = redis.call('HMGET', KEYS[1], 'revokedAt', 'expiresAt', 'userId', 'appToken')
  else r = redis.call('HMGET', KEYS[1], 'revokedAt', 'expiresAt', 'userId') end
  if not r[3] then return '-', false end
  if r[2] == ARGV[5] then return '=', not r[1], r[3], r[4], r[1] end
  return send(KEYS[1]), not r[1] and tonumber(r[2]) > tonumber(ARGV[3]), r[3], r[4], r[1]
end
if mode == 'T' then
  local flag, live, id, app, revokedAt = token()
  if live then
    if ARGV[4] ~= '' and app ~= ARGV[4] then return reply('0', '', flag, '0', revokedAt) end
    local allowed, s = take(false)
    if allowed == 0 then return reply('1', s, flag, '0', revokedAt) end
    return reply('1', s, flag, user(P .. '{users}:user:' .. id), revokedAt)
  end
  if not hasOther then return reply('0', '', flag, '0', revokedAt) end
  local _, s = take(true)
  return reply('2', s, flag, '0', revokedAt)
end
local allowed, s = take(false)
if allowed == 0 then return reply('1', s, '0', '0') end
if mode == 'u' then return reply('1', s, '0', user(KEYS[1])) end
if mode == 't' then
  local flag, live, id, _, revokedAt = token()
  if live then return reply('1', s, flag, user(P .. '{users}:user:' .. id), revokedAt) end
  return reply('1', s, flag, '0', revokedAt)
end
-- An API key: every write of its hash sets a new version v; its secret is compared too (see above).
local owner = redis.call('GET', KEYS[1])
if not owner then return reply('1', s, '-', '0') end
local key = P .. '{u:' .. owner .. '}:key:' .. ARGV[3]
local k = redis.call('HMGET', key, 'v', 'revokedAt', 'userId', 'secretHash')
if not k[3] then return reply('1', s, '-', '0') end
local flag = '='
if not k[1] or k[1] ~= ARGV[5] or k[4] ~= ARGV[4] then flag = send(key) end
if k[2] then return reply('1', s, flag, '0') end
return reply('1', s, flag, user(P .. '{users}:user:' .. k[3]))`,
  )
}
