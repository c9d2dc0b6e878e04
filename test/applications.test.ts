import { describe, expect, it } from 'vitest'
import { createGate, MemoryStore, NotFoundError } from '../src/index.js'
import { sha256 } from '../src/secrets/tokens.js'
import { captureWarnings } from './support/warnings.js'

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

  it('verifies the secret token, and rotating it retires the old one', async () => {
    const gate = createGate()
    const { appToken, secretToken } = await gate.applications.register({ name: 'a' })
    expect(await gate.applications.verifySecret(appToken, secretToken)).toBe(true)
    expect(await gate.applications.verifySecret(appToken, `${secretToken}x`)).toBe(false)
    const next = await gate.applications.rotateSecret(appToken)
    expect(next).toBeDefined()
    expect(await gate.applications.verifySecret(appToken, secretToken)).toBe(false)
    expect(await gate.applications.verifySecret(appToken, next as string)).toBe(true)
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
})
