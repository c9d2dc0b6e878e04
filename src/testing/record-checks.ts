/**
 * The record operations of the contract: applications, users, API keys, access tokens,
 * grants, authorization codes and sessions, with the atomicity each one promises.
 */
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ApiKeyQuery, ApiKeyRecord, Awaitable, GateStore } from '../store/store.js'
import { group, type StoreCheck } from './check.js'
import {
  accessToken,
  apiKey,
  application,
  code,
  freshAppToken,
  freshHash,
  freshKeyId,
  freshUserId,
  session,
  T0,
  user,
} from './fixtures.js'

const LATER = 1_800_000_000_000
const LATEST = 1_900_000_000_000
/** How long the short-lived records of the expiry checks live. */
const SHORT_TTL_MS = 250

const applications = group('applications', [
  [
    'returns an application it saved, and undefined for an unknown token',
    async (store) => {
      const token = freshAppToken()
      await store.insertApplication(application(token))
      assert.deepEqual(await store.getApplication(token), application(token))
      assert.equal(await store.getApplication(freshAppToken()), undefined)
    },
  ],
  [
    'refuses to save a second application under the same token and keeps the first',
    async (store) => {
      const token = freshAppToken()
      await store.insertApplication(application(token, { name: 'first' }))
      await assert.rejects(async () => store.insertApplication(application(token, { name: 'second' })), 'a duplicate insert must throw')
      assert.equal((await store.getApplication(token))?.name, 'first')
    },
  ],
  [
    'lists saved applications, oldest first',
    async (store) => {
      const [a, b] = [freshAppToken(), freshAppToken()]
      const now = Date.now()
      await store.insertApplication(application(a, { createdAt: now - 1000, updatedAt: now - 1000 }))
      await store.insertApplication(application(b, { createdAt: now, updatedAt: now }))
      const tokens = (await store.listApplications()).map((r) => r.appToken)
      assert.ok(tokens.includes(a) && tokens.includes(b), 'both applications are listed')
      assert.ok(tokens.indexOf(a) < tokens.indexOf(b), 'the older application is listed first')
    },
  ],
  [
    'applies a patch and returns the new record, leaving other fields alone; undefined for an unknown token',
    async (store) => {
      const token = freshAppToken()
      await store.insertApplication(application(token))
      const updated = await store.updateApplication(token, { limit: 5000, callbackPrefix: null, updatedAt: LATER })
      assert.deepEqual(updated, application(token, { limit: 5000, callbackPrefix: null, updatedAt: LATER }))
      assert.deepEqual(await store.getApplication(token), updated)
      assert.equal(await store.updateApplication(freshAppToken(), { limit: 1 }), undefined)
    },
  ],
  [
    'applies concurrent patches of different fields without losing any',
    async (store) => {
      const token = freshAppToken()
      await store.insertApplication(application(token))
      await Promise.all([
        store.updateApplication(token, { name: 'renamed' }),
        store.updateApplication(token, { limit: 5000 }),
        store.updateApplication(token, { secretHash: 'd'.repeat(64) }),
        store.updateApplication(token, { callbackPrefix: 'https://other.example/' }),
      ])
      assert.deepEqual(
        await store.getApplication(token),
        application(token, { name: 'renamed', limit: 5000, secretHash: 'd'.repeat(64), callbackPrefix: 'https://other.example/' }),
      )
    },
  ],
  [
    'announces every change of an application to every attached sink, if it announces changes at all',
    async (store) => {
      if (store.attach === undefined) return
      const token = freshAppToken()
      const heard = [0, 0]
      for (const i of [0, 1]) store.attach({ rateKeyEvicted: () => {}, applicationChanged: (appToken) => void (appToken === token && heard[i]!++) })
      // Announcements may travel through a server (pub/sub, NOTIFY), and a store may hear
      // its own change twice (once at once, once as the echo): at least one each counts.
      const heardSince = async (before: readonly number[], withinMs: number) => {
        for (const deadline = Date.now() + withinMs; Date.now() < deadline && heard.some((n, i) => n <= before[i]!); ) await sleep(10)
        return heard.every((n, i) => n > before[i]!)
      }
      /** Waits until no announcement has arrived for 50 ms, so a late echo is not taken for the next change's. */
      const settle = async () => {
        let last = heard.join()
        for (let quietMs = 0, deadline = Date.now() + 1000; quietMs < 50 && Date.now() < deadline; ) {
          await sleep(10)
          quietMs = heard.join() === last ? quietMs + 10 : 0
          last = heard.join()
        }
      }
      await store.insertApplication(application(token))
      // The contract lets a store that only this process sees stay silent.
      for (const deadline = Date.now() + 300; Date.now() < deadline && heard.every((n) => n === 0); ) await sleep(10)
      if (heard.every((n) => n === 0)) return
      assert.ok(await heardSince([0, 0], 1000), `both sinks hear of the insert (heard ${heard.join(' and ')} times)`)
      for (const [change, act] of [
        ['update', () => store.updateApplication(token, { limit: 10 })],
        ['delete', () => store.deleteApplication(token)],
      ] as const) {
        await settle()
        const before = [...heard]
        await act()
        assert.ok(await heardSince(before, 1000), `both sinks hear of the ${change}`)
      }
    },
  ],
  [
    'deletes an application once',
    async (store) => {
      const token = freshAppToken()
      await store.insertApplication(application(token))
      assert.equal(await store.deleteApplication(token), true)
      assert.equal(await store.getApplication(token), undefined)
      assert.equal(await store.deleteApplication(token), false)
    },
  ],
])

