import { afterEach, describe, expect, it, vi } from 'vitest'
import { createGate, GateError, MemoryStore, PlatformError, PLATFORM_ERROR_STATUS, type InternalErrorEvent } from '../src/index.js'
import { coreRequest } from './support/requests.js'
import { captureWarnings } from './support/warnings.js'

class BrokenStore extends MemoryStore {
  override consumeRate(): never {
    // A store bug, not an outage: returns garbage instead of failing.
    return undefined as never
  }
}

describe('handling', () => {
  it('answers synchronously when the store does, so a request pays for no promise', async () => {
    const gate = createGate()
    const { appToken } = await gate.applications.register({ name: 'A' })
    for (const headers of [{ 'x-app-token': appToken }, {}, { 'x-app-token': 'unknown-token' }]) {
      const outcome = gate.handle(coreRequest({ headers }))
      expect(outcome).not.toBeInstanceOf(Promise)
    }
  })

  it('answers authenticated requests synchronously too, once no scrypt run is needed', async () => {
    const gate = createGate({ basic: { scrypt: { logN: 10 } } })
    const { appToken } = await gate.applications.register({ name: 'A' })
    const user = await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'A', email: 'a@example.org' })
    const { keyId, keySecret } = await gate.apiKeys.create(user.id, { name: 'k' })
    const { accessToken } = await gate.tokens.issue({ userId: user.id, appToken })
    const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`
    const send = (authorization: string) => gate.handle(coreRequest({ headers: { 'x-app-token': appToken, authorization } }))
    const cold = send(basic('ada', 'correct horse battery'))
    expect(cold).toBeInstanceOf(Promise)
    expect(await cold).toMatchObject({ type: 'next', context: { auth: 'password' } })
    for (const authorization of [`OAuth ${accessToken}`, basic(keyId, keySecret), basic('ada', 'correct horse battery')]) {
      const outcome = send(authorization)
      expect(outcome).not.toBeInstanceOf(Promise)
      expect(outcome).toMatchObject({ type: 'next', context: { user: { id: user.id } } })
    }
  })

  it('answers with a promise when the store does, with the same outcome', async () => {
    class AsyncStore extends MemoryStore {
      override getApplication(token: string) {
        return Promise.resolve(super.getApplication(token)) as never
      }
    }
    const gate = createGate({ store: new AsyncStore() })
    const { appToken } = await gate.applications.register({ name: 'A' })
    const outcome = gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
    expect(outcome).toBeInstanceOf(Promise)
    expect(await outcome).toMatchObject({ type: 'next', context: { application: { appToken } } })
  })
})

describe('errors', () => {
  afterEach(() => vi.restoreAllMocks())

  it('turns an unexpected failure into a generic 500 and hands the cause to internalError', async () => {
    const gate = createGate({ store: new BrokenStore() })
    const events: InternalErrorEvent[] = []
    gate.on('internalError', (e) => events.push(e))
    const outcome = await gate.handle(coreRequest({ url: '/resource/x.json?a=1' }))
    expect(outcome.type).toBe('respond')
    if (outcome.type !== 'respond') return
    expect(outcome.response.status).toBe(500)
    expect(JSON.parse(outcome.response.body)).toEqual({ code: 'internal', error: true, message: 'Internal server error' })
    expect(outcome.response.body).not.toMatch(/TypeError|at |\.ts/)
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({ method: 'GET', path: '/resource/x.json' })
    expect(events[0]?.error).toBeInstanceOf(TypeError)
  })

  it('maps every platform code to one status, and the error carries it', () => {
    for (const [code, status] of Object.entries(PLATFORM_ERROR_STATUS)) {
      const error = new PlatformError(code as keyof typeof PLATFORM_ERROR_STATUS, 'm')
      expect(error.status).toBe(status)
      expect(error).toBeInstanceOf(GateError)
      expect(error.name).toBe('PlatformError')
    }
  })

  it('keeps X-Error-Message printable ASCII', () => {
    const gate = createGate()
    const response = gate.errorResponse(new PlatformError('invalid_request', 'naïve\r\nInjected: yes'))
    expect(response.headers['x-error-message']).toBe('na?ve??Injected: yes')
    expect(JSON.parse(response.body).message).toBe('naïve\r\nInjected: yes')
  })

  it('still answers when an event listener throws, and says so in a process warning', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    const gate = createGate()
    gate.on('invalidAppToken', () => {
      throw new Error('a bug in the host’s listener')
    })
    const outcome = await gate.handle(coreRequest({ headers: { 'x-app-token': 'unknown-token' } }))
    expect(outcome).toMatchObject({ type: 'respond', response: { status: 403 } })
    expect(warn.mock.calls[0]?.[0]).toMatch(/'invalidAppToken' listener threw: a bug in the host’s listener/)
  })

  it('says once, in a process warning with a code, when a guard runs without the gate', async () => {
    const gate = createGate()
    const guard = gate.guard({ auth: 'required' })
    const { result, warnings } = await captureWarnings(() => [guard(undefined), guard(undefined)])
    expect(result[0]).toBeInstanceOf(Error)
    expect(gate.errorResponse(result[0]).status).toBe(500)
    expect(warnings).toEqual([expect.objectContaining({ code: 'ODG_GUARD_WITHOUT_GATE', message: expect.stringContaining('mount expressGate/koaGate/nodeGate before the guard') })])
  })

  it('refuses a custom store that lacks part of the contract, naming what is missing', () => {
    const partial = { getApplication: () => undefined, consumeRate: () => ({ allowed: true, remaining: 1, resetMs: 0, retryAfterMs: 0 }) }
    expect(() => createGate({ store: partial as never })).toThrow(/it lacks insertApplication, listApplications/)
  })

  it('warns once when proxy headers arrive from a private peer while no proxy is trusted', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    const gate = createGate()
    await gate.handle(coreRequest({ peerAddress: '198.51.100.9', headers: { 'x-forwarded-for': '1.2.3.4' } }))
    expect(warn).not.toHaveBeenCalled()
    await gate.handle(coreRequest({ peerAddress: '10.0.0.2', headers: { 'x-forwarded-for': '1.2.3.4' } }))
    await gate.handle(coreRequest({ peerAddress: '10.0.0.2', headers: { 'x-forwarded-for': '1.2.3.4' } }))
    expect(warn).toHaveBeenCalledTimes(1)
    expect(warn.mock.calls[0]?.[0]).toMatch(/trustProxy is false/)
  })
})

describe('store reads per request', () => {
  it('reads an access token once per OAuth request, for its budget and its verification alike', async () => {
    let reads = 0
    class CountingStore extends MemoryStore {
      override getAccessToken(tokenHash: string) {
        reads++
        return super.getAccessToken(tokenHash)
      }
    }
    const gate = createGate({ store: new CountingStore() })
    const { appToken } = await gate.applications.register({ name: 'A' })
    const user = await gate.users.create({ username: 'ada', displayName: 'A', email: 'a@example.org' })
    const { accessToken } = await gate.tokens.issue({ userId: user.id, appToken })
    reads = 0
    const outcome = await gate.handle(coreRequest({ headers: { authorization: `OAuth ${accessToken}` } }))
    expect(outcome).toMatchObject({ type: 'next', context: { auth: 'oauth', application: { appToken } } })
    expect(reads).toBe(1)
  })
})

describe('addresses the gate writes back', () => {
  it('percent-encodes a sign-out redirect by code point, even for characters beyond the BMP in the query', async () => {
    // Node hands a request target over as Latin-1, but a host may pass real Unicode.
    const gate = createGate()
    const { appToken } = await gate.applications.register({ name: 'A', callbackPrefix: 'https://app.example/cb/' })
    const csrf = 'c'.repeat(43)
    const body = Buffer.from(`csrf_token=${csrf}&action=logout`)
    const outcome = await gate.handle(
      coreRequest({
        method: 'POST',
        url: `/oauth/authorize?client_id=${appToken}&response_type=code&redirect_uri=https://app.example/cb/&note=\u{1F600}\ud800`,
        headers: { cookie: `__Host-odg-csrf=${csrf}`, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
        readBody: async () => ({ kind: 'raw', bytes: body }),
      }),
    )
    expect(outcome.type).toBe('respond')
    if (outcome.type !== 'respond') return
    expect(outcome.response.status).toBe(303)
    expect(outcome.response.headers.location).toMatch(/&note=%F0%9F%98%80%EF%BF%BD$/)
  })
})
