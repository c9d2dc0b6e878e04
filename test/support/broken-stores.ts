/**
 * Stores for testing the conformance kit itself: MemoryStore answering asynchronously,
 * as a networked store does, and the same with one operation deliberately broken in the
 * ways real backends get them wrong.
 */
import { setImmediate as tick } from 'node:timers/promises'
import type { RateStep, RequestLookup, RequestLookupResult } from '../../src/store/contract/request-lookup.js'
import { composedLookup } from '../../src/store/composed-lookup.js'
import { gcraStep, MemoryStore, type AccessTokenFilter, type AccessTokenRecord, type ApiKeyPatch, type ApplicationPatch, type GateStore, type LimitResult, type LimitStep, type RateResult, type StoreEventSink } from '../../src/index.js'

/** Every method of `inner` answering after a macrotask; `overrides` replace some of them. */
/** An override that takes MemoryStore's optional consumeLimits away. */
const WITHOUT_LIMITS = { consumeLimits: undefined } as unknown as Partial<GateStore>

export function asyncStore(inner: MemoryStore = new MemoryStore(), overrides: Partial<GateStore> = {}): GateStore {
  return new Proxy(inner, {
    get(target, property) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof GateStore]
      const value: unknown = Reflect.get(target, property, target)
      if (typeof value !== 'function' || property === 'attach') return typeof value === 'function' ? value.bind(target) : value
      return async (...args: unknown[]) => {
        await tick()
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  }) as unknown as GateStore
}

/** Consumes a code by reading it, then writing it: every consumer that read it unused wins. */
export function readThenWriteConsume(): GateStore {
  const inner = new MemoryStore()
  return asyncStore(inner, {
    async consumeAuthorizationCode(codeHash: string, at: number) {
      const current = inner.getAuthorizationCode(codeHash)
      await tick()
      if (current === undefined || current.usedAt !== null) return false
      inner.consumeAuthorizationCode(codeHash, at)
      return true
    },
  })
}

/** A rate step that reads the arrival time, then writes the new one: concurrent steps overwrite each other. */
export function nonAtomicRateStep(): GateStore {
  const tats = new Map<string, number>()
  return asyncStore(new MemoryStore(), {
    // Its rate state is its own: MemoryStore's consumeLimits would not share it.
    ...WITHOUT_LIMITS,
    async consumeRate(key: string, limit: number, windowMs: number, cost: number): Promise<RateResult> {
      const stored = tats.get(key)
      await tick()
      const step = gcraStep(stored, Date.now() * 1000, limit, windowMs, cost)
      if (step.tat !== undefined) tats.set(key, step.tat)
      return step
    },
    async resetRate(key: string) {
      tats.delete(key)
    },
  })
}

/** Takes a plan's limits one after the other: a refused limit gives back none taken before it. */
export function limitsOneByOne(): GateStore {
  const inner = new MemoryStore()
  return asyncStore(inner, {
    async consumeLimits(steps: readonly LimitStep[]) {
      const results: LimitResult[] = []
      for (const step of steps) {
        await tick()
        results.push(...inner.consumeLimits([step]))
      }
      return results
    },
  })
}

/** An application patch that replaces the record's changeable fields: what the patch leaves out is lost. */
export function patchDropsFields(): GateStore {
  const inner = new MemoryStore()
  return asyncStore(inner, {
    async updateApplication(appToken: string, patch: ApplicationPatch) {
      await tick()
      return inner.updateApplication(appToken, { name: '', secretHash: '', callbackPrefix: null, limit: null, updatedAt: 0, ...patch })
    },
  })
}

/** An application patch that leaves out the suspension, as a store whose column list predates it: it reads back active. */
export function patchIgnoresSuspension(): GateStore {
  const inner = new MemoryStore()
  return asyncStore(inner, {
    async updateApplication(appToken: string, patch: ApplicationPatch) {
      await tick()
      const rest = { ...patch }
      delete rest.suspendedAt
      delete rest.suspensionReason
      return inner.updateApplication(appToken, rest)
    },
  })
}

/** An application patch that leaves out the plan, as a store whose field list predates it: it reads back on the default plan. */
export function patchIgnoresPlan(): GateStore {
  const inner = new MemoryStore()
  return asyncStore(inner, {
    async updateApplication(appToken: string, patch: ApplicationPatch) {
      await tick()
      const rest = { ...patch }
      delete rest.plan
      return inner.updateApplication(appToken, rest)
    },
  })
}

/** An API key patch as read, merge, write: of two concurrent patches, the later write loses the earlier one's field. */
export function readMergeWritePatch(): GateStore {
  const inner = new MemoryStore()
  return asyncStore(inner, {
    async updateApiKey(keyId: string, patch: ApiKeyPatch) {
      const current = inner.getApiKey(keyId)
      await tick()
      if (current === undefined) return undefined
      const { name, secretHash, lastUsedAt, revokedAt } = current
      return inner.updateApiKey(keyId, { name, secretHash, lastUsedAt, revokedAt, ...patch })
    },
  })
}

