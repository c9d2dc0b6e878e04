/**
 * The platform's API key endpoints through the core (`gate.handle`): list parameters,
 * keyset pagination and sorting in the store, the `API_KEY.*` errors in the platform's
 * body, the cap, the options. The HTTP behaviour in every adapter is in adapters.test.ts.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createGate, MemoryStore, type GateOptions, type GateResponse } from '../src/index.js'
import { apiKeyListQuery } from '../src/endpoints/api-keys.js'
import { coreRequest } from './support/requests.js'

interface KeyJson {
  keyName: string
  keyId: string
  keySecret?: string
  createdAtTimestamp: string
  lastUsedAtTimestamp?: string
  deletedAtTimestamp?: string
  owner: { id: string; displayName: string; email: string }
}

afterEach(() => {
  vi.useRealTimers()
})

const PASSWORD = 'correct horse battery'

/** A gate, and Ada managing her own keys as the user herself: her password over Basic, with the portal's app token. */
async function setUp(options: GateOptions = {}) {
  const gate = createGate({ throttle: false, basic: { scrypt: { logN: 10 } }, ...options })
  const { appToken } = await gate.applications.register({ name: 'Portal' })
  const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada Lovelace', email: 'ada@example.org' })
  const password = `Basic ${Buffer.from(`ada:${PASSWORD}`).toString('base64')}`
  const send = async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<GateResponse> => {
    const outcome = await gate.handle(
      coreRequest({
        method,
        url,
        headers: { authorization: password, 'x-app-token': appToken, ...headers },
        readBody: async () => ({ kind: 'parsed', value: body }),
      }),
    )
    if (outcome.type !== 'respond') throw new Error(`the gate let ${method} ${url} through`)
    return outcome.response
  }
  const json = (response: GateResponse) => JSON.parse(response.body) as unknown
  const create = async (keyName: string): Promise<KeyJson> => {
    const response = await send('POST', '/api/api_keys', { keyName })
    expect(response.status).toBe(200)
    return json(response) as KeyJson
  }
  const list = async (query = ''): Promise<KeyJson[]> => {
    const response = await send('GET', `/api/api_keys${query}`)
    expect(response.status).toBe(200)
    return json(response) as KeyJson[]
  }
  return { gate, ada, appToken, send, json, create, list }
}

