/**
 * The index of the applications each user registered, for {@link RedisStore}: a sorted set
 * per owner, `<prefix>{u:<ownerId>}:apps` (member the app token, score its creation time),
 * in the owner's slot beside their API keys. Applications themselves live in the `{apps}`
 * slot, so an owner's registration is two steps, each atomic on its own slot:
 *
 * 1. claim a place in the owner's set (`CLAIM`: the cap is checked and the member added
 *    in one script, so racing registrations cannot pass the cap together);
 * 2. save the application (`CREATE_INDEXED`), or give the place back when that fails.
 *
 * A process that dies between the two leaves a place with no application; a listing skips
 * it, and a registration refused for the cap drops such places once they are older than
 * {@link STALE_CLAIM_MS} (a younger one may be a registration still in flight), then tries
 * once more.
 */
import { createHash } from 'node:crypto'
import type { RedisScript } from './scripts.js'

function script(keys: number, lua: string): RedisScript {
  return { lua, sha: createHash('sha1').update(lua).digest('hex'), keys }
}

/** How old a place in an owner's set must be before a refused registration may drop it as left behind by a crash. */
export const STALE_CLAIM_MS = 60_000

/**
 * Claims a place in an owner's set. KEYS[1] the set; ARGV score, app token, the cap (''
 * for none). Returns 1 when claimed, 0 when the owner is at the cap.
 */
export const CLAIM = script(
  1,
  `if ARGV[3] ~= '' and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
return 1`,
)

/**
 * Deletes an application and its entry in the index of all applications, and says whose
 * it was. KEYS[1] the record, KEYS[2] the index; ARGV app token. Returns {1 or 0, owner
 * id or ''}.
 */
export const DELETE_APPLICATION = script(
  2,
  `local owner = redis.call('HGET', KEYS[1], 'ownerId') or ''
local n = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return {n, owner}`,
)

/** The key of an owner's set. */
export function ownerAppsKey(prefix: string, ownerId: string): string {
  return `${prefix}{u:${ownerId}}:apps`
}
