/**
 * `lookupRequest` with several limits (a plan) instead of one rate step: a store that has
 * both `lookupRequest` and `consumeLimits` must honour `limits` and `otherwiseLimits` (the
 * gate sends them only to such a store). The limits are taken all or nothing, as
 * `consumeLimits` takes them, and the records are read as with one rate step: only when
 * every limit allowed. A store without both skips these checks, with the reason.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { LimitStep } from '../../limits/limit-steps.js'
import { limitRateKey } from '../../limits/rate-keys.js'
import type { LimitsLookup, RequestLookup, RequestLookupResult } from '../../store/contract/request-lookup.js'
import type { GateStore } from '../../store/store.js'
import type { StoreCheck } from '../check.js'
import { accessToken, apiKey, freshAppToken, freshHash, freshKeyId, freshUserId, LATER, user } from '../fixtures.js'

type Store = GateStore & { lookupRequest: NonNullable<GateStore['lookupRequest']>; consumeLimits: NonNullable<GateStore['consumeLimits']> }

const HOUR_MS = 3_600_000

function withoutBoth(store: GateStore): string | undefined {
  if (typeof store.lookupRequest !== 'function') return 'the store does not implement the optional lookupRequest'
  return typeof store.consumeLimits === 'function' ? undefined : 'the store does not implement the optional consumeLimits: the gate sends no lookup of several limits'
}

/** A plan of one subject: a rate of `rate` per hour and a quota of `quota` this hour. */
function plan(rate: number, quota: number): LimitStep[] {
  const subject = `odg-kit:plan-${randomBytes(8).toString('hex')}`
  const start = Date.now() - HOUR_MS / 2
  return [
    { kind: 'rate', key: limitRateKey(subject, 'hour'), limit: rate, windowMs: HOUR_MS, cost: 1 },
    { kind: 'quota', key: limitRateKey(subject, 'day'), limit: quota, periodStart: start, periodEnd: start + HOUR_MS, cost: 1 },
  ]
}

const lookup = (store: GateStore, request: RequestLookup): Promise<RequestLookupResult> => Promise.resolve((store as Store).lookupRequest(request))
const left = async (store: GateStore, steps: readonly LimitStep[]): Promise<number[]> => (await (store as Store).consumeLimits(steps.map((step) => ({ ...step, cost: 0 })))).map((r) => r.remaining)

function check(name: string, run: (store: GateStore) => Promise<void>): StoreCheck {
  return { group: 'request lookup with several limits (optional)', name, slices: ['rates', 'users', 'apiKeys', 'oauth'], skip: withoutBoth, run }
}

export const requestLookupLimitChecks: readonly StoreCheck[] = [
  check("takes a user's limits all or nothing, and reads the user only when every limit allows", async (store) => {
    const owner = user(freshUserId())
    await store.insertUser(owner)
    const limits = plan(5, 1)
    const credential = { kind: 'user', userId: owner.id } as const
    const first = await lookup(store, { credential, budget: 'fixed', limits })
    assert.equal(first.stepped, 'rate')
    assert.deepEqual(first.results?.map((r) => [r.allowed, r.remaining]), [[true, 4], [true, 0]], 'every limit taken, each with its own result')
    assert.equal(first.result?.allowed, true, 'the summary says the step was taken')
    assert.deepEqual(first.user, await store.getUser(owner.id), 'the user, read as getUser reads it')
    const second = await lookup(store, { credential, budget: 'fixed', limits })
    assert.deepEqual(second.results?.map((r) => r.allowed), [true, false], 'the used-up quota refuses')
    assert.equal(second.result?.allowed, false, 'the summary is the refused limit')
    assert.equal(second.result?.retryAfterMs, second.results?.[1]?.retryAfterMs)
    assert.ok(!('user' in second), 'no user read for a refused step')
    assert.deepEqual(await left(store, limits), [4, 0], 'the refused lookup took nothing')
  }),
  check("takes an API key's limits, and reads the key and its user", async (store) => {
    const owner = user(freshUserId())
    await store.insertUser(owner)
    const keyId = freshKeyId()
    await store.insertApiKey(apiKey(keyId, owner.id))
    const limits = plan(2, 5)
    const found = await lookup(store, { credential: { kind: 'apiKey', keyId }, budget: 'fixed', limits })
    assert.deepEqual(found.results?.map((r) => r.remaining), [1, 4])
    assert.deepEqual(found.apiKey, await store.getApiKey(keyId))
    assert.deepEqual(found.user, await store.getUser(owner.id))
  }),
  check("takes a live token's limits, and a revoked token's other limits, with the token's budget, even after the store saw it live", async (store) => {
    const owner = user(freshUserId())
    await store.insertUser(owner)
    const appToken = freshAppToken()
    const tokenHash = freshHash()
    await store.insertAccessToken(accessToken(tokenHash, { userId: owner.id, appToken }))
    const [limits, otherwiseLimits] = [plan(10, 10), plan(3, 3)]
    const request = (): LimitsLookup => ({ credential: { kind: 'accessToken', tokenHash, now: Date.now() }, budget: 'token', appToken, limits, otherwiseLimits })
    const live = await lookup(store, request())
    assert.equal(live.stepped, 'rate')
    assert.deepEqual(live.results?.map((r) => r.remaining), [9, 9], "the live token's limits")
    assert.deepEqual(live.user, await store.getUser(owner.id))
    await store.revokeAccessToken(tokenHash, LATER)
    const revoked = await lookup(store, request())
    assert.equal(revoked.stepped, 'otherwise')
    assert.deepEqual(revoked.results?.map((r) => r.remaining), [2, 2], 'the other limits')
    assert.ok(!('user' in revoked), 'no user for a revoked token')
    assert.deepEqual(await left(store, limits), [9, 9], "the live token's limits counted the revoked token's request no more")
    const none = await lookup(store, { ...request(), otherwiseLimits: null })
    assert.deepEqual([none.stepped, none.result, none.results], [null, null, undefined], 'no step when there are no other limits')
  }),
]
