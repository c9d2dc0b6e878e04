/**
 * The storage contract as tests: every GateStore runs this suite, MemoryStore here and
 * any other backend in its own file. Passing it is what "implements GateStore" means.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { AccessTokenRecord, ApiKeyQuery, ApiKeyRecord, ApplicationRecord, AuthorizationCodeRecord, GateStore, UserRecord } from '../src/index.js'

export interface StoreFixture {
  store: GateStore
  /** Called after each test. */
  cleanup?: () => Promise<void> | void
}

function application(appToken: string, overrides: Partial<ApplicationRecord> = {}): ApplicationRecord {
  return {
    appToken,
    name: `App ${appToken}`,
    secretHash: 'a'.repeat(64),
    callbackPrefix: 'https://app.example/cb/',
    limit: null,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    ...overrides,
  }
}

function user(id: string, overrides: Partial<UserRecord> = {}): UserRecord {
  return {
    id,
    username: `user-${id}`,
    screenName: 'Ada',
    displayName: 'Ada Lovelace',
    email: 'ada@example.org',
    rights: ['read_private'],
    passwordHash: '$scrypt$ln=14,r=8,p=1$c2FsdA==$aGFzaA==',
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    ...overrides,
  }
}

function apiKey(keyId: string, userId: string, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return { keyId, userId, name: 'etl job', secretHash: 'b'.repeat(64), createdAt: 1_700_000_000_000, lastUsedAt: null, revokedAt: null, ...overrides }
}

function accessToken(tokenHash: string, overrides: Partial<AccessTokenRecord> = {}): AccessTokenRecord {
  return {
    tokenHash,
    userId: 'u',
    appToken: 'app',
    codeHash: null,
    createdAt: Date.now(),
    expiresAt: Date.now() + 3_600_000,
    revokedAt: null,
    ...overrides,
  }
}

function code(codeHash: string, overrides: Partial<AuthorizationCodeRecord> = {}): AuthorizationCodeRecord {
  return {
    codeHash,
    appToken: 'app',
    userId: 'u',
    redirectUri: 'https://app.example/cb/?x=1',
    codeChallenge: null,
    createdAt: Date.now(),
    expiresAt: Date.now() + 60_000,
    usedAt: null,
    ...overrides,
  }
}

let counter = 0
/** A key no other test (or earlier run against a shared server) has used. */
function freshKey(prefix: string): string {
  return `${prefix}:${process.pid}:${Date.now()}:${counter++}`
}

