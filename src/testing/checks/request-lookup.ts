/**
 * The optional `lookupRequest` capability ({@link RequestLookupStore}): one round trip that
 * answers what the separate calls (`consumeRate`, `getAccessToken` or `getApiKey`, then
 * `getUser`) would have answered, in the order the contract gives, for every credential
 * kind and both budgets. Each answer is compared with the separate calls made on the same
 * store: the records with the store's own `get*` answers, the rate step with a step on a
 * second fresh key in the same state.
 *
 * Every credential is looked up in each state twice over: at first sight, and after the
 * store saw it live (then revoked, expired, its user deleted, ...), for a store that
 * remembers what never changes about a credential (RedisStore on Cluster does, to send a
 * request's commands to their nodes at once) must still read every record.
 *
 * A store without the capability (it is optional: MemoryStore has none) skips these
 * checks, with the reason: the gate then makes the separate calls, which the other checks
 * cover.
 */
import assert from 'node:assert/strict'
import type { RateResult } from '../../limits/gcra.js'
import type { RequestLookup, RequestLookupResult, RateStep } from '../../store/contract/request-lookup.js'
import type { GateStore } from '../../store/store.js'
import { isLiveAccessToken } from '../../store/contract/oauth.js'
import type { StoreCheck } from '../check.js'
import { accessToken, apiKey, freshAppToken, freshHash, freshKeyId, freshRateKey, freshUserId, LATER, user } from '../fixtures.js'

type LookupStore = GateStore & { lookupRequest: NonNullable<GateStore['lookupRequest']> }

const WINDOW_MS = 60_000

/** A fresh rate step of `limit` per minute. */
const step = (limit = 10): RateStep => ({ key: freshRateKey(), limit, windowMs: WINDOW_MS, cost: 1 })

/** Why a store skips the checks, or `undefined` when it has the capability. */
function withoutLookup(store: GateStore): string | undefined {
  return typeof store.lookupRequest === 'function' ? undefined : 'the store does not implement the optional lookupRequest: the gate makes the separate calls'
}

/**
 * Asserts `got` is the step `consumeRate` takes on a fresh key in the same state as
 * `taken` was (`spent` steps taken before), and that the lookup's step was kept: the next
 * step on `taken` answers as the next one on the reference key.
 */
async function assertStepLike(store: GateStore, taken: RateStep, got: RateResult | null, spent: number, what: string): Promise<void> {
  assert.ok(got !== null, `${what}: the lookup took a step`)
  const reference = freshRateKey()
  for (let i = 0; i < spent; i++) await store.consumeRate(reference, taken.limit, taken.windowMs, taken.cost)
  const expected = await store.consumeRate(reference, taken.limit, taken.windowMs, taken.cost)
  assertRate(got, expected, `${what}: the lookup's step`)
  const nextExpected = await store.consumeRate(reference, taken.limit, taken.windowMs, taken.cost)
  const next = await store.consumeRate(taken.key, taken.limit, taken.windowMs, taken.cost)
  assertRate(next, nextExpected, `${what}: the step after the lookup's (the lookup's step must be kept)`)
}

/** Rate results agree: allowed and remaining exactly, times within the second two calls apart may take. */
function assertRate(got: RateResult, expected: RateResult, what: string): void {
  assert.equal(got.allowed, expected.allowed, `${what}: allowed`)
  assert.equal(got.remaining, expected.remaining, `${what}: remaining`)
  assert.ok(Math.abs(got.resetMs - expected.resetMs) <= 1_000, `${what}: resetMs ${got.resetMs}, the separate step says ${expected.resetMs}`)
  assert.ok(Math.abs(got.retryAfterMs - expected.retryAfterMs) <= 1_000, `${what}: retryAfterMs ${got.retryAfterMs}, the separate step says ${expected.retryAfterMs}`)
}

/** Spends a step's whole budget, so that the next step is refused. */
async function spend(store: GateStore, rate: RateStep): Promise<void> {
  for (let i = 0; i < rate.limit; i++) await store.consumeRate(rate.key, rate.limit, rate.windowMs, rate.cost)
}

/** The fields of a result that say which records were read, with what they hold. */
function reads(result: RequestLookupResult): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const field of ['accessToken', 'apiKey', 'user'] as const) if (field in result) out[field] = result[field]
  return out
}

/**
 * A live token of a saved user, a revoked one, an expired one, one of a user that never was
 * and an unknown hash; and tokens the store looked up while they were live, then revoked,
 * expired, or whose user was deleted.
 */