const users = group('users', [
  [
    'finds a saved user by id and by username',
    async (store) => {
      const id = freshUserId()
      await store.insertUser(user(id))
      assert.deepEqual(await store.getUser(id), user(id))
      assert.deepEqual(await store.getUserByUsername(`user-${id}`), user(id))
      assert.equal(await store.getUser(freshUserId()), undefined)
      assert.equal(await store.getUserByUsername(`user-${freshUserId()}`), undefined)
    },
  ],
  [
    'refuses a second user with the same id or the same username',
    async (store) => {
      const id = freshUserId()
      await store.insertUser(user(id))
      await assert.rejects(async () => store.insertUser(user(id, { username: `user-${freshUserId()}` })), 'a duplicate id must throw')
      await assert.rejects(async () => store.insertUser(user(freshUserId(), { username: `user-${id}` })), 'a duplicate username must throw')
    },
  ],
  [
    'updates a user, including clearing the password, and finds the new record by username',
    async (store) => {
      const id = freshUserId()
      await store.insertUser(user(id))
      const updated = await store.updateUser(id, { passwordHash: null, rights: [], displayName: 'A. L.', updatedAt: LATER })
      assert.deepEqual(updated, user(id, { passwordHash: null, rights: [], displayName: 'A. L.', updatedAt: LATER }))
      assert.deepEqual(await store.getUserByUsername(`user-${id}`), updated)
      assert.equal(await store.updateUser(freshUserId(), { email: 'x@example.org' }), undefined)
    },
  ],
  [
    'applies concurrent patches of different fields without losing any',
    async (store) => {
      const id = freshUserId()
      await store.insertUser(user(id))
      await Promise.all([
        store.updateUser(id, { displayName: 'Countess of Lovelace' }),
        store.updateUser(id, { email: 'ada@analytical.example' }),
        store.updateUser(id, { rights: ['read_private', 'edit'] }),
        store.updateUser(id, { passwordHash: null }),
      ])
      assert.deepEqual(
        await store.getUser(id),
        user(id, { displayName: 'Countess of Lovelace', email: 'ada@analytical.example', rights: ['read_private', 'edit'], passwordHash: null }),
      )
    },
  ],
  [
    'deletes a user, and frees the username',
    async (store) => {
      const id = freshUserId()
      await store.insertUser(user(id))
      assert.equal(await store.deleteUser(id), true)
      assert.equal(await store.getUser(id), undefined)
      assert.equal(await store.getUserByUsername(`user-${id}`), undefined)
      assert.equal(await store.deleteUser(id), false)
      await store.insertUser(user(freshUserId(), { username: `user-${id}` }))
    },
  ],
  [
    'finds a user by the skeleton of the username, and no deleted one (getUserBySkeleton is optional)',
    async (store) => {
      if (store.getUserBySkeleton === undefined) return
      const [a, b] = [freshUserId(), freshUserId()]
      await store.insertUser(user(a, { usernameSkeleton: `look-${a}` }))
      await store.insertUser(user(b, { usernameSkeleton: `look-${b}` }))
      assert.deepEqual(await store.getUserBySkeleton(`look-${a}`), user(a, { usernameSkeleton: `look-${a}` }))
      assert.equal((await store.getUserBySkeleton(`look-${b}`))?.id, b)
      assert.equal(await store.getUserBySkeleton(`look-${freshUserId()}`), undefined)
      await store.deleteUser(a)
      assert.equal(await store.getUserBySkeleton(`look-${a}`), undefined)
    },
  ],
  [
    'lists saved users, and no deleted one, when it can list (listUsers is optional)',
    async (store) => {
      if (store.listUsers === undefined) return
      const [a, b, gone] = [freshUserId(), freshUserId(), freshUserId()]
      for (const id of [a, b, gone]) await store.insertUser(user(id))
      await store.deleteUser(gone)
      const ids = (await store.listUsers()).map((u) => u.id)
      assert.ok(ids.includes(a) && ids.includes(b), 'every saved user is listed')
      assert.ok(!ids.includes(gone), 'a deleted user is not listed')
      assert.deepEqual((await store.listUsers()).find((u) => u.id === a), user(a))
    },
  ],
])