/** Revokes by counting the matching live tokens, then revoking them: concurrent calls count the same token twice. */
export function countThenRevoke(): GateStore {
  const inner = new MemoryStore()
  const hashes: string[] = []
  const matches = (token: AccessTokenRecord, filter: AccessTokenFilter) =>
    'codeHash' in filter
      ? token.codeHash === filter.codeHash
      : (filter.userId === undefined || token.userId === filter.userId) && (filter.appToken === undefined || token.appToken === filter.appToken)
  return asyncStore(inner, {
    async insertAccessToken(record: AccessTokenRecord) {
      await tick()
      inner.insertAccessToken(record)
      hashes.push(record.tokenHash)
    },
    async revokeAccessTokens(filter: AccessTokenFilter, at: number) {
      const live = hashes.map((hash) => inner.getAccessToken(hash)!).filter((token) => token.revokedAt === null && matches(token, filter))
      await tick()
      for (const token of live) inner.revokeAccessToken(token.tokenHash, at)
      return live.length
    },
  })
}

/** Drops a code, token or session once less than a second of its life is left: a TTL rounded down to whole seconds. */
export function expiresEarly(): GateStore {
  const inner = new MemoryStore()
  const alive = <T extends { expiresAt: number }>(record: T | undefined) => (record !== undefined && record.expiresAt - Date.now() < 1000 ? undefined : record)
  return asyncStore(inner, {
    async getAuthorizationCode(hash: string) {
      return alive(inner.getAuthorizationCode(hash))
    },
    async getAccessToken(hash: string) {
      return alive(inner.getAccessToken(hash))
    },
    async getSession(hash: string) {
      return alive(inner.getSession(hash))
    },
  })
}

/** Keeps only the last sink attached: a second gate on the store never hears of application changes. */
export function keepsOneSink(): GateStore {
  const inner = new MemoryStore()
  let last: StoreEventSink | undefined
  inner.attach({ rateKeyEvicted: (key) => last?.rateKeyEvicted(key), applicationChanged: (appToken) => last?.applicationChanged(appToken) })
  return asyncStore(inner, {
    attach(sink: StoreEventSink) {
      last = sink
    },
  })
}

/** Notes a use of a grant by reading it, then recording it: a deletion in between is undone. */
export function touchRecordsGrant(): GateStore {
  const inner = new MemoryStore()
  return asyncStore(inner, {
    async touchGrant(userId: string, appToken: string, at: number) {
      const current = inner.getGrant(userId, appToken)
      await tick()
      if (current !== undefined) inner.recordGrant(userId, appToken, at)
    },
  })
}

/**
 * MemoryStore (answering asynchronously) with `lookupRequest` made of the separate calls, in
 * the order the contract gives: what a store with the capability must answer. `broken`
 * reads a revoked token's user too, as a script that forgot the revocation would.
 */
export function withRequestLookup(broken?: 'revoked token user'): GateStore {
  const inner = new MemoryStore()
  const live = (token: AccessTokenRecord | undefined, now: number) => token !== undefined && (broken !== undefined || token.revokedAt === null) && token.expiresAt > now
  const stepOf = (rate: RateStep) => inner.consumeRate(rate.key, rate.limit, rate.windowMs, rate.cost)
  async function lookupRequest(lookup: RequestLookup): Promise<RequestLookupResult> {
    await tick()
    // Several limits as the gate composes them: this double breaks lookups of one rate step only.
    if (lookup.limits !== undefined) return composedLookup(inner, inner)(lookup)
    const { credential } = lookup
    if (lookup.budget === 'token' && credential.kind === 'accessToken') {
      const token = inner.getAccessToken(credential.tokenHash)
      if (live(token, credential.now)) {
        if (lookup.appToken !== undefined && token?.appToken !== lookup.appToken) return { stepped: null, result: null, accessToken: token }
        const result = stepOf(lookup.rate!)
        if (!result.allowed) return { stepped: 'rate', result, accessToken: token }
        return { stepped: 'rate', result, accessToken: token, user: inner.getUser(token?.userId ?? '') }
      }
      const otherwise = lookup.otherwise ?? null
      if (otherwise === null) return { stepped: null, result: null, accessToken: token }
      return { stepped: 'otherwise', result: stepOf(otherwise), accessToken: token }
    }
    const result = stepOf(lookup.rate!)
    if (!result.allowed) return { stepped: 'rate', result }
    if (credential.kind === 'user') return { stepped: 'rate', result, user: inner.getUser(credential.userId) }
    if (credential.kind === 'accessToken') {
      const token = inner.getAccessToken(credential.tokenHash)
      return live(token, credential.now) ? { stepped: 'rate', result, accessToken: token, user: inner.getUser(token?.userId ?? '') } : { stepped: 'rate', result, accessToken: token }
    }
    const key = inner.getApiKey(credential.keyId)
    return key !== undefined && key.revokedAt === null ? { stepped: 'rate', result, apiKey: key, user: inner.getUser(key.userId) } : { stepped: 'rate', result, apiKey: key }
  }
  return asyncStore(inner, { lookupRequest })
}