async function tokens(store: LookupStore) {
  const owner = user(freshUserId())
  await store.insertUser(owner)
  const appToken = freshAppToken()
  const make = async (overrides: Parameters<typeof accessToken>[1]) => {
    const hash = freshHash()
    await store.insertAccessToken(accessToken(hash, { userId: owner.id, appToken, ...overrides }))
    return hash
  }
  const live = await make({})
  const revoked = await make({})
  await store.revokeAccessToken(revoked, LATER)
  // Expired by the gate's clock (the lookup's `now`, a minute ahead), while the store still keeps it.
  const expired = await make({ expiresAt: Date.now() + 30_000 })
  const orphan = await make({ userId: freshUserId() })
  /** A token looked up once while live, with a fixed budget (on a rate key of its own). */
  const seen = async (overrides: Parameters<typeof accessToken>[1]) => {
    const hash = await make(overrides)
    await lookup(store, { credential: { kind: 'accessToken', tokenHash: hash, now: Date.now() }, budget: 'fixed', rate: step() })
    return hash
  }
  const liveSeen = await seen({})
  const revokedSeen = await seen({})
  await store.revokeAccessToken(revokedSeen, LATER)
  const expiredSeen = await seen({ expiresAt: Date.now() + 30_000 })
  const doomed = user(freshUserId())
  await store.insertUser(doomed)
  const orphanSeen = await seen({ userId: doomed.id })
  await store.deleteUser(doomed.id)
  return { owner, appToken, live, revoked, expired, orphan, unknown: freshHash(), liveSeen, revokedSeen, expiredSeen, orphanSeen }
}

/** The gate's clock for the token checks: a minute ahead, past the expired token's expiry. */
const gateNow = (): number => Date.now() + 60_000

const lookup = (store: LookupStore, request: RequestLookup): Promise<RequestLookupResult> => Promise.resolve(store.lookupRequest(request))

/** What the separate calls read for a token: the token, then its user when the token is live at `now`. */
async function tokenReads(store: GateStore, hash: string, now: number, withUser = true): Promise<Record<string, unknown>> {
  const record = await store.getAccessToken(hash)
  const out: Record<string, unknown> = { accessToken: record }
  if (withUser && isLiveAccessToken(record, now)) out.user = await store.getUser(record.userId)
  return out
}