const names = (list: ApiKeyRecord[]) => list.map((k) => k.name)

const apiKeys = group('API keys', [
  [
    'saves, finds, lists (revoked ones too, oldest first) and updates keys',
    async (store) => {
      const userId = freshUserId()
      const [a, b] = [freshKeyId(), freshKeyId()]
      await store.insertApiKey(apiKey(a, userId, { createdAt: T0 }))
      await store.insertApiKey(apiKey(b, userId, { name: 'backup', createdAt: T0 + 1000, revokedAt: T0 + 2000 }))
      await store.insertApiKey(apiKey(freshKeyId(), freshUserId()))
      assert.deepEqual(await store.getApiKey(a), apiKey(a, userId))
      assert.equal(await store.getApiKey(freshKeyId()), undefined)
      assert.deepEqual(
        (await store.listApiKeys(userId)).map((k) => k.keyId),
        [a, b],
      )
      const revoked = await store.updateApiKey(a, { revokedAt: LATER, lastUsedAt: 1_750_000_000_000 })
      assert.deepEqual(revoked, apiKey(a, userId, { revokedAt: LATER, lastUsedAt: 1_750_000_000_000 }))
      assert.deepEqual(await store.getApiKey(a), revoked)
      assert.equal(await store.updateApiKey(freshKeyId(), { name: 'x' }), undefined)
      await assert.rejects(async () => store.insertApiKey(apiKey(a, userId)), 'a duplicate key id must throw')
    },
  ],
  [
    'pages keys in the order asked for, seeking after the last key of the previous page',
    async (store) => {
      const userId = freshUserId()
      const keys = [
        apiKey(freshKeyId(), userId, { name: 'bravo', createdAt: 3_000, lastUsedAt: null }),
        apiKey(freshKeyId(), userId, { name: 'Alpha', createdAt: 1_000, lastUsedAt: 9_000 }),
        apiKey(freshKeyId(), userId, { name: 'charlie', createdAt: 2_000, lastUsedAt: 5_000 }),
        apiKey(freshKeyId(), userId, { name: 'delta', createdAt: 2_000, lastUsedAt: 7_000, revokedAt: 8_000 }),
      ]
      for (const key of keys) await store.insertApiKey(key)
      await store.insertApiKey(apiKey(freshKeyId(), freshUserId(), { name: 'alpha' }))
      const page = (query: Partial<ApiKeyQuery>) => store.listApiKeys(userId, { limit: 10, sortBy: 'createdAt', order: 'asc', includeRevoked: false, ...query })

      assert.deepEqual(names(await page({})), ['Alpha', 'charlie', 'bravo'])
      // createdAt ties break on keyId, in the same direction
      const tied = [keys[2]!, keys[3]!].sort((a, b) => (a.keyId < b.keyId ? -1 : 1)).map((k) => k.name)
      assert.deepEqual(names(await page({ includeRevoked: true })), ['Alpha', ...tied, 'bravo'])
      assert.deepEqual(names(await page({ includeRevoked: true, order: 'desc' })), ['bravo', ...tied.reverse(), 'Alpha'])
      assert.deepEqual(names(await page({ sortBy: 'name' })), ['Alpha', 'bravo', 'charlie'])
      assert.deepEqual(names(await page({ sortBy: 'lastUsedAt', order: 'desc' })), ['Alpha', 'charlie', 'bravo'])
      assert.deepEqual(names(await page({ sortBy: 'revokedAt', order: 'desc', includeRevoked: true, limit: 1 })), ['delta'])

      const first = await page({ sortBy: 'name', limit: 2 })
      assert.deepEqual(names(first), ['Alpha', 'bravo'])
      assert.deepEqual(names(await page({ sortBy: 'name', limit: 2, after: first[1]!.keyId })), ['charlie'])
      assert.deepEqual(await page({ after: freshKeyId() }), [], 'an unknown seek key gives an empty page')

      assert.deepEqual(names(await page({ nameSearch: 'ALP' })), ['Alpha'])
      assert.deepEqual(names(await page({ nameSearch: keys[2]!.keyId })), ['charlie'])
      assert.deepEqual(await page({ nameSearch: 'zulu' }), [])
    },
  ],
  [
    'keeps the active-key cap when 60 creates race: 95 active and a cap of 100 leave exactly 100',
    async (store) => {
      const userId = freshUserId()
      const limits = { maxActive: 100, maxTotal: 1000 }
      for (let i = 0; i < 95; i++) assert.equal(await store.insertApiKey(apiKey(freshKeyId(), userId, { name: `key ${i}` }), limits), 'created')
      // A revoked key counts toward the total only, not the active cap.
      await store.insertApiKey(apiKey(freshKeyId(), userId, { name: 'old', revokedAt: T0 }))
      const results = await Promise.all(Array.from({ length: 60 }, (_, i) => store.insertApiKey(apiKey(freshKeyId(), userId, { name: `racer ${i}` }), limits)))
      assert.equal(results.filter((r) => r === 'created').length, 5, 'creates that succeeded')
      assert.equal(results.filter((r) => r === 'active-limit').length, 55, 'creates refused for the active cap')
      const active = await store.listApiKeys(userId, { limit: 100, sortBy: 'createdAt', order: 'asc', includeRevoked: false })
      assert.equal(active.length, 100, 'active keys after the race')
      assert.equal((await store.listApiKeys(userId, { limit: 100, sortBy: 'createdAt', order: 'asc', includeRevoked: false, after: active.at(-1)!.keyId })).length, 0)
    },
  ],
  [
    "refuses an active key's name when creates race, and frees the name once the key is revoked",
    async (store) => {
      const userId = freshUserId()
      const limits = { maxActive: 100, maxTotal: 100 }
      const ids = Array.from({ length: 20 }, () => freshKeyId())
      const results = await Promise.all(ids.map((id) => store.insertApiKey(apiKey(id, userId, { name: 'Nightly ETL' }), limits)))
      assert.equal(results.filter((r) => r === 'created').length, 1, 'creates of one name that succeeded')
      assert.equal(results.filter((r) => r === 'name-taken').length, 19)
      const winner = ids[results.indexOf('created')]!
      assert.equal(await store.getApiKey(ids[results.indexOf('name-taken')]!), undefined, 'a refused create saves nothing')
      assert.equal(await store.insertApiKey(apiKey(freshKeyId(), userId, { name: 'nightly etl' }), limits), 'created', 'names are compared exactly')
      assert.equal(await store.insertApiKey(apiKey(freshKeyId(), freshUserId(), { name: 'Nightly ETL' }), limits), 'created', "another user's names are their own")
      assert.notEqual(await store.revokeApiKey(winner, LATER, Date.now() + 3_600_000), undefined)
      assert.equal(await store.insertApiKey(apiKey(freshKeyId(), userId, { name: 'Nightly ETL' }), limits), 'created', "a revoked key's name is free again")
    },
  ],
  [
    'revokes a key once when revocations race, and keeps it listable until its purge time',
    async (store) => {
      const userId = freshUserId()
      const keyId = freshKeyId()
      await store.insertApiKey(apiKey(keyId, userId))
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.revokeApiKey(keyId, LATER + i, Date.now() + 3_600_000)))
      const winners = results.filter((r) => r !== undefined)
      assert.equal(winners.length, 1, 'revocations that returned the key')
      assert.deepEqual(await store.getApiKey(keyId), winners[0])
      assert.equal(winners[0]?.revokedAt, LATER + results.findIndex((r) => r !== undefined))
      assert.equal(await store.revokeApiKey(freshKeyId(), LATER, LATEST), undefined, 'an unknown key')
      const listed = await store.listApiKeys(userId, { limit: 10, sortBy: 'revokedAt', order: 'desc', includeRevoked: true })
      assert.deepEqual(listed, [winners[0]])
      assert.deepEqual(await store.listApiKeys(userId, { limit: 10, sortBy: 'createdAt', order: 'asc', includeRevoked: false }), [])
    },
  ],
  [
    'counts revoked keys toward the total cap until their purge time, and forgets them after',
    async (store) => {
      const userId = freshUserId()
      const limits = { maxActive: 10, maxTotal: 3 }
      const ids = [freshKeyId(), freshKeyId(), freshKeyId()]
      for (const [i, id] of ids.entries()) assert.equal(await store.insertApiKey(apiKey(id, userId, { name: `k${i}`, createdAt: T0 + i }), limits), 'created')
      const purgeAt = Date.now() + SHORT_TTL_MS
      for (const id of ids.slice(0, 2)) assert.notEqual(await store.revokeApiKey(id, Date.now(), purgeAt), undefined)
      // A key whose purge time has not passed counts; a refused create saves nothing.
      const refused = freshKeyId()
      if (Date.now() < purgeAt) {
        assert.equal(await store.insertApiKey(apiKey(refused, userId, { name: 'k3' }), limits), 'total-limit')
        assert.equal(await store.getApiKey(refused), undefined)
      }
      await sleep(purgeAt - Date.now() + 100)
      assert.equal(await store.insertApiKey(apiKey(freshKeyId(), userId, { name: 'k3', createdAt: T0 + 3 }), limits), 'created', 'purged keys no longer count')
      const all = await store.listApiKeys(userId, { limit: 10, sortBy: 'createdAt', order: 'asc', includeRevoked: true })
      assert.deepEqual(names(all), ['k2', 'k3'], 'purged keys are not listed')
      for (const id of ids.slice(0, 2)) {
        const left = await store.getApiKey(id)
        assert.ok(left === undefined || left.revokedAt !== null, 'a purged key is gone, or still revoked')
      }
    },
  ],
  [
    'applies concurrent patches of different fields without losing any',
    async (store) => {
      const keyId = freshKeyId()
      const userId = freshUserId()
      await store.insertApiKey(apiKey(keyId, userId))
      await Promise.all([
        store.updateApiKey(keyId, { lastUsedAt: 1_750_000_000_000 }),
        store.updateApiKey(keyId, { revokedAt: LATER }),
        store.updateApiKey(keyId, { name: 'renamed' }),
      ])
      assert.deepEqual(await store.getApiKey(keyId), apiKey(keyId, userId, { lastUsedAt: 1_750_000_000_000, revokedAt: LATER, name: 'renamed' }))
    },
  ],
])

