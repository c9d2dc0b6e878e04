import { describe, expect, it } from 'vitest'
import { createGate, MemoryStore, NotFoundError, PlatformError } from '../src/index.js'
import { coreRequest } from './support/requests.js'
import { sha256 } from '../src/secrets/tokens.js'

const FAST = { basic: { scrypt: { logN: 10 } } }

describe('users', () => {
  it('creates an account with a platform-style id and only a scrypt hash of the password', async () => {
    const store = new MemoryStore()
    const gate = createGate({ store, ...FAST })
    const user = await gate.users.create({ username: 'Ada', password: 'correct horse battery', displayName: 'Ada Lovelace', email: 'ada@example.org', rights: ['read_private'] })
    expect(user.id).toMatch(/^[2-9a-km-np-z]{4}-[2-9a-km-np-z]{4}$/)
    expect(user).toMatchObject({ username: 'ada', screenName: 'Ada Lovelace', hasPassword: true, rights: ['read_private'] })
    expect(user).not.toHaveProperty('passwordHash')
    const stored = store.getUser(user.id)
    expect(stored?.passwordHash).toMatch(/^\$scrypt\$ln=10,/)
    expect(JSON.stringify(stored)).not.toContain('correct horse')
  })

  it('creates an account without a password, for single sign-on users', async () => {
    const gate = createGate(FAST)
    const user = await gate.users.create({ username: 'sso-user', displayName: 'S', email: 's@example.org' })
    expect(user.hasPassword).toBe(false)
  })

  it('refuses a taken username, compared case-insensitively, with conflict', async () => {
    const gate = createGate(FAST)
    await gate.users.create({ username: 'ada', displayName: 'A', email: 'a@example.org' })
    await expect(gate.users.create({ username: 'ADA', displayName: 'A', email: 'a@example.org' })).rejects.toMatchObject({ code: 'conflict', status: 409 })
    expect((await gate.users.findByUsername('AdA'))?.username).toBe('ada')
  })

  it.each([
    ['a zero-width space', 'ada\u200b', TypeError, /U\+200B is not allowed/],
    ['a soft hyphen', 'a\u00adda', TypeError, /U\+00AD is not allowed/],
    ['a word joiner', 'ada\u2060', TypeError, /U\+2060 is not allowed/],
    ['a right-to-left override', '\u202eada', TypeError, /U\+202E is not allowed/],
    ['a Cyrillic а', '\u0430da', PlatformError, /looks like one that is taken/],
    ['a fullwidth ａ', '\uff41da', PlatformError, /is taken/],
    ['all fullwidth capitals', '\uff21\uff24\uff21', PlatformError, /is taken/],
    ['a digit one for an l', 'adal1', PlatformError, /looks like one that is taken/],
  ])('refuses a username that looks like an existing one (%s) as a second account', async (_, username, type, message) => {
    const store = new MemoryStore()
    const gate = createGate({ store, ...FAST })
    await gate.users.create({ username: 'ada', displayName: 'Ada', email: 'a@example.org' })
    await gate.users.create({ username: 'adall', displayName: 'Ada', email: 'a@example.org' })
    const refused = gate.users.create({ username, displayName: 'Ada', email: 'mallory@example.org' })
    await expect(refused).rejects.toThrow(type)
    await expect(refused).rejects.toThrow(message)
    expect((await gate.users.list()).map((u) => u.username)).toEqual(['ada', 'adall'])
  })

  it('accepts names in every script, in NFC, lower case, and takes each only once', async () => {
    const gate = createGate(FAST)
    for (const [given, stored] of [
      ['Jose\u0301', 'jos\u00e9'],
      ['\u0141ukasz', '\u0142ukasz'],
      ['\u5c71\u7530', '\u5c71\u7530'],
      ['\u0395\u03bb\u03ad\u03bd\u03b7', '\u03b5\u03bb\u03ad\u03bd\u03b7'],
    ] as const) {
      expect((await gate.users.create({ username: given, displayName: 'X', email: 'x@example.org' })).username).toBe(stored)
      await expect(gate.users.create({ username: stored.toUpperCase(), displayName: 'X', email: 'x@example.org' })).rejects.toMatchObject({ code: 'conflict' })
    }
  })

  it('signs in with a width or case variant of the username, and finds the account by it', async () => {
    const gate = createGate(FAST)
    const user = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'a@example.org' })
    const app = await gate.applications.register({ name: 'probe' })
    for (const typed of ['ADA', '\uff21\uff44\uff41', 'Ada']) {
      const basic = `Basic ${Buffer.from(`${typed}:correct horse battery`).toString('base64')}`
      expect(await gate.handle(coreRequest({ headers: { authorization: basic, 'x-app-token': app.appToken } }))).toMatchObject({ type: 'next', context: { user: { id: user.id } } })
      expect((await gate.users.findByUsername(typed))?.id).toBe(user.id)
    }
  })

  it('keeps signing in accounts saved before these rules, each with exactly the name it always typed', async () => {
    const store = new MemoryStore()
    const gate = createGate({ store, ...FAST })
    const ada = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'a@example.org' })
    const hash = store.getUser(ada.id)?.passwordHash ?? null
    // As an earlier release stored them: NFC and lower case only, no skeleton.
    const legacy = { screenName: 'Old', displayName: 'Old', email: 'o@example.org', rights: [], passwordHash: hash, createdAt: 1, updatedAt: 1 }
    store.insertUser({ id: 'old1-0001', username: 'ada\u200b', ...legacy })
    store.insertUser({ id: 'old1-0002', username: '\uff41da', ...legacy })
    const app = await gate.applications.register({ name: 'probe' })
    for (const [typed, id] of [['ada\u200b', 'old1-0001'], ['\uff41da', 'old1-0002'], ['ada', ada.id]]) {
      const basic = `Basic ${Buffer.from(`${typed}:correct horse battery`).toString('base64')}`
      expect(await gate.handle(coreRequest({ headers: { authorization: basic, 'x-app-token': app.appToken } }))).toMatchObject({ type: 'next', context: { user: { id } } })
    }
  })

  it.each([
    [{ username: 'a:b' }, /username must be/],
    [{ username: 'has space' }, /username must be/],
    [{ username: 'abcdefghijkmnpqrstuvwxyz2' }, /must not look like an API key id/],
    [{ password: 'short' }, /password must be a string of 8 to 1024/],
    [{ email: 'not-an-email' }, /email must be/],
    [{ displayName: '' }, /displayName must be/],
  ])('refuses %j with a TypeError', async (override, message) => {
    const gate = createGate(FAST)
    const input = { username: 'ada', displayName: 'A', email: 'a@example.org', ...override }
    await expect(gate.users.create(input)).rejects.toThrow(message)
  })

  it('updates names, email and rights', async () => {
    const gate = createGate(FAST)
    const { id } = await gate.users.create({ username: 'ada', displayName: 'A', email: 'a@example.org' })
    expect(await gate.users.update(id, { displayName: 'Ada L.', rights: ['a', 'a', 'b'] })).toMatchObject({ displayName: 'Ada L.', rights: ['a', 'b'] })
    await expect(gate.users.update('zzzz-zzzz', { displayName: 'x' })).rejects.toMatchObject({ name: 'NotFoundError', code: 'not_found', status: 404 })
    await expect(gate.users.setPassword('zzzz-zzzz', 'a long enough password')).rejects.toThrow(NotFoundError)
  })

  it('deletes an account and revokes its tokens', async () => {
    const gate = createGate(FAST)
    const { id } = await gate.users.create({ username: 'ada', displayName: 'A', email: 'a@example.org' })
    const { appToken } = await gate.applications.register({ name: 'app' })
    const { accessToken } = await gate.tokens.issue({ userId: id, appToken })
    expect(await gate.users.delete(id)).toBe(true)
    expect((await gate.store.getAccessToken(sha256(accessToken)))?.revokedAt).not.toBeNull()
    expect(await gate.users.delete(id)).toBe(false)
  })
})

