import { Cluster } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGate } from '../src/index.js'
import { RedisStore, redisClientDefaults } from '../src/store/redis/store.js'
import { describeStore } from '../src/testing/index.js'
import { pagesOf, userWithManyKeys } from './redis/key-pages.js'
import { describeSameAsMemoryStore } from './redis/same-as-memory.js'
import { OwnRedisCluster, randomPrefix, redisBinariesAvailable } from './redis/servers.js'

// Ports 17001-17003 of this project's test range (17000-17199).
const available = redisBinariesAvailable('RedisStore on a three-node Redis Cluster')

describe.skipIf(!available)('RedisStore on a three-node Redis Cluster', () => {
  const cluster = new OwnRedisCluster([17001, 17002, 17003])
  const prefix = randomPrefix('cluster')
  let client: Cluster

  beforeAll(async () => {
    try {
      await cluster.start()
    } catch (error) {
      await cluster.stop()
      throw error
    }
    client = new Cluster(cluster.nodes, { enableOfflineQueue: false, enableAutoPipelining: true, redisOptions: redisClientDefaults() })
    client.on('error', () => {})
    await new Promise<void>((resolve) => client.once('ready', () => resolve()))
  }, 30_000)

  afterAll(async () => {
    client?.disconnect()
    await cluster.stop()
  })

  describeStore('RedisStore (Cluster)', () => new RedisStore({ client, prefix }), { describe, it, after: afterAll, cleanup: (store) => store.close() })

  describeSameAsMemoryStore('RedisStore (Cluster)', () => new RedisStore({ client, prefix }))

  it('authenticates tokens and keys with one call per record, where a request\'s keys live in several slots, and refuses revoked ones', async () => {
    const store = new RedisStore({ client, prefix })
    // Its token, user and rate keys are on several nodes: no one-script lookup.
    expect(store.lookupRequest).toBeUndefined()
    const gate = createGate({ store, trustProxy: 'loopback' })
    try {
      const { appToken } = await gate.applications.register({ name: 'cluster' })
      const user = await gate.users.create({ username: `cluster-${Date.now()}`, displayName: 'C', email: 'c@example.org' })
      const { accessToken } = await gate.tokens.issue({ userId: user.id, appToken })
      const { keyId, keySecret } = await gate.apiKeys.create(user.id, { name: 'cluster' })
      const ask = async (authorization: string, app?: string) => {
        const headers: Record<string, string> = { 'x-forwarded-proto': 'https', authorization, ...(app === undefined ? {} : { 'x-app-token': app }) }
        const outcome = await gate.handle({ method: 'GET', url: '/x', headers, peerAddress: '127.0.0.1', tls: false })
        return outcome.type === 'next' ? outcome.context.auth : outcome.response.status
      }
      const key = `Basic ${Buffer.from(`${keyId}:${keySecret}`).toString('base64')}`
      for (let i = 0; i < 2; i++) expect([await ask(`Bearer ${accessToken}`), await ask(`OAuth ${accessToken}`, appToken), await ask(key, appToken)]).toEqual(['oauth', 'oauth', 'api-key'])
      await gate.tokens.revoke(accessToken)
      await gate.apiKeys.revoke(keyId)
      expect([await ask(`Bearer ${accessToken}`), await ask(key, appToken)]).toEqual([401, 401])
    } finally {
      await gate.close()
    }
  })

  it("reads a page of 20 of a user's 5,000 keys with a bounded number of commands, counted by INFO commandstats", async () => {
    const store = new RedisStore({ client, prefix })
    const masters = client.nodes('master')
    /** Every command the masters ran since the last reset, a script's own included (not the stats' own). */
    const commandsRun = async () => {
      let total = 0
      for (const node of masters) {
        const stats = await node.info('commandstats')
        for (const [, name, calls] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (!/^(info|config|cluster|ping)/.test(name!)) total += Number(calls)
      }
      return total
    }
    const resetStats = () => Promise.all(masters.map((node) => node.config('RESETSTAT')))
    try {
      const userId = await userWithManyKeys(store, 5000, 30)
      for (const read of pagesOf(userId)) {
        await resetStats()
        const first = await read(store)
        const firstCommands = await commandsRun()
        await resetStats()
        const next = await read(store, first.at(-1)!.keyId)
        const nextCommands = await commandsRun()
        expect(first).toHaveLength(20)
        expect(next.length).toBeGreaterThan(0)
        expect([firstCommands, nextCommands].every((n) => n <= 40), `commands per page: ${firstCommands}, ${nextCommands}`).toBe(true)
      }
    } finally {
      await store.close()
    }
  }, 120_000)

  it('spreads rate keys over the masters, and runs every step as one script on the key’s own node', async () => {
    const store = new RedisStore({ client, prefix })
    for (let i = 0; i < 30; i++) expect((await store.consumeRate(`spread-${i}`, 5, 60_000, 1)).remaining).toBe(4)
    const perNode = await Promise.all(client.nodes('master').map((node) => node.dbsize()))
    expect(perNode.filter((n) => n > 0).length).toBe(3)
    await store.close()
  })
})