const FILTER_FIELDS = ['userId', 'appToken', 'codeHash'] as const
const freshOf = { userId: freshUserId, appToken: freshAppToken, codeHash: freshHash }

const accessTokens = group('access tokens', [
  [
    'saves and finds a token by its hash, and refuses a duplicate',
    async (store) => {
      const hash = freshHash()
      const record = accessToken(hash, { codeHash: freshHash() })
      await store.insertAccessToken(record)
      assert.deepEqual(await store.getAccessToken(hash), record)
      assert.equal(await store.getAccessToken(freshHash()), undefined)
      await assert.rejects(async () => store.insertAccessToken(record), 'a duplicate token hash must throw')
    },
  ],
  [
    'revokes a token once',
    async (store) => {
      const hash = freshHash()
      await store.insertAccessToken(accessToken(hash))
      assert.equal(await store.revokeAccessToken(hash, LATER), true)
      assert.equal((await store.getAccessToken(hash))?.revokedAt, LATER)
      assert.equal(await store.revokeAccessToken(hash, LATEST), false)
      assert.equal((await store.getAccessToken(hash))?.revokedAt, LATER, 'a second revocation must not move revokedAt')
      assert.equal(await store.revokeAccessToken(freshHash(), 1), false)
    },
  ],
  [
    'revokes exactly once when many revocations of one token race',
    async (store) => {
      const hash = freshHash()
      await store.insertAccessToken(accessToken(hash))
      const results = await Promise.all(Array.from({ length: 20 }, () => store.revokeAccessToken(hash, Date.now())))
      assert.equal(results.filter(Boolean).length, 1, 'revocations that returned true')
    },
  ],
  ...FILTER_FIELDS.map((field): readonly [string, (store: GateStore) => Promise<void>] => [
    `revokes every active token with the same ${field} and nothing else`,
    async (store) => {
      const shared = freshOf[field]()
      const mine = [freshHash(), freshHash(), freshHash()] as const
      const other = freshHash()
      for (const hash of mine) await store.insertAccessToken(accessToken(hash, { [field]: shared }))
      await store.insertAccessToken(accessToken(other, { [field]: freshOf[field]() }))
      await store.revokeAccessToken(mine[0], 5)
      const filter = { [field]: shared } as { userId: string }
      assert.equal(await store.revokeAccessTokens(filter, LATER), 2, 'tokens this call revoked')
      assert.equal((await store.getAccessToken(mine[0]))?.revokedAt, 5, 'an already revoked token keeps its revokedAt')
      assert.equal((await store.getAccessToken(mine[1]))?.revokedAt, LATER)
      assert.equal((await store.getAccessToken(mine[2]))?.revokedAt, LATER)
      assert.equal((await store.getAccessToken(other))?.revokedAt, null, 'a token of another ' + field + ' is untouched')
      assert.equal(await store.revokeAccessTokens(filter, LATEST), 0)
    },
  ]),
  [
    "revokes one user's tokens for one application, and not their others nor another user's",
    async (store) => {
      const userId = freshUserId()
      const app = freshAppToken()
      const target = [freshHash(), freshHash()]
      const otherApp = freshHash()
      const otherUser = freshHash()
      for (const hash of target) await store.insertAccessToken(accessToken(hash, { userId, appToken: app }))
      await store.insertAccessToken(accessToken(otherApp, { userId }))
      await store.insertAccessToken(accessToken(otherUser, { appToken: app }))
      assert.equal(await store.revokeAccessTokens({ userId, appToken: app }, LATER), 2)
      for (const hash of target) assert.equal((await store.getAccessToken(hash))?.revokedAt, LATER)
      assert.equal((await store.getAccessToken(otherApp))?.revokedAt, null)
      assert.equal((await store.getAccessToken(otherUser))?.revokedAt, null)
    },
  ],
  [
    'counts each token once when revocations by user, application, code and hash race',
    async (store) => {
      const userId = freshUserId()
      const app = freshAppToken()
      const codeHash = freshHash()
      const hashes = Array.from({ length: 12 }, () => freshHash())
      for (const [i, hash] of hashes.entries()) {
        await store.insertAccessToken(accessToken(hash, { userId, appToken: i % 2 === 0 ? app : freshAppToken(), codeHash: i % 3 === 0 ? codeHash : null }))
      }
      const at = Date.now()
      const counts = await Promise.all([
        ...Array.from({ length: 5 }, () => store.revokeAccessTokens({ userId }, at)),
        ...Array.from({ length: 3 }, () => store.revokeAccessTokens({ appToken: app }, at)),
        ...Array.from({ length: 3 }, () => store.revokeAccessTokens({ userId, appToken: app }, at)),
        ...Array.from({ length: 3 }, () => store.revokeAccessTokens({ codeHash }, at)),
        ...hashes.slice(0, 4).map(async (hash) => ((await store.revokeAccessToken(hash, at)) ? 1 : 0)),
      ])
      assert.equal(
        counts.reduce((a, b) => a + b, 0),
        hashes.length,
        'the revocations together must count every token exactly once',
      )
      assert.deepEqual(await store.listAccessTokens(userId), [], 'no token of the user is left live')
    },
  ],
  [
    "lists a user's live tokens oldest first, leaving out revoked ones and other users'",
    async (store) => {
      const userId = freshUserId()
      const now = Date.now()
      const older = accessToken(freshHash(), { userId, createdAt: now - 2000 })
      const newer = accessToken(freshHash(), { userId, createdAt: now - 1000 })
      const revoked = freshHash()
      await store.insertAccessToken(newer)
      await store.insertAccessToken(older)
      await store.insertAccessToken(accessToken(revoked, { userId }))
      await store.insertAccessToken(accessToken(freshHash()))
      await store.revokeAccessToken(revoked, now)
      assert.deepEqual(await store.listAccessTokens(userId), [older, newer])
      assert.deepEqual(await store.listAccessTokens(freshUserId()), [])
    },
  ],
])

