/**
 * Importing credentials that exist elsewhere (a portal moving to open-data-gate): an
 * application keeps its app token and secret token, an API key its id and secret. They
 * are validated and stored hashed exactly as generated ones are.
 */
import { describe, expect, it } from 'vitest'
import { createGate, MemoryStore, PlatformError } from '../src/index.js'

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

describe('importing existing app tokens and API keys', () => {
  it('keeps an imported app token and secret: the token is accepted and the secret verifies, stored only as a hash', async () => {
    const store = new MemoryStore()
    const gate = createGate({ store })
    const secretToken = 'an-existing-secret-token-0123456789'
    const registered = await gate.applications.register({ name: 'Legacy', appToken: 'LegacyToken_123', secretToken })
    expect(registered).toMatchObject({ appToken: 'LegacyToken_123', secretToken })
    expect(await gate.applications.verifySecret('LegacyToken_123', secretToken)).toBe(true)
    expect(JSON.stringify(store.getApplication('LegacyToken_123'))).not.toContain(secretToken)
    const outcome = await gate.handle({ method: 'GET', url: '/data', headers: { 'x-app-token': 'LegacyToken_123' }, peerAddress: '127.0.0.1', tls: true })
    expect(outcome).toMatchObject({ type: 'next', context: { application: { name: 'Legacy' } } })
  })

  it('refuses an imported app token that is taken or malformed, and a short secret, before writing anything', async () => {
    const gate = createGate()
    await gate.applications.register({ name: 'First', appToken: 'taken-token' })
    await expect(gate.applications.register({ name: 'Second', appToken: 'taken-token' })).rejects.toMatchObject({ code: 'conflict' })
    await expect(gate.applications.register({ name: 'x', appToken: 'has space' })).rejects.toThrow(/imported appToken must be 1 to 128 letters/)
    await expect(gate.applications.register({ name: 'x', secretToken: 'short' })).rejects.toThrow(/imported secretToken must be 16 to 512 characters/)
    expect((await gate.applications.list()).map((a) => a.name)).toEqual(['First'])
  })

  it('keeps an imported API key id and secret, which then authenticate as Basic credentials', async () => {
    const gate = createGate({ basic: { scrypt: { logN: 10 } } })
    const app = await gate.applications.register({ name: 'probe' })
    const user = await gate.users.create({ username: 'ada', displayName: 'Ada', email: 'ada@example.org' })
    // A real platform key id, with the l, o, 0 and 1 the gate's own ids leave out.
    const keyId = '33a32ov2gl6eh6u6ziushg2uf'
    const keySecret = 'imported-key-secret-abcdefghijklmnop'
    const issued = await gate.apiKeys.create(user.id, { name: 'Imported ETL', keyId, keySecret })
    expect(issued).toMatchObject({ keyId, keySecret, apiKey: { name: 'Imported ETL', userId: user.id } })
    const outcome = await gate.handle({
      method: 'GET',
      url: '/private',
      headers: { authorization: basic(keyId, keySecret), 'x-app-token': app.appToken },
      peerAddress: '127.0.0.1',
      tls: true,
    })
    expect(outcome).toMatchObject({ type: 'next', context: { auth: 'api-key', apiKeyId: keyId, user: { username: 'ada' } } })
    await expect(gate.apiKeys.create(user.id, { name: 'again', keyId })).rejects.toBeInstanceOf(PlatformError)
    await expect(gate.apiKeys.create(user.id, { name: 'x', keyId: 'ABC' })).rejects.toThrow(/imported keyId must be 25 lower-case letters and digits/)
    await expect(gate.apiKeys.create(user.id, { name: 'x', keySecret: 'with a space in it ok?' })).rejects.toThrow(/imported keySecret must be 16 to 512/)
    expect((await gate.apiKeys.list(user.id)).map((k) => k.keyId)).toEqual([keyId])
  })
})
