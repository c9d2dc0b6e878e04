import { afterEach, describe, expect, it, vi } from 'vitest'
import { createGate, MemoryStore, NotFoundError } from '../src/index.js'
import { timingSafeEqual } from 'node:crypto'
import type * as Crypto from 'node:crypto'
import { sha256 } from '../src/secrets/tokens.js'
import { applicationSecretMatches } from '../src/management/secret-rotation.js'
import { application } from '../src/testing/fixtures.js'
import { captureWarnings } from './support/warnings.js'

// A pass-through spy on timingSafeEqual, to see which comparisons the secret check makes.
vi.mock('node:crypto', async (original) => {
  const actual = await original<typeof Crypto>()
  return { ...actual, timingSafeEqual: vi.fn(actual.timingSafeEqual) }
})

afterEach(() => {
  vi.useRealTimers()
})

describe('applications', () => {
  it('registers an application and shows its secret token once, storing only a hash', async () => {
    const store = new MemoryStore()
    const gate = createGate({ store })
    const registered = await gate.applications.register({ name: 'Transit dashboard', callbackPrefix: 'https://transit.example/oauth/' })
    expect(registered.appToken).toMatch(/^[A-Za-z0-9_-]{24}$/)
    expect(registered.secretToken).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const stored = store.getApplication(registered.appToken)
    expect(stored?.secretHash).toBe(sha256(registered.secretToken))
    expect(JSON.stringify(stored)).not.toContain(registered.secretToken)
    expect(registered.application).not.toHaveProperty('secretHash')
    expect(await gate.applications.find(registered.appToken)).toEqual(registered.application)
  })

  it('verifies the secret token, and rotating it with no grace retires the old one at once', async () => {
    const gate = createGate()
    const { appToken, secretToken } = await gate.applications.register({ name: 'a' })
    expect(await gate.applications.verifySecret(appToken, secretToken)).toBe(true)
    expect(await gate.applications.verifySecret(appToken, `${secretToken}x`)).toBe(false)
    const next = await gate.applications.rotateSecret(appToken, { graceMs: 0 })
    expect(next).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(await gate.applications.verifySecret(appToken, secretToken)).toBe(false)
    expect(await gate.applications.verifySecret(appToken, next)).toBe(true)
  })

  it('keeps the replaced secret working for 1 hour by default, then refuses it; a second rotation retires the first secret at once', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.UTC(2026, 0, 1))
    const store = new MemoryStore()
    const gate = createGate({ store })
    const { appToken, secretToken: first } = await gate.applications.register({ name: 'a' })
    const second = await gate.applications.rotateSecret(appToken)
    expect(await gate.applications.verifySecret(appToken, first)).toBe(true)
    expect(await gate.applications.verifySecret(appToken, second)).toBe(true)
    expect((await gate.applications.find(appToken))?.previousSecretExpiresAt).toBe(Date.UTC(2026, 0, 1, 1))
    // Only hashes are kept, the previous one included.
    expect(JSON.stringify(store.getApplication(appToken))).not.toContain(first)
    expect(store.getApplication(appToken)?.previousSecretHash).toBe(sha256(first))
    vi.setSystemTime(Date.UTC(2026, 0, 1, 1) - 1)
    expect(await gate.applications.verifySecret(appToken, first)).toBe(true)
    vi.setSystemTime(Date.UTC(2026, 0, 1, 1))
    expect(await gate.applications.verifySecret(appToken, first)).toBe(false)
    expect(await gate.applications.verifySecret(appToken, second)).toBe(true)
    const third = await gate.applications.rotateSecret(appToken, { graceMs: 60_000 })
    expect(await gate.applications.verifySecret(appToken, first)).toBe(false)
    expect(await gate.applications.verifySecret(appToken, second)).toBe(true)
    expect(await gate.applications.verifySecret(appToken, third)).toBe(true)
  })

  it('compares a secret with timingSafeEqual against both the current and the previous hash within the grace, whichever matches', async () => {
    const record = {
      ...application('app', { secretHash: sha256('current-secret-0123456789') }),
      previousSecretHash: sha256('previous-secret-0123456789'),
      previousSecretExpiresAt: Date.now() + 60_000,
    }
    const compare = vi.mocked(timingSafeEqual)
    for (const [secret, matches] of [['current-secret-0123456789', true], ['previous-secret-0123456789', true], ['wrong-secret-0123456789', false]] as const) {
      compare.mockClear()
      expect(applicationSecretMatches(record, secret)).toBe(matches)
      expect(compare).toHaveBeenCalledTimes(2)
    }
    compare.mockClear()
    expect(applicationSecretMatches({ ...record, previousSecretExpiresAt: Date.now() - 1 }, 'previous-secret-0123456789')).toBe(false)
    expect(compare).toHaveBeenCalledTimes(1)
  })

  it('takes the grace from applications.secretGraceMs, and refuses a grace that is not a whole number of ms', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.UTC(2026, 0, 1))
    const gate = createGate({ applications: { secretGraceMs: 1000 } })
    const { appToken, secretToken } = await gate.applications.register({ name: 'a' })
    await gate.applications.rotateSecret(appToken)
    vi.setSystemTime(Date.UTC(2026, 0, 1) + 999)
    expect(await gate.applications.verifySecret(appToken, secretToken)).toBe(true)
    vi.setSystemTime(Date.UTC(2026, 0, 1) + 1000)
    expect(await gate.applications.verifySecret(appToken, secretToken)).toBe(false)
    for (const graceMs of [-1, 1.5, 604_800_001, '0', null]) {
      await expect(gate.applications.rotateSecret(appToken, { graceMs: graceMs as number })).rejects.toThrow(/graceMs must be a whole number of milliseconds from 0 \(retire the old secret now\) to 604800000/)
    }
    expect(() => createGate({ applications: { secretGraceMs: 1.5 } })).toThrow(/applications.secretGraceMs/)
    await expect(gate.applications.rotateSecret('no-such-app')).rejects.toBeInstanceOf(NotFoundError)
  })

  it('bounds the grace of a rotated secret at 7 days, in the gate options and in a rotation', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.UTC(2026, 0, 1))
    expect(() => createGate({ applications: { secretGraceMs: 604_800_001 } })).toThrow(/applications.secretGraceMs must be a whole number of milliseconds from 0 .* to 604800000/)
    const gate = createGate({ applications: { secretGraceMs: 604_800_000 } })
    const { appToken } = await gate.applications.register({ name: 'a' })
    await gate.applications.rotateSecret(appToken, { graceMs: 604_800_000 })
    expect((await gate.applications.find(appToken))?.previousSecretExpiresAt).toBe(Date.UTC(2026, 0, 8))
    await expect(gate.applications.rotateSecret(appToken, { graceMs: 604_800_001 })).rejects.toThrow(TypeError)
  })

  it('records who registered an application and lists one owner\'s only; an operator\'s has no owner', async () => {
    const gate = createGate({ basic: { scrypt: { logN: 10 } } })
    const ada = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'ada@example.org' })
    const bob = await gate.users.create({ username: 'bob', password: 'correct horse battery', displayName: 'Bob', email: 'bob@example.org' })
    const operator = await gate.applications.register({ name: 'Portal' })
    const a = await gate.applications.register({ name: 'Ada\'s', ownerId: ada.id })
    await gate.applications.register({ name: 'Bob\'s', ownerId: bob.id })
    expect(operator.application.ownerId).toBeNull()
    expect(a.application.ownerId).toBe(ada.id)
    expect((await gate.applications.list({ ownerId: ada.id })).map((x) => x.name)).toEqual(["Ada's"])
    expect((await gate.applications.list()).map((x) => x.name)).toEqual(['Portal', "Ada's", "Bob's"])
    await expect(gate.applications.register({ name: 'x', ownerId: 'no-such-user' })).rejects.toBeInstanceOf(NotFoundError)
    await expect(gate.applications.register({ name: 'x', ownerId: '' })).rejects.toThrow(/ownerId must be a user id/)
    await expect(gate.applications.registerOwn({ name: 'x', ownerId: 'no-such-user' })).rejects.toBeInstanceOf(NotFoundError)
  })

  it('holds a user\'s own registrations to the cap and the registration budget; an operator registering for them is not held', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.UTC(2026, 0, 1))
    const gate = createGate({ basic: { scrypt: { logN: 10 } }, applications: { maxPerUser: 3, registrations: { limit: 4, windowMs: 3_600_000 } } })
    const ada = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'ada@example.org' })
    for (let i = 0; i < 3; i++) await gate.applications.registerOwn({ ownerId: ada.id, name: `app ${i}` })
    await expect(gate.applications.registerOwn({ ownerId: ada.id, name: 'one more' })).rejects.toMatchObject({ code: 'application_limit_reached', status: 409 })
    const [first] = await gate.applications.list({ ownerId: ada.id })
    await gate.applications.delete(first!.appToken)
    // The fourth registration of the hour was the refused one: the budget of 4 is spent.
    const spent = await gate.applications.registerOwn({ ownerId: ada.id, name: 'after delete' }).catch((error: unknown) => error)
    expect(spent).toMatchObject({ code: 'too_many_requests', status: 429 })
    expect(Number((spent as { headers: Record<string, string> }).headers['retry-after'])).toBeGreaterThan(0)
    vi.setSystemTime(Date.UTC(2026, 0, 1) + 3_600_000)
    await gate.applications.registerOwn({ ownerId: ada.id, name: 'an hour later' })
    expect(await gate.applications.list({ ownerId: ada.id })).toHaveLength(3)
    // A bad name spends nothing, and an operator is held to neither bound.
    await expect(gate.applications.registerOwn({ ownerId: ada.id, name: '' })).rejects.toThrow(TypeError)
    await gate.applications.register({ name: 'by the operator', ownerId: ada.id })
    expect(await gate.applications.list({ ownerId: ada.id })).toHaveLength(4)
  })

  it('lists, updates and deletes applications', async () => {
    const gate = createGate()
    const a = await gate.applications.register({ name: 'a' })
    const b = await gate.applications.register({ name: 'b', limit: 5000 })
    expect((await gate.applications.list()).map((x) => x.name)).toEqual(['a', 'b'])
    const updated = await gate.applications.update(a.appToken, { limit: 20_000, callbackPrefix: 'https://a.example/cb' })
    expect(updated).toMatchObject({ name: 'a', limit: 20_000, callbackPrefix: 'https://a.example/cb' })
    expect(await gate.applications.update(b.appToken, { limit: null })).toMatchObject({ limit: null })
    expect(await gate.applications.delete(a.appToken)).toBe(true)
    expect(await gate.applications.find(a.appToken)).toBeUndefined()
    await expect(gate.applications.update(a.appToken, { name: 'gone' })).rejects.toMatchObject({ name: 'NotFoundError', code: 'not_found', status: 404 })
    await expect(gate.applications.rotateSecret(a.appToken)).rejects.toThrow(NotFoundError)
  })

  it.each([
    ['http://app.example/cb', 'it does not use https'],
    ['/cb', 'it is not an absolute URL'],
    ['https://user:pw@app.example/cb', 'it holds credentials'],
    ['https://app.example/cb?x=1', 'it has a query'],
    ['https://app.example/cb#frag', 'it has a fragment'],
  ])('refuses the callback prefix %s with a TypeError that says why', async (prefix, reason) => {
    const gate = createGate()
    await expect(gate.applications.register({ name: 'a', callbackPrefix: prefix })).rejects.toThrow(TypeError)
    await expect(gate.applications.register({ name: 'a', callbackPrefix: prefix })).rejects.toThrow(reason)
    const { appToken } = await gate.applications.register({ name: 'a' })
    await expect(gate.applications.update(appToken, { callbackPrefix: prefix })).rejects.toThrow(/callbackPrefix must be an absolute https URL/)
  })

  it('accepts http loopback Callback Prefixes on any port only with oauth.allowLoopbackCallbacks, and nothing else relaxes', async () => {
    const strict = createGate()
    await expect(strict.applications.register({ name: 'a', callbackPrefix: 'http://localhost:3000/cb' })).rejects.toThrow('it does not use https')
    const { result: relaxed } = await captureWarnings(() => createGate({ oauth: { allowLoopbackCallbacks: true } }))
    for (const prefix of ['http://localhost:3000/cb', 'http://127.0.0.1:8080/', 'http://[::1]:9000/oauth/', 'http://localhost/']) {
      expect((await relaxed.applications.register({ name: 'a', callbackPrefix: prefix })).application.callbackPrefix).toBe(prefix)
    }
    for (const prefix of ['http://localhost.example/cb', 'http://127.0.0.2/cb', 'http://app.example/cb', 'ftp://localhost/cb']) {
      await expect(relaxed.applications.register({ name: 'a', callbackPrefix: prefix })).rejects.toThrow(/does not use https/)
    }
  })

  it('points an http loopback Callback Prefix at oauth.allowLoopbackCallbacks when it is off, and no other http one', async () => {
    const gate = createGate()
    for (const prefix of ['http://localhost:3000/cb', 'http://127.0.0.1:8080/', 'http://[::1]:9000/oauth/']) {
      await expect(gate.applications.register({ name: 'a', callbackPrefix: prefix })).rejects.toThrow(
        'it does not use https (http on localhost, 127.0.0.1 or [::1] is accepted, for local development only, with the gate option oauth.allowLoopbackCallbacks)',
      )
    }
    const other = gate.applications.register({ name: 'a', callbackPrefix: 'http://app.example/cb' })
    await expect(other).rejects.toThrow(/it does not use https$/)
  })

  it('refuses an empty name and a limit that is not a positive integer', async () => {
    const gate = createGate()
    await expect(gate.applications.register({ name: ' ' })).rejects.toThrow(/name must be a non-empty string/)
    await expect(gate.applications.register({ name: 'a', limit: 0 })).rejects.toThrow(/limit must be a positive integer/)
  })

  it('refuses names with control, format or line separator characters, in every call that sets one, and keeps joiners the scripts need', async () => {
    const gate = createGate({ store: new MemoryStore() })
    const ada = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada', email: 'ada@example.org' })
    const { appToken } = await gate.applications.register({ name: 'Transit' })
    const refused = {
      'U+202E': 'Transit\u202egnissecorp',
      'U+2028': 'Transit\u2028dashboard',
      'U+200B': 'Tran\u200bsit',
      'U+001B': 'Transit\u001b[31m',
      'U+0007': 'Transit\u0007',
      'U+000D': 'Transit\r\nDashboard',
      'U+2066': '\u2066Transit\u2069 dashboard',
      'U+200D': '\u200dTransit',
    }
    for (const [code, name] of Object.entries(refused)) {
      const why = new RegExp(`^open-data-gate: an application name must not hold control, format or line separator characters .*; ${code.replace('+', '\\+')} is not allowed$`)
      await expect(gate.applications.register({ name }), name).rejects.toThrow(why)
      await expect(gate.applications.registerOwn({ ownerId: ada.id, name }), name).rejects.toThrow(why)
      await expect(gate.applications.update(appToken, { name }), name).rejects.toThrow(why)
    }
    expect((await gate.applications.list()).map((a) => a.name)).toEqual(['Transit'])
    // Persian and Devanagari need their joiners, emoji sequences too; a trailing line break is trimmed as before.
    for (const name of ['می\u200cخواهم', 'क्\u200dष', 'Dev \u{1f469}\u200d\u{1f4bb} tools', 'Transit\n']) {
      await expect(gate.applications.register({ name }), name).resolves.toMatchObject({ application: { name: name.trim() } })
    }
  })
})