const grants = group('grants', [
  [
    'records a grant once and moves only its last use forward',
    async (store) => {
      const userId = freshUserId()
      const app = freshAppToken()
      assert.equal(await store.getGrant(userId, app), undefined)
      await store.recordGrant(userId, app, 1_000)
      assert.deepEqual(await store.getGrant(userId, app), { userId, appToken: app, firstAuthorizedAt: 1_000, lastUsedAt: 1_000 })
      await store.recordGrant(userId, app, 5_000)
      await store.recordGrant(userId, app, 3_000)
      assert.deepEqual(await store.getGrant(userId, app), { userId, appToken: app, firstAuthorizedAt: 1_000, lastUsedAt: 5_000 })
    },
  ],
  [
    "lists a user's grants oldest first and no one else's",
    async (store) => {
      const userId = freshUserId()
      const [a, b] = [freshAppToken(), freshAppToken()]
      await store.recordGrant(userId, b, 2_000)
      await store.recordGrant(userId, a, 1_000)
      await store.recordGrant(freshUserId(), a, 500)
      assert.deepEqual(await store.listGrants(userId), [
        { userId, appToken: a, firstAuthorizedAt: 1_000, lastUsedAt: 1_000 },
        { userId, appToken: b, firstAuthorizedAt: 2_000, lastUsedAt: 2_000 },
      ])
      assert.deepEqual(await store.listGrants(freshUserId()), [])
    },
  ],
  [
    'forgets a grant once, and a later one starts afresh',
    async (store) => {
      const userId = freshUserId()
      const app = freshAppToken()
      await store.recordGrant(userId, app, 1_000)
      assert.equal(await store.deleteGrant(userId, app), true)
      assert.equal(await store.deleteGrant(userId, app), false)
      assert.equal(await store.getGrant(userId, app), undefined)
      await store.recordGrant(userId, app, 9_000)
      assert.equal((await store.getGrant(userId, app))?.firstAuthorizedAt, 9_000)
    },
  ],
  [
    'notes a use of a grant only while it exists: moves its last use forward, and never creates one',
    async (store) => {
      const userId = freshUserId()
      const app = freshAppToken()
      await store.touchGrant(userId, app, 2_000)
      assert.equal(await store.getGrant(userId, app), undefined, 'touching a grant that was never recorded must not create it')
      await store.recordGrant(userId, app, 1_000)
      await store.touchGrant(userId, app, 5_000)
      await store.touchGrant(userId, app, 3_000)
      assert.deepEqual(await store.getGrant(userId, app), { userId, appToken: app, firstAuthorizedAt: 1_000, lastUsedAt: 5_000 })
      await store.deleteGrant(userId, app)
      await store.touchGrant(userId, app, 9_000)
      assert.equal(await store.getGrant(userId, app), undefined, 'touching a deleted grant must not bring it back')
    },
  ],
  [
    'leaves no grant alive when uses of it race its revocation',
    async (store) => {
      // A revoked application must stay revoked: a use noted meanwhile (a read of the grant,
      // then a write) would bring the grant back, and with it the skipped consent.
      for (let round = 0; round < 10; round++) {
        const userId = freshUserId()
        const app = freshAppToken()
        await store.recordGrant(userId, app, 1_000)
        const touch = (i: number) => store.touchGrant(userId, app, 2_000 + i)
        await Promise.all([...Array.from({ length: 10 }, (_, i) => touch(i)), store.deleteGrant(userId, app), ...Array.from({ length: 10 }, (_, i) => touch(10 + i))])
        assert.equal(await store.getGrant(userId, app), undefined, `round ${round}: the grant is alive again after its deletion`)
        assert.deepEqual(await store.listGrants(userId), [])
      }
    },
  ],
  [
    'keeps one grant with the latest use when many records of it race',
    async (store) => {
      const userId = freshUserId()
      const app = freshAppToken()
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.recordGrant(userId, app, 1_000 + i)))
      const list = await store.listGrants(userId)
      assert.equal(list.length, 1)
      assert.equal(list[0]?.lastUsedAt, 1_019)
    },
  ],
])

