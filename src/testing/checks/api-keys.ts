/**
 * The API keys slice: keys saved, paged, patched, revoked once, and the atomic bounds of a user's
 * creates.
 */
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ApiKeyQuery, ApiKeyRecord } from '../../store/store.js'
import { group, type StoreCheck } from '../check.js'
import { apiKey, freshKeyId, freshUserId, LATER, LATEST, SHORT_TTL_MS, T0 } from '../fixtures.js'

const names = (list: ApiKeyRecord[]) => list.map((k) => k.name)

export const apiKeyChecks: readonly StoreCheck[] = group('API keys', ['apiKeys'], [
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