describe('the API key endpoints', () => {
  it('shows a new key once with its secret, then never again', async () => {
    const { ada, send, json, create } = await setUp()
    const created = await create('  Nightly ETL  ')
    expect(created).toMatchObject({ keyName: 'Nightly ETL', owner: { id: ada.id, displayName: 'Ada Lovelace', email: 'ada@example.org' } })
    expect(created.keySecret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(created.createdAtTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect(created).not.toHaveProperty('lastUsedAtTimestamp')
    expect(created).not.toHaveProperty('deletedAtTimestamp')
    const shown = await send('GET', `/api/api_keys/${created.keyId}`)
    expect(shown.headers['cache-control']).toBe('private, no-store')
    expect(json(shown)).toEqual({ ...created, keySecret: undefined })
    expect(shown.body).not.toMatch(/keySecret/)
  })

  it('pages through keys with seek, in the order asked for', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.UTC(2026, 0, 1))
    const { create, list } = await setUp()
    const names = ['delta', 'Alpha', 'charlie', 'bravo', 'echo']
    for (const name of names) {
      await create(name)
      vi.setSystemTime(Date.now() + 1000)
    }
    const first = await list('?limit=2')
    expect(first.map((k) => k.keyName)).toEqual(['delta', 'Alpha'])
    const second = await list(`?limit=2&seek=${first[1]?.keyId}`)
    expect(second.map((k) => k.keyName)).toEqual(['charlie', 'bravo'])
    const third = await list(`?limit=2&seek=${second[1]?.keyId}`)
    expect(third.map((k) => k.keyName)).toEqual(['echo'])
    // Names compare by code units: upper case first.
    expect((await list('?sortBy=name&sortOrder=desc')).map((k) => k.keyName)).toEqual(['echo', 'delta', 'charlie', 'bravo', 'Alpha'])
    expect((await list('?sortBy=created_at&sortOrder=DESC&limit=1')).map((k) => k.keyName)).toEqual(['echo'])
    expect((await list('?nameSearch=HAR')).map((k) => k.keyName)).toEqual(['charlie'])
    expect((await list(`?nameSearch=${first[0]?.keyId}`)).map((k) => k.keyName)).toEqual(['delta'])
    expect(await list('?limit=10')).toHaveLength(5)
    expect(await list('?seek=zzzzzzzzzzzzzzzzzzzzzzzzz')).toEqual([])
  })

  it('lists a deleted key only with includeDeleted, sorted by when it was deleted', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.UTC(2026, 0, 1))
    const { send, json, create, list } = await setUp()
    const a = await create('a')
    const b = await create('b')
    await create('c')
    vi.setSystemTime(Date.UTC(2026, 0, 2))
    const deletedB = json(await send('DELETE', `/api/api_keys/${b.keyId}`)) as KeyJson
    expect(deletedB.deletedAtTimestamp).toBe('2026-01-02T00:00:00.000Z')
    vi.setSystemTime(Date.UTC(2026, 0, 3))
    await send('DELETE', `/api/api_keys/${a.keyId}`)
    expect((await list()).map((k) => k.keyName)).toEqual(['c'])
    expect((await list('?includeDeleted=true&sortBy=deleted_at&sortOrder=desc')).map((k) => k.keyName)).toEqual(['a', 'b', 'c'])
    const again = await send('DELETE', `/api/api_keys/${a.keyId}`)
    expect(again.status).toBe(410)
    expect(json(again)).toMatchObject({ code: 'API_KEY.TOKEN_DELETED', error: true })
    expect(json(await send('GET', `/api/api_keys/${a.keyId}`))).toMatchObject({ keyName: 'a', deletedAtTimestamp: '2026-01-03T00:00:00.000Z' })
  })

  it('sorts by last use, which is written at most once a day', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const monday9 = Date.UTC(2026, 0, 5, 9)
    vi.setSystemTime(monday9)
    const { gate, appToken, create, list } = await setUp()
    const used = await create('used')
    await create('never used')
    const useKey = async () => {
      const basic = `Basic ${Buffer.from(`${used.keyId}:${used.keySecret}`).toString('base64')}`
      expect(await gate.handle(coreRequest({ headers: { authorization: basic, 'x-app-token': appToken } }))).toMatchObject({ type: 'next' })
      await new Promise((resolve) => setImmediate(resolve)) // the write runs in the background
    }
    await useKey()
    vi.setSystemTime(monday9 + 23 * 3_600_000)
    await useKey()
    const sorted = await list('?sortBy=last_used_at&sortOrder=desc')
    expect(sorted.map((k) => [k.keyName, k.lastUsedAtTimestamp])).toEqual([
      ['used', '2026-01-05T09:00:00.000Z'],
      ['never used', undefined],
    ])
    vi.setSystemTime(monday9 + 24 * 3_600_000 + 60_000)
    await useKey()
    expect((await list('?sortBy=last_used_at&sortOrder=desc'))[0]?.lastUsedAtTimestamp).toBe('2026-01-06T09:01:00.000Z')
  })

  it('answers bad list parameters with the platform codes', async () => {
    const { send, json } = await setUp()
    for (const [query, status, code] of [
      ['?limit=101', 400, 'API_KEY.INVALID_PAGE_SIZE'],
      ['?limit=0', 400, 'API_KEY.INVALID_PAGE_SIZE'],
      ['?limit=ten', 400, 'API_KEY.INVALID_PAGE_SIZE'],
      ['?sortBy=secret', 400, 'API_KEY.INVALID_SORT_COLUMN'],
      ['?sortBy=constructor', 400, 'API_KEY.INVALID_SORT_COLUMN'],
      ['?sortOrder=sideways', 400, 'invalid_request'],
      ['?includeDeleted=yes', 400, 'invalid_request'],
      ['?limit=5&limit=6', 400, 'invalid_request'],
    ] as const) {
      const response = await send('GET', `/api/api_keys${query}`)
      expect([query, response.status, json(response)]).toEqual([query, status, { code, error: true, message: expect.any(String) }])
      expect(response.headers['x-error-code']).toBe(code)
    }
  })

  it('refuses a missing, long or taken name, and one key past the cap', async () => {
    const { send, json, create } = await setUp({ apiKeyEndpoints: { maxActiveKeys: 2 } })
    const refuse = async (body: unknown, status: number, code: string) => {
      const response = await send('POST', '/api/api_keys', body)
      expect([response.status, (json(response) as { code: string }).code]).toEqual([status, code])
    }
    await refuse({}, 400, 'API_KEY.MISSING_FIELD')
    await refuse({ keyName: '   ' }, 400, 'API_KEY.MISSING_FIELD')
    await refuse({ keyName: 'x'.repeat(201) }, 400, 'API_KEY.NAME_TOO_LONG')
    await refuse({ keyName: 7 }, 400, 'invalid_request')
    const first = await create('etl')
    await refuse({ keyName: 'etl' }, 409, 'API_KEY.NAME_TAKEN')
    await create('dashboard')
    await refuse({ keyName: 'third' }, 409, 'API_KEY.TOKEN_LIMIT_REACHED')
    // A deleted key frees its place and its name.
    await send('DELETE', `/api/api_keys/${first.keyId}`)
    await create('etl')
  })

  it('keeps the active-key cap when 60 creates race: 95 active and a cap of 100 leave exactly 100', async () => {
    const { gate, ada, send, json, list } = await setUp({ apiKeyEndpoints: { maxActiveKeys: 100 }, selfServiceBudget: false })
    for (let i = 0; i < 95; i++) await gate.apiKeys.create(ada.id, { name: `key ${i}` })
    const responses = await Promise.all(Array.from({ length: 60 }, (_, i) => send('POST', '/api/api_keys', { keyName: `racer ${i}` })))
    expect(responses.filter((r) => r.status === 200)).toHaveLength(5)
    expect(responses.filter((r) => r.status === 409 && (json(r) as { code: string }).code === 'API_KEY.TOKEN_LIMIT_REACHED')).toHaveLength(55)
    expect(await list('?limit=100')).toHaveLength(100)
    // Two creates of one name racing: one key.
    await send('DELETE', `/api/api_keys/${(await list('?limit=1'))[0]!.keyId}`)
    await send('DELETE', `/api/api_keys/${(await list('?limit=1'))[0]!.keyId}`)
    const twins = await Promise.all([0, 1].map(() => send('POST', '/api/api_keys', { keyName: 'twin' })))
    expect(twins.map((r) => r.status).sort()).toEqual([200, 409])
    expect(await list('?nameSearch=twin')).toHaveLength(1)
  })

  it('deletes a key once when two deletes race: the other is told it was deleted already', async () => {
    const { send, create } = await setUp()
    const key = await create('once')
    const statuses = (await Promise.all([0, 1].map(() => send('DELETE', `/api/api_keys/${key.keyId}`)))).map((r) => r.status)
    expect(statuses.sort()).toEqual([200, 410])
  })

  it('caps all keys of a user, deleted ones within the retention included, and purges deleted keys after it', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.UTC(2026, 0, 1))
    const { send, json, create, list } = await setUp({ store: new MemoryStore(), apiKeyEndpoints: { maxActiveKeys: 2, maxKeys: 3, deletedKeyRetentionMs: 7 * 86_400_000 } })
    const a = await create('a')
    vi.setSystemTime(Date.UTC(2026, 0, 1, 1))
    const b = await create('b')
    await send('DELETE', `/api/api_keys/${a.keyId}`)
    vi.setSystemTime(Date.UTC(2026, 0, 1, 2))
    await create('c')
    await send('DELETE', `/api/api_keys/${b.keyId}`)
    const refused = await send('POST', '/api/api_keys', { keyName: 'd' })
    expect([refused.status, (json(refused) as { code: string }).code]).toEqual([409, 'API_KEY.TOKEN_LIMIT_REACHED'])
    vi.setSystemTime(Date.UTC(2026, 0, 7))
    expect((await list('?includeDeleted=true')).map((k) => k.keyName)).toEqual(['a', 'b', 'c'])
    vi.setSystemTime(Date.UTC(2026, 0, 8, 3))
    expect((await list('?includeDeleted=true')).map((k) => k.keyName)).toEqual(['c'])
    expect((await send('GET', `/api/api_keys/${a.keyId}`)).status).toBe(404)
    await create('d')
  })

  it('shows and deletes only the user’s own keys', async () => {
    const { gate, send, json } = await setUp()
    const grace = await gate.users.create({ username: 'grace', displayName: 'Grace', email: 'grace@example.org' })
    const hers = await gate.apiKeys.create(grace.id, { name: 'hers' })
    for (const [method, path] of [
      ['GET', `/api/api_keys/${hers.keyId}`],
      ['DELETE', `/api/api_keys/${hers.keyId}`],
      ['GET', '/api/api_keys/not-a-key-id'],
      ['DELETE', '/api/api_keys/%E0%A4%A'],
    ] as const) {
      const response = await send(method, path)
      expect([path, response.status, json(response)]).toEqual([path, 404, { code: 'API_KEY.NOT_FOUND', error: true, message: 'No API key with this id' }])
    }
    expect((await gate.apiKeys.find(hers.keyId))?.revokedAt).toBeNull()
    const listed = await send('GET', `/api/api_keys?nameSearch=${hers.keyId}`)
    expect(json(listed)).toEqual([])
  })

  it('answers a store that fails with 503, never a 500', async () => {
    class FailingKeys extends MemoryStore {
      override listApiKeys(): never {
        throw new Error('connection reset')
      }
      override insertApiKey(): never {
        throw new Error('connection reset')
      }
    }
    const { send, json } = await setUp({ store: new FailingKeys() })
    const response = await send('GET', '/api/api_keys')
    expect([response.status, (json(response) as { code: string }).code]).toEqual([503, 'service_unavailable'])
    expect((await send('POST', '/api/api_keys', { keyName: 'x' })).status).toBe(503)
  })

  it('answers other methods with 405 and Allow', async () => {
    const { send } = await setUp()
    const collection = await send('PUT', '/api/api_keys')
    expect([collection.status, collection.headers.allow]).toEqual([405, 'GET, POST, HEAD'])
    const item = await send('POST', '/api/api_keys/abc')
    expect([item.status, item.headers.allow]).toEqual([405, 'GET, DELETE, HEAD'])
  })

  it('serves the endpoints at another path, or not at all', async () => {
    const moved = await setUp({ apiKeyEndpoints: { path: '/api/v2/keys' } })
    expect((await moved.send('GET', '/api/v2/keys')).status).toBe(200)
    expect(await moved.gate.handle(coreRequest({ url: '/api/api_keys' }))).toMatchObject({ type: 'next' })
    const off = createGate({ apiKeyEndpoints: false })
    expect(await off.handle(coreRequest({ url: '/api/api_keys' }))).toMatchObject({ type: 'next' })
    expect(await off.handle(coreRequest({ url: '/api/api_keys/abc' }))).toMatchObject({ type: 'next' })
  })

  it('refuses bad options with a TypeError naming them', () => {
    expect(() => createGate({ apiKeyEndpoints: { path: 'api/keys' } })).toThrow(/apiKeyEndpoints\.path must be a path/)
    expect(() => createGate({ apiKeyEndpoints: { maxActiveKeys: 0 } })).toThrow(/apiKeyEndpoints\.maxActiveKeys must be a positive integer/)
    expect(() => createGate({ apiKeyEndpoints: { maxKeys: 50 } })).toThrow(/apiKeyEndpoints\.maxKeys \(50\) must be at least maxActiveKeys \(100\)/)
    expect(() => createGate({ apiKeyEndpoints: { deletedKeyRetentionMs: 0 } })).toThrow(/apiKeyEndpoints\.deletedKeyRetentionMs must be a positive integer/)
    expect(() => createGate({ apiKeyEndpoints: { path: '/users/current.xml' } })).toThrow(/configured for two endpoints/)
    expect(() => createGate({ connectedApps: { page: '/oauth/grants/' } })).toThrow(/connectedApps\.page must be a path/)
  })
})

describe('apiKeyListQuery', () => {
  it('maps the platform’s parameters onto the store query, with the defaults', () => {
    expect(apiKeyListQuery('/api/api_keys')).toEqual({ limit: 10, sortBy: 'createdAt', order: 'asc', after: undefined, nameSearch: undefined, includeRevoked: false })
    expect(apiKeyListQuery('/api/api_keys?limit=100&sortBy=deleted_at&sortOrder=desc&seek=abc&nameSearch=et%20l&includeDeleted=true')).toEqual({
      limit: 100,
      sortBy: 'revokedAt',
      order: 'desc',
      after: 'abc',
      nameSearch: 'et l',
      includeRevoked: true,
    })
    expect(apiKeyListQuery('/x?sortBy=last_used_at').sortBy).toBe('lastUsedAt')
  })
})