const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'

const codes = group('authorization codes', [
  [
    'saves and finds a code by its hash, and refuses a duplicate',
    async (store) => {
      const hash = freshHash()
      const record = code(hash, { codeChallenge: CHALLENGE })
      await store.insertAuthorizationCode(record)
      assert.deepEqual(await store.getAuthorizationCode(hash), record)
      assert.equal(await store.getAuthorizationCode(freshHash()), undefined)
      await assert.rejects(async () => store.insertAuthorizationCode(code(hash)), 'a duplicate code hash must throw')
    },
  ],
  [
    'consumes a code once and remembers when',
    async (store) => {
      const hash = freshHash()
      await store.insertAuthorizationCode(code(hash))
      assert.equal(await store.consumeAuthorizationCode(hash, LATER), true)
      assert.equal(await store.consumeAuthorizationCode(hash, LATEST), false)
      assert.equal((await store.getAuthorizationCode(hash))?.usedAt, LATER)
      assert.equal(await store.consumeAuthorizationCode(freshHash(), 1), false)
    },
  ],
  [
    'lets exactly one of 50 concurrent consumers win',
    async (store) => {
      const hash = freshHash()
      await store.insertAuthorizationCode(code(hash))
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => store.consumeAuthorizationCode(hash, LATER + i)))
      assert.equal(results.filter(Boolean).length, 1, 'consumers told they won')
      assert.equal((await store.getAuthorizationCode(hash))?.usedAt, LATER + results.indexOf(true), 'usedAt is the winner’s')
    },
  ],
])