describe('API keys', () => {
  it('creates a key for a user, showing the secret once and storing its SHA-256', async () => {
    const store = new MemoryStore()
    const gate = createGate({ store, ...FAST })
    const { id } = await gate.users.create({ username: 'ada', displayName: 'A', email: 'a@example.org' })
    const { keyId, keySecret, apiKey } = await gate.apiKeys.create(id, { name: 'nightly ETL' })
    expect(keyId).toMatch(/^[2-9a-km-np-z]{25}$/)
    expect(keySecret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(store.getApiKey(keyId)?.secretHash).toBe(sha256(keySecret))
    expect(apiKey).toEqual({ keyId, userId: id, name: 'nightly ETL', createdAt: expect.any(Number), lastUsedAt: null, revokedAt: null })
  })

  it('lists a user’s keys with revoked ones marked, and refuses to rotate a revoked key', async () => {
    const gate = createGate(FAST)
    const { id } = await gate.users.create({ username: 'ada', displayName: 'A', email: 'a@example.org' })
    const a = await gate.apiKeys.create(id, { name: 'a' })
    const b = await gate.apiKeys.create(id, { name: 'b' })
    expect(await gate.apiKeys.revoke(a.keyId)).toBe(true)
    expect(await gate.apiKeys.revoke(a.keyId)).toBe(false)
    const listed = await gate.apiKeys.list(id)
    expect(listed.map((k) => [k.name, k.revokedAt !== null])).toEqual([['a', true], ['b', false]])
    await expect(gate.apiKeys.rotate(a.keyId)).rejects.toThrow(NotFoundError)
    await expect(gate.apiKeys.rotate('2222222222222222222222222')).rejects.toThrow(/No active API key/)
    const rotated = await gate.apiKeys.rotate(b.keyId)
    expect(rotated?.keyId).toBe(b.keyId)
    expect(rotated?.keySecret).not.toBe(b.keySecret)
  })

  it('refuses a key for an unknown user with not_found', async () => {
    const gate = createGate(FAST)
    await expect(gate.apiKeys.create('zzzz-zzzz', { name: 'x' })).rejects.toMatchObject({ code: 'not_found', status: 404 })
  })
})