export function describeStoreConformance(name: string, makeStore: () => Promise<StoreFixture> | StoreFixture): void {
  describe(`${name} implements the storage contract`, () => {
    let fixture: StoreFixture
    let store: GateStore
    beforeEach(async () => {
      fixture = await makeStore()
      store = fixture.store
    })
    afterEach(async () => {
      await fixture.cleanup?.()
    })

    describe('applications', () => {
      it('returns an application it saved, and undefined for an unknown token', async () => {
        const token = freshKey('app')
        await store.insertApplication(application(token))
        expect(await store.getApplication(token)).toEqual(application(token))
        expect(await store.getApplication(freshKey('missing'))).toBeUndefined()
      })

      it('refuses to save a second application under the same token and keeps the first', async () => {
        const token = freshKey('app')
        await store.insertApplication(application(token, { name: 'first' }))
        await expect(async () => store.insertApplication(application(token, { name: 'second' }))).rejects.toThrow()
        expect((await store.getApplication(token))?.name).toBe('first')
      })

      it('lists saved applications', async () => {
        const a = freshKey('app')
        const b = freshKey('app')
        await store.insertApplication(application(a))
        await store.insertApplication(application(b))
        const tokens = (await store.listApplications()).map((r) => r.appToken)
        expect(tokens).toEqual(expect.arrayContaining([a, b]))
      })

      it('applies a patch and returns the new record; undefined for an unknown token', async () => {
        const token = freshKey('app')
        await store.insertApplication(application(token))
        const updated = await store.updateApplication(token, { limit: 5000, callbackPrefix: null, updatedAt: 1_800_000_000_000 })
        expect(updated).toEqual(application(token, { limit: 5000, callbackPrefix: null, updatedAt: 1_800_000_000_000 }))
        expect(await store.getApplication(token)).toEqual(updated)
        expect(await store.updateApplication(freshKey('missing'), { limit: 1 })).toBeUndefined()
      })

      it('deletes an application once', async () => {
        const token = freshKey('app')
        await store.insertApplication(application(token))
        expect(await store.deleteApplication(token)).toBe(true)
        expect(await store.getApplication(token)).toBeUndefined()
        expect(await store.deleteApplication(token)).toBe(false)
      })
    })

    describe('users', () => {
      it('finds a saved user by id and by username', async () => {
        const id = freshKey('u')
        await store.insertUser(user(id))
        expect(await store.getUser(id)).toEqual(user(id))
        expect(await store.getUserByUsername(`user-${id}`)).toEqual(user(id))
        expect(await store.getUserByUsername(freshKey('nobody'))).toBeUndefined()
      })

      it('refuses a second user with the same id or the same username', async () => {
        const id = freshKey('u')
        await store.insertUser(user(id))
        await expect(async () => store.insertUser(user(id, { username: freshKey('other') }))).rejects.toThrow()
        await expect(async () => store.insertUser(user(freshKey('u'), { username: `user-${id}` }))).rejects.toThrow()
      })

      it('updates a user, including clearing the password', async () => {
        const id = freshKey('u')
        await store.insertUser(user(id))
        const updated = await store.updateUser(id, { passwordHash: null, rights: [], displayName: 'A. L.', updatedAt: 1_800_000_000_000 })
        expect(updated).toEqual(user(id, { passwordHash: null, rights: [], displayName: 'A. L.', updatedAt: 1_800_000_000_000 }))
        expect(await store.getUserByUsername(`user-${id}`)).toEqual(updated)
        expect(await store.updateUser(freshKey('nobody'), { email: 'x' })).toBeUndefined()
      })

      it('deletes a user, and frees the username', async () => {
        const id = freshKey('u')
        await store.insertUser(user(id))
        expect(await store.deleteUser(id)).toBe(true)
        expect(await store.getUser(id)).toBeUndefined()
        expect(await store.getUserByUsername(`user-${id}`)).toBeUndefined()
        expect(await store.deleteUser(id)).toBe(false)
        await store.insertUser(user(freshKey('u'), { username: `user-${id}` }))
      })
    })

    describe('API keys', () => {
      it('saves, finds, lists and updates keys', async () => {
        const userId = freshKey('u')
        const a = freshKey('k')
        const b = freshKey('k')
        await store.insertApiKey(apiKey(a, userId))
        await store.insertApiKey(apiKey(b, userId, { name: 'backup' }))
        await store.insertApiKey(apiKey(freshKey('k'), freshKey('someone-else')))
        expect(await store.getApiKey(a)).toEqual(apiKey(a, userId))
        expect((await store.listApiKeys(userId)).map((k) => k.keyId).sort()).toEqual([a, b].sort())
        const revoked = await store.updateApiKey(a, { revokedAt: 1_800_000_000_000, lastUsedAt: 1_750_000_000_000 })
        expect(revoked).toEqual(apiKey(a, userId, { revokedAt: 1_800_000_000_000, lastUsedAt: 1_750_000_000_000 }))
        expect(await store.getApiKey(a)).toEqual(revoked)
        expect(await store.updateApiKey(freshKey('k'), { name: 'x' })).toBeUndefined()
        await expect(async () => store.insertApiKey(apiKey(a, userId))).rejects.toThrow()
      })

      it('pages keys in the order asked for, seeking after the last key of the previous page', async () => {
        const userId = freshKey('u')
        const keys = [
          apiKey(freshKey('k'), userId, { name: 'bravo', createdAt: 3_000, lastUsedAt: null }),
          apiKey(freshKey('k'), userId, { name: 'Alpha', createdAt: 1_000, lastUsedAt: 9_000 }),
          apiKey(freshKey('k'), userId, { name: 'charlie', createdAt: 2_000, lastUsedAt: 5_000 }),
          apiKey(freshKey('k'), userId, { name: 'delta', createdAt: 2_000, lastUsedAt: 7_000, revokedAt: 8_000 }),
        ]
        for (const key of keys) await store.insertApiKey(key)
        await store.insertApiKey(apiKey(freshKey('k'), freshKey('u'), { name: 'alpha' }))
        const ids = (list: ApiKeyRecord[]) => list.map((k) => k.name)
        const page = (query: Partial<ApiKeyQuery>) =>
          store.listApiKeys(userId, { limit: 10, sortBy: 'createdAt', order: 'asc', includeRevoked: false, ...query })

        expect(ids(await page({}))).toEqual(['Alpha', 'charlie', 'bravo'])
        expect(ids(await page({ includeRevoked: true }))).toEqual(
          // createdAt ties break on keyId, in the same direction
          ['Alpha', ...[keys[2], keys[3]].sort((a, b) => (a!.keyId < b!.keyId ? -1 : 1)).map((k) => k!.name), 'bravo'],
        )
        expect(ids(await page({ sortBy: 'name' }))).toEqual(['Alpha', 'bravo', 'charlie'])
        expect(ids(await page({ sortBy: 'lastUsedAt', order: 'desc' }))).toEqual(['Alpha', 'charlie', 'bravo'])
        expect(ids(await page({ sortBy: 'revokedAt', order: 'desc', includeRevoked: true, limit: 1 }))).toEqual(['delta'])

        const first = await page({ sortBy: 'name', limit: 2 })
        expect(ids(first)).toEqual(['Alpha', 'bravo'])
        expect(ids(await page({ sortBy: 'name', limit: 2, after: first[1]!.keyId }))).toEqual(['charlie'])
        expect(await page({ after: freshKey('k') })).toEqual([])

        expect(ids(await page({ nameSearch: 'ALP' }))).toEqual(['Alpha'])
        expect(ids(await page({ nameSearch: keys[2]!.keyId }))).toEqual(['charlie'])
        expect(await page({ nameSearch: 'zulu' })).toEqual([])
      })

      it('applies concurrent patches of different fields without losing either', async () => {
        const keyId = freshKey('k')
        await store.insertApiKey(apiKey(keyId, freshKey('u')))
        await Promise.all([store.updateApiKey(keyId, { lastUsedAt: 1_750_000_000_000 }), store.updateApiKey(keyId, { revokedAt: 1_800_000_000_000 })])
        expect(await store.getApiKey(keyId)).toMatchObject({ lastUsedAt: 1_750_000_000_000, revokedAt: 1_800_000_000_000 })
      })
    })

    describe('access tokens', () => {
      it('saves and finds a token by its hash', async () => {
        const hash = freshKey('t')
        const record = accessToken(hash)
        await store.insertAccessToken(record)
        expect(await store.getAccessToken(hash)).toEqual(record)
        expect(await store.getAccessToken(freshKey('t'))).toBeUndefined()
        await expect(async () => store.insertAccessToken(record)).rejects.toThrow()
      })

      it('revokes a token once', async () => {
        const hash = freshKey('t')
        await store.insertAccessToken(accessToken(hash))
        expect(await store.revokeAccessToken(hash, 1_800_000_000_000)).toBe(true)
        expect((await store.getAccessToken(hash))?.revokedAt).toBe(1_800_000_000_000)
        expect(await store.revokeAccessToken(hash, 1_900_000_000_000)).toBe(false)
        expect((await store.getAccessToken(hash))?.revokedAt).toBe(1_800_000_000_000)
        expect(await store.revokeAccessToken(freshKey('t'), 1)).toBe(false)
      })

      it('revokes exactly once when many revocations of one token race', async () => {
        const hash = freshKey('t')
        await store.insertAccessToken(accessToken(hash))
        const results = await Promise.all(Array.from({ length: 20 }, () => store.revokeAccessToken(hash, Date.now())))
        expect(results.filter(Boolean)).toHaveLength(1)
      })

      it.each(['userId', 'appToken', 'codeHash'] as const)('revokes every active token with the same %s and nothing else', async (field) => {
        const shared = freshKey(field)
        const mine = [freshKey('t'), freshKey('t'), freshKey('t')]
        const other = freshKey('t')
        for (const hash of mine) await store.insertAccessToken(accessToken(hash, { [field]: shared }))
        await store.insertAccessToken(accessToken(other, { [field]: freshKey(field) }))
        await store.revokeAccessToken(mine[0] as string, 5)
        const filter = { [field]: shared } as { userId: string }
        expect(await store.revokeAccessTokens(filter, 1_800_000_000_000)).toBe(2)
        expect((await store.getAccessToken(mine[0] as string))?.revokedAt).toBe(5)
        expect((await store.getAccessToken(mine[1] as string))?.revokedAt).toBe(1_800_000_000_000)
        expect((await store.getAccessToken(other))?.revokedAt).toBeNull()
        expect(await store.revokeAccessTokens(filter, 1_900_000_000_000)).toBe(0)
      })

      it("revokes one user's tokens for one application, and not their others nor another user's", async () => {
        const userId = freshKey('u')
        const app = freshKey('app')
        const target = [freshKey('t'), freshKey('t')]
        const otherApp = freshKey('t')
        const otherUser = freshKey('t')
        for (const hash of target) await store.insertAccessToken(accessToken(hash, { userId, appToken: app }))
        await store.insertAccessToken(accessToken(otherApp, { userId, appToken: freshKey('app') }))
        await store.insertAccessToken(accessToken(otherUser, { userId: freshKey('u'), appToken: app }))
        expect(await store.revokeAccessTokens({ userId, appToken: app }, 1_800_000_000_000)).toBe(2)
        for (const hash of target) expect((await store.getAccessToken(hash))?.revokedAt).toBe(1_800_000_000_000)
        expect((await store.getAccessToken(otherApp))?.revokedAt).toBeNull()
        expect((await store.getAccessToken(otherUser))?.revokedAt).toBeNull()
      })

      it('counts each token once when revocations of one user race', async () => {
        const userId = freshKey('u')
        for (let i = 0; i < 10; i++) await store.insertAccessToken(accessToken(freshKey('t'), { userId }))
        const counts = await Promise.all(Array.from({ length: 10 }, () => store.revokeAccessTokens({ userId }, Date.now())))
        expect(counts.reduce((a, b) => a + b, 0)).toBe(10)
        expect(await store.listAccessTokens(userId)).toEqual([])
      })

      it("lists a user's live tokens oldest first, leaving out revoked and expired ones", async () => {
        const userId = freshKey('u')
        const now = Date.now()
        const older = accessToken(freshKey('t'), { userId, createdAt: now - 2000 })
        const newer = accessToken(freshKey('t'), { userId, createdAt: now - 1000 })
        const revoked = freshKey('t')
        await store.insertAccessToken(newer)
        await store.insertAccessToken(older)
        await store.insertAccessToken(accessToken(revoked, { userId }))
        await store.insertAccessToken(accessToken(freshKey('t'), { userId, createdAt: now - 5000, expiresAt: now - 1 }))
        await store.insertAccessToken(accessToken(freshKey('t'), { userId: freshKey('u') }))
        await store.revokeAccessToken(revoked, now)
        expect(await store.listAccessTokens(userId)).toEqual([older, newer])
        expect(await store.listAccessTokens(freshKey('u'))).toEqual([])
      })
    })

    describe('grants', () => {
      it('records a grant once and moves only its last use forward', async () => {
        const userId = freshKey('u')
        const app = freshKey('app')
        expect(await store.getGrant(userId, app)).toBeUndefined()
        await store.recordGrant(userId, app, 1_000)
        expect(await store.getGrant(userId, app)).toEqual({ userId, appToken: app, firstAuthorizedAt: 1_000, lastUsedAt: 1_000 })
        await store.recordGrant(userId, app, 5_000)
        await store.recordGrant(userId, app, 3_000)
        expect(await store.getGrant(userId, app)).toEqual({ userId, appToken: app, firstAuthorizedAt: 1_000, lastUsedAt: 5_000 })
      })

      it("lists a user's grants oldest first and no one else's", async () => {
        const userId = freshKey('u')
        const [a, b] = [freshKey('app'), freshKey('app')]
        await store.recordGrant(userId, b, 2_000)
        await store.recordGrant(userId, a, 1_000)
        await store.recordGrant(freshKey('u'), a, 500)
        expect(await store.listGrants(userId)).toEqual([
          { userId, appToken: a, firstAuthorizedAt: 1_000, lastUsedAt: 1_000 },
          { userId, appToken: b, firstAuthorizedAt: 2_000, lastUsedAt: 2_000 },
        ])
        expect(await store.listGrants(freshKey('u'))).toEqual([])
      })

      it('forgets a grant once, and a later one starts afresh', async () => {
        const userId = freshKey('u')
        const app = freshKey('app')
        await store.recordGrant(userId, app, 1_000)
        expect(await store.deleteGrant(userId, app)).toBe(true)
        expect(await store.deleteGrant(userId, app)).toBe(false)
        expect(await store.getGrant(userId, app)).toBeUndefined()
        await store.recordGrant(userId, app, 9_000)
        expect((await store.getGrant(userId, app))?.firstAuthorizedAt).toBe(9_000)
      })

      it('keeps one grant when many records of it race', async () => {
        const userId = freshKey('u')
        const app = freshKey('app')
        await Promise.all(Array.from({ length: 20 }, (_, i) => store.recordGrant(userId, app, 1_000 + i)))
        const grants = await store.listGrants(userId)
        expect(grants).toHaveLength(1)
        expect(grants[0]?.lastUsedAt).toBe(1_019)
      })
    })

    describe('authorization codes', () => {
      it('saves and finds a code by its hash', async () => {
        const hash = freshKey('c')
        await store.insertAuthorizationCode(code(hash, { codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM' }))
        expect(await store.getAuthorizationCode(hash)).toEqual(code(hash, { codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', createdAt: expect.any(Number), expiresAt: expect.any(Number) }))
        expect(await store.getAuthorizationCode(freshKey('c'))).toBeUndefined()
        await expect(async () => store.insertAuthorizationCode(code(hash))).rejects.toThrow()
      })

      it('consumes a code once and remembers when', async () => {
        const hash = freshKey('c')
        await store.insertAuthorizationCode(code(hash))
        expect(await store.consumeAuthorizationCode(hash, 1_800_000_000_000)).toBe(true)
        expect(await store.consumeAuthorizationCode(hash, 1_900_000_000_000)).toBe(false)
        expect((await store.getAuthorizationCode(hash))?.usedAt).toBe(1_800_000_000_000)
        expect(await store.consumeAuthorizationCode(freshKey('c'), 1)).toBe(false)
      })

      it('lets exactly one of many concurrent consumers win', async () => {
        const hash = freshKey('c')
        await store.insertAuthorizationCode(code(hash))
        const results = await Promise.all(Array.from({ length: 50 }, () => store.consumeAuthorizationCode(hash, Date.now())))
        expect(results.filter(Boolean)).toHaveLength(1)
      })
    })

    describe('sessions', () => {
      it('saves, finds and deletes a session; an expired one is not found', async () => {
        const hash = freshKey('s')
        const record = { sessionHash: hash, userId: 'u', passwordStamp: 'c'.repeat(64), createdAt: Date.now(), expiresAt: Date.now() + 60_000 }
        await store.insertSession(record)
        expect(await store.getSession(hash)).toEqual(record)
        expect(await store.deleteSession(hash)).toBe(true)
        expect(await store.getSession(hash)).toBeUndefined()
        expect(await store.deleteSession(hash)).toBe(false)
        const expired = freshKey('s')
        await store.insertSession({ sessionHash: expired, userId: 'u', passwordStamp: 'c'.repeat(64), createdAt: Date.now() - 10_000, expiresAt: Date.now() - 1 })
        expect(await store.getSession(expired)).toBeUndefined()
      })

      it("keeps only a user's newest sessions when trimmed, and no other user's are touched", async () => {
        const userId = freshKey('u')
        const now = Date.now()
        const hashes = Array.from({ length: 5 }, () => freshKey('s'))
        for (const [i, hash] of hashes.entries()) {
          await store.insertSession({ sessionHash: hash, userId, passwordStamp: 'c'.repeat(64), createdAt: now - 5000 + i * 1000, expiresAt: now + 60_000 })
        }
        const bystander = freshKey('s')
        await store.insertSession({ sessionHash: bystander, userId: freshKey('u'), passwordStamp: 'c'.repeat(64), createdAt: now - 99_000, expiresAt: now + 60_000 })
        expect(await store.trimSessions(userId, 2)).toBe(3)
        for (const hash of hashes.slice(0, 3)) expect(await store.getSession(hash)).toBeUndefined()
        for (const hash of hashes.slice(3)) expect(await store.getSession(hash)).toBeDefined()
        expect(await store.getSession(bystander)).toBeDefined()
        expect(await store.trimSessions(userId, 2)).toBe(0)
      })
    })

    describe('rate steps', () => {
      it('allows a burst of exactly the limit, counting down, then refuses', async () => {
        const key = freshKey('rate')
        const remaining: number[] = []
        for (let i = 0; i < 5; i++) {
          const r = await store.consumeRate(key, 5, 60_000, 1)
          expect(r.allowed).toBe(true)
          remaining.push(r.remaining)
        }
        expect(remaining).toEqual([4, 3, 2, 1, 0])
        const refused = await store.consumeRate(key, 5, 60_000, 1)
        expect(refused.allowed).toBe(false)
        expect(refused.remaining).toBe(0)
        // One request per 12 s: the next one fits within one emission interval.
        expect(refused.retryAfterMs).toBeGreaterThan(11_000)
        expect(refused.retryAfterMs).toBeLessThanOrEqual(12_000)
      })

      it('reports the time until the whole budget is back', async () => {
        const key = freshKey('rate')
        const first = await store.consumeRate(key, 10, 60_000, 1)
        expect(first.resetMs).toBeGreaterThan(5_900)
        expect(first.resetMs).toBeLessThanOrEqual(6_000)
        expect(first.retryAfterMs).toBe(0)
      })

      it('lets a refused client in again once retryAfterMs has passed', async () => {
        const key = freshKey('rate')
        for (let i = 0; i < 4; i++) expect((await store.consumeRate(key, 4, 400, 1)).allowed).toBe(true)
        const refused = await store.consumeRate(key, 4, 400, 1)
        expect(refused.allowed).toBe(false)
        await sleep(refused.retryAfterMs + 15)
        expect((await store.consumeRate(key, 4, 400, 1)).allowed).toBe(true)
      })

      it('does not count a refused request', async () => {
        const key = freshKey('rate')
        await store.consumeRate(key, 2, 400, 1)
        await store.consumeRate(key, 2, 400, 1)
        for (let i = 0; i < 5; i++) expect((await store.consumeRate(key, 2, 400, 1)).allowed).toBe(false)
        await sleep(220)
        expect((await store.consumeRate(key, 2, 400, 1)).allowed).toBe(true)
      })

      it('reads without consuming when the cost is 0', async () => {
        const key = freshKey('rate')
        expect((await store.consumeRate(key, 3, 60_000, 0)).remaining).toBe(3)
        await store.consumeRate(key, 3, 60_000, 1)
        expect((await store.consumeRate(key, 3, 60_000, 0)).remaining).toBe(2)
        expect((await store.consumeRate(key, 3, 60_000, 0)).remaining).toBe(2)
      })

      it('counts keys independently', async () => {
        const a = freshKey('rate')
        const b = freshKey('rate')
        await store.consumeRate(a, 1, 60_000, 1)
        expect((await store.consumeRate(a, 1, 60_000, 1)).allowed).toBe(false)
        expect((await store.consumeRate(b, 1, 60_000, 1)).allowed).toBe(true)
      })

      it('forgets a key on reset', async () => {
        const key = freshKey('rate')
        await store.consumeRate(key, 1, 60_000, 1)
        await store.resetRate(key)
        expect((await store.consumeRate(key, 1, 60_000, 1)).allowed).toBe(true)
      })

      it('allows exactly the limit when many steps on one key run at once', async () => {
        const key = freshKey('rate')
        const results = await Promise.all(Array.from({ length: 100 }, () => store.consumeRate(key, 37, 60_000, 1)))
        expect(results.filter((r) => r.allowed)).toHaveLength(37)
      })
    })
  })
}