const checks: ReadonlyArray<readonly [string, (store: LookupStore) => Promise<void>]> = [
  [
    "answers an access token with a fixed budget as the step, then the token and its user, would: live, revoked, expired, unknown, a user that is gone, at first sight or seen live before",
    async (store) => {
      const t = await tokens(store)
      const states = {
        live: t.live,
        revoked: t.revoked,
        expired: t.expired,
        unknown: t.unknown,
        'of a deleted user': t.orphan,
        'live, seen before': t.liveSeen,
        'revoked after it was seen': t.revokedSeen,
        'expired after it was seen': t.expiredSeen,
        'of a user deleted after it was seen': t.orphanSeen,
      }
      for (const [name, hash] of Object.entries(states)) {
        const rate = step()
        const now = gateNow()
        const found = await lookup(store, { credential: { kind: 'accessToken', tokenHash: hash, now }, budget: 'fixed', rate })
        assert.equal(found.stepped, 'rate', `a ${name} token: the fixed step is taken`)
        await assertStepLike(store, rate, found.result, 0, `a ${name} token`)
        assert.deepEqual(reads(found), await tokenReads(store, hash, now), `a ${name} token: the records read`)
      }
    },
  ],
  [
    'reads nothing when a fixed budget refuses the request',
    async (store) => {
      const t = await tokens(store)
      const keyOwner = user(freshUserId())
      await store.insertUser(keyOwner)
      const keyId = freshKeyId()
      await store.insertApiKey(apiKey(keyId, keyOwner.id))
      const credentials = [
        { kind: 'accessToken', tokenHash: t.live, now: gateNow() },
        { kind: 'apiKey', keyId },
        { kind: 'user', userId: t.owner.id },
      ] as const
      for (const credential of credentials) {
        const rate = step(2)
        await spend(store, rate)
        const found = await lookup(store, { credential, budget: 'fixed', rate })
        assert.equal(found.stepped, 'rate', `${credential.kind}: the step is taken`)
        await assertStepLike(store, rate, found.result, 2, `${credential.kind} over its budget`)
        assert.deepEqual(reads(found), {}, `${credential.kind} over its budget: no record is read`)
      }
    },
  ],
  [
    "answers an access token with the token's budget: a live token takes the step and reads its user, any other takes the other step or none, at first sight or seen live before",
    async (store) => {
      const t = await tokens(store)
      const now = gateNow()
      for (const [name, hash] of Object.entries({ live: t.live, 'live, seen before': t.liveSeen })) {
        const live = step()
        const found = await lookup(store, { credential: { kind: 'accessToken', tokenHash: hash, now }, budget: 'token', rate: live, otherwise: step(), appToken: t.appToken })
        assert.equal(found.stepped, 'rate', `a ${name} token of the application takes the step`)
        await assertStepLike(store, live, found.result, 0, `a ${name} token`)
        assert.deepEqual(reads(found), await tokenReads(store, hash, now), `a ${name} token: the token and its user`)
      }

      const any = step()
      const anyApp = await lookup(store, { credential: { kind: 'accessToken', tokenHash: t.live, now }, budget: 'token', rate: any, otherwise: null })
      assert.equal(anyApp.stepped, 'rate', 'a live token takes the step when no application is required')
      await assertStepLike(store, any, anyApp.result, 0, 'a live token, any application')

      const notLive = { revoked: t.revoked, expired: t.expired, unknown: t.unknown, 'revoked after it was seen': t.revokedSeen, 'expired after it was seen': t.expiredSeen }
      for (const [name, hash] of Object.entries(notLive)) {
        const rate = step()
        const otherwise = step(3)
        const other = await lookup(store, { credential: { kind: 'accessToken', tokenHash: hash, now }, budget: 'token', rate, otherwise, appToken: t.appToken })
        assert.equal(other.stepped, 'otherwise', `a ${name} token takes the other step`)
        await assertStepLike(store, otherwise, other.result, 0, `a ${name} token's other step`)
        assert.equal((await store.consumeRate(rate.key, rate.limit, rate.windowMs, rate.cost)).remaining, rate.limit - 1, `a ${name} token leaves the token's step untouched`)
        assert.deepEqual(reads(other), await tokenReads(store, hash, now), `a ${name} token: the token read, no user`)

        const none = await lookup(store, { credential: { kind: 'accessToken', tokenHash: hash, now }, budget: 'token', rate: step(), otherwise: null })
        assert.equal(none.stepped, null, `a ${name} token with no other step takes none`)
        assert.equal(none.result, null)
        assert.deepEqual(reads(none), await tokenReads(store, hash, now), `a ${name} token with no other step: the token read`)

        // One step under both names, as the gate asks when the request named its application.
        const both = step()
        const once = await lookup(store, { credential: { kind: 'accessToken', tokenHash: hash, now }, budget: 'token', rate: both, otherwise: both, appToken: t.appToken })
        assert.equal(once.stepped, 'otherwise', `a ${name} token, one step under both names: the other step`)
        await assertStepLike(store, both, once.result, 0, `a ${name} token, one step under both names (taken once)`)
      }
    },
  ],
  [
    "takes no step for a live token of another application, and reads no user when the token's budget refuses, at first sight or seen live before",
    async (store) => {
      const t = await tokens(store)
      const now = gateNow()
      const rate = step()
      const otherwise = step()
      for (const [name, hash] of Object.entries({ live: t.live, 'live, seen before': t.liveSeen })) {
        const foreign = await lookup(store, { credential: { kind: 'accessToken', tokenHash: hash, now }, budget: 'token', rate, otherwise, appToken: freshAppToken() })
        assert.equal(foreign.stepped, null, `a ${name} token of another application takes no step`)
        assert.equal(foreign.result, null)
        assert.deepEqual(reads(foreign), { accessToken: await store.getAccessToken(hash) }, `a ${name} token of another application: the token read, no user`)
      }
      for (const key of [rate, otherwise]) assert.equal((await store.consumeRate(key.key, key.limit, key.windowMs, key.cost)).remaining, key.limit - 1, 'neither step was taken')

      // Revoked since it was seen live: not live, whatever its application, so the other step.
      const other = step()
      const revoked = await lookup(store, { credential: { kind: 'accessToken', tokenHash: t.revokedSeen, now }, budget: 'token', rate: step(), otherwise: other, appToken: freshAppToken() })
      assert.equal(revoked.stepped, 'otherwise', 'a token of another application revoked after it was seen takes the other step')
      await assertStepLike(store, other, revoked.result, 0, 'a token of another application revoked after it was seen')

      const spent = step(2)
      await spend(store, spent)
      const refused = await lookup(store, { credential: { kind: 'accessToken', tokenHash: t.live, now }, budget: 'token', rate: spent, otherwise: step(), appToken: t.appToken })
      assert.equal(refused.stepped, 'rate')
      await assertStepLike(store, spent, refused.result, 2, "a live token over its budget")
      assert.deepEqual(reads(refused), { accessToken: await store.getAccessToken(t.live) }, 'over its budget: the token read, no user')
      // Seen before and revoked since, over the other budget: that step refuses, nothing else is taken.
      const spentOther = step(2)
      await spend(store, spentOther)
      const tokenStep = step()
      const refusedOther = await lookup(store, { credential: { kind: 'accessToken', tokenHash: t.revokedSeen, now }, budget: 'token', rate: tokenStep, otherwise: spentOther, appToken: t.appToken })
      assert.equal(refusedOther.stepped, 'otherwise')
      await assertStepLike(store, spentOther, refusedOther.result, 2, 'a token revoked after it was seen, over the other budget')
      assert.equal((await store.consumeRate(tokenStep.key, tokenStep.limit, tokenStep.windowMs, tokenStep.cost)).remaining, tokenStep.limit - 1, "a token revoked after it was seen leaves the token's step untouched")
    },
  ],
  [
    'answers an API key as the step, then the key and its user, would: live, revoked, unknown, a user that is gone, at first sight or seen live before',
    async (store) => {
      const owner = user(freshUserId())
      await store.insertUser(owner)
      const key = async (userId: string, seen = false) => {
        const keyId = freshKeyId()
        await store.insertApiKey(apiKey(keyId, userId))
        if (seen) await lookup(store, { credential: { kind: 'apiKey', keyId }, budget: 'fixed', rate: step() })
        return keyId
      }
      const live = await key(owner.id)
      const revoked = await key(owner.id)
      const orphan = await key(freshUserId())
      await store.revokeApiKey(revoked, LATER, Date.now() + 3_600_000)
      const liveSeen = await key(owner.id, true)
      const revokedSeen = await key(owner.id, true)
      await store.revokeApiKey(revokedSeen, LATER, Date.now() + 3_600_000)
      // Revoked with its purge time past, then purged by a listing (where the store purges).
      const purgedSeen = await key(owner.id, true)
      await store.revokeApiKey(purgedSeen, Date.now() - 2, Date.now() - 1)
      await store.listApiKeys(owner.id, { limit: 10, sortBy: 'createdAt', order: 'asc', includeRevoked: true })
      const doomed = user(freshUserId())
      await store.insertUser(doomed)
      const orphanSeen = await key(doomed.id, true)
      await store.deleteUser(doomed.id)
      const states = {
        live,
        revoked,
        unknown: freshKeyId(),
        'of a deleted user': orphan,
        'live, seen before': liveSeen,
        'revoked after it was seen': revokedSeen,
        'purged after it was seen': purgedSeen,
        'of a user deleted after it was seen': orphanSeen,
      }
      for (const [name, keyId] of Object.entries(states)) {
        const rate = step()
        const found = await lookup(store, { credential: { kind: 'apiKey', keyId }, budget: 'fixed', rate })
        assert.equal(found.stepped, 'rate', `a ${name} key: the step is taken`)
        await assertStepLike(store, rate, found.result, 0, `a ${name} key`)
        const record = await store.getApiKey(keyId)
        const expected: Record<string, unknown> = { apiKey: record }
        if (record !== undefined && record.revokedAt === null) expected.user = await store.getUser(record.userId)
        assert.deepEqual(reads(found), expected, `a ${name} key: the records read`)
      }
    },
  ],
  [
    'answers a user as the step, then the user, would: present, gone',
    async (store) => {
      const present = user(freshUserId())
      await store.insertUser(present)
      for (const [name, userId] of Object.entries({ present: present.id, gone: freshUserId() })) {
        const rate = step()
        const found = await lookup(store, { credential: { kind: 'user', userId }, budget: 'fixed', rate })
        assert.equal(found.stepped, 'rate', `a user ${name}: the step is taken`)
        await assertStepLike(store, rate, found.result, 0, `a user ${name}`)
        assert.deepEqual(reads(found), { user: await store.getUser(userId) }, `a user ${name}: the user read`)
      }
    },
  ],
]

export const requestLookupChecks: readonly StoreCheck[] = checks.map(([name, run]) => ({
  group: 'request lookup (optional)',
  name,
  slices: ['users', 'apiKeys', 'oauth', 'rates'],
  skip: withoutLookup,
  run: (store: GateStore) => run(store as LookupStore),
}))