const sessions = group('sessions', [
  [
    'saves, finds and deletes a session once',
    async (store) => {
      const hash = freshHash()
      const record = session(hash)
      await store.insertSession(record)
      assert.deepEqual(await store.getSession(hash), record)
      assert.equal(await store.getSession(freshHash()), undefined)
      assert.equal(await store.deleteSession(hash), true)
      assert.equal(await store.getSession(hash), undefined)
      assert.equal(await store.deleteSession(hash), false)
    },
  ],
  [
    "keeps only a user's newest sessions when trimmed (ties by hash), and no other user's are touched",
    async (store) => {
      const userId = freshUserId()
      const now = Date.now()
      const hashes = Array.from({ length: 5 }, () => freshHash())
      for (const [i, hash] of hashes.entries()) await store.insertSession(session(hash, { userId, createdAt: now - 5000 + i * 1000 }))
      // Two sessions of the same instant: the greater hash counts as the newer.
      const tied = [freshHash(), freshHash()].sort()
      for (const hash of tied) await store.insertSession(session(hash, { userId, createdAt: now - 10_000 }))
      const bystander = freshHash()
      await store.insertSession(session(bystander, { createdAt: now - 99_000 }))
      assert.equal(await store.trimSessions(userId, 6), 1, 'sessions deleted keeping 6 of 7')
      assert.equal(await store.getSession(tied[0]!), undefined, 'of two sessions created together, the lower hash goes first')
      assert.notEqual(await store.getSession(tied[1]!), undefined)
      assert.equal(await store.trimSessions(userId, 2), 4, 'sessions deleted keeping 2 of 6')
      for (const hash of [tied[1]!, ...hashes.slice(0, 3)]) assert.equal(await store.getSession(hash), undefined)
      for (const hash of hashes.slice(3)) assert.notEqual(await store.getSession(hash), undefined)
      assert.notEqual(await store.getSession(bystander), undefined, "another user's session is kept")
      assert.equal(await store.trimSessions(userId, 2), 0)
    },
  ],
  [
    'counts each session once when trims of one user race',
    async (store) => {
      const userId = freshUserId()
      const now = Date.now()
      for (let i = 0; i < 8; i++) await store.insertSession(session(freshHash(), { userId, createdAt: now - i * 1000 }))
      const counts = await Promise.all(Array.from({ length: 6 }, () => store.trimSessions(userId, 2)))
      assert.equal(
        counts.reduce((a, b) => a + b, 0),
        6,
        'sessions deleted by all trims together',
      )
    },
  ],
])


const expiry = group('expiry', [
  [
    'keeps codes, tokens and sessions until they expire, and after that gives them back unchanged or not at all',
    async (store) => {
      const userId = freshUserId()
      const now = Date.now()
      const expiresAt = now + SHORT_TTL_MS
      const shortCode = code(freshHash(), { userId, expiresAt })
      const shortToken = accessToken(freshHash(), { userId, expiresAt, createdAt: now })
      const shortSession = session(freshHash(), { userId, expiresAt })
      const liveToken = accessToken(freshHash(), { userId, createdAt: now + 1 })
      const liveSession = session(freshHash(), { userId })
      await store.insertAuthorizationCode(shortCode)
      await store.insertAccessToken(shortToken)
      await store.insertSession(shortSession)
      await store.insertAccessToken(liveToken)
      await store.insertSession(liveSession)
      // Before they expire, all are there: a store-side TTL must not drop them early. A read
      // that returned after expiresAt (a machine too busy) proves nothing, and is not judged.
      const beforeExpiry = async <T>(read: () => Awaitable<T>, judge: (value: T) => void) => {
        const value = await read()
        if (Date.now() < expiresAt) judge(value)
      }
      await beforeExpiry(
        () => store.getAuthorizationCode(shortCode.codeHash),
        (found) => assert.deepEqual(found, shortCode, 'a code is kept until it expires'),
      )
      await beforeExpiry(
        () => store.getAccessToken(shortToken.tokenHash),
        (found) => assert.deepEqual(found, shortToken, 'a token is kept until it expires'),
      )
      await beforeExpiry(
        () => store.getSession(shortSession.sessionHash),
        (found) => assert.deepEqual(found, shortSession, 'a session is kept until it expires'),
      )
      await beforeExpiry(
        () => store.listAccessTokens(userId),
        (live) => assert.deepEqual(live, [shortToken, liveToken], 'a token is listed as live until it expires'),
      )
      await sleep(expiresAt - Date.now() + 100)
      // The gate checks expiresAt itself: a store may drop an expired record or return it as saved.
      const gone = <T>(found: T | undefined, saved: T, what: string) => {
        if (found !== undefined) assert.deepEqual(found, saved, `an expired ${what} is either gone or unchanged`)
      }
      gone(await store.getAuthorizationCode(shortCode.codeHash), shortCode, 'code')
      gone(await store.getAccessToken(shortToken.tokenHash), shortToken, 'token')
      gone(await store.getSession(shortSession.sessionHash), shortSession, 'session')
      assert.deepEqual(await store.listAccessTokens(userId), [liveToken], 'an expired token is not listed as live')
      assert.deepEqual(await store.getSession(liveSession.sessionHash), liveSession)
    },
  ],
])

/** Every record check, in the order they run. */
export const recordChecks: readonly StoreCheck[] = [...applications, ...users, ...apiKeys, ...accessTokens, ...grants, ...codes, ...sessions, ...expiry]
