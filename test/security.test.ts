/**
 * Rules of SECURITY.md that no other file showed: an app token authenticates nobody, an
 * API key acts with its user's rights and no others, an access token in a body over https
 * is not read, secrets compared in constant time, the authorize endpoint's methods, and its
 * `server_error` redirect. The real node:crypto
 * runs throughout; its functions are only counted, or made to fail once on purpose.
 */
import * as crypto from 'node:crypto'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { createGate, MemoryStore, type GateOutcome, type GateResponse } from '../src/index.js'
import { compileGuard } from '../src/pipeline/guard.js'
import { sha256 } from '../src/secrets/tokens.js'
import { coreRequest } from './support/requests.js'

vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof crypto>()
  return { ...actual, timingSafeEqual: vi.fn(actual.timingSafeEqual), randomBytes: vi.fn(actual.randomBytes) }
})

const PASSWORD = 'correct horse battery'
const PREFIX = 'https://transit.example/oauth/'
const REDIRECT = `${PREFIX}callback?tab=live`
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

function answer(outcome: GateOutcome): GateResponse {
  if (outcome.type !== 'respond') throw new Error('expected the gate to answer, it let the request through')
  return outcome.response
}

/** The buffers every `timingSafeEqual` call since the last reset compared, as hex. */
const compared = () => vi.mocked(crypto.timingSafeEqual).mock.calls.map(([a]) => Buffer.from(a as Uint8Array).toString('hex'))

async function setup(oauth: Record<string, unknown> = {}) {
  const store = new MemoryStore()
  const gate = createGate({
    store,
    basic: { scrypt: { logN: 10 } },
    throttle: false,
    oauth: { authenticateUser: (req) => req.headers['x-signed-in'] as string | undefined, ...oauth },
  })
  const app = await gate.applications.register({ name: 'Transit', callbackPrefix: PREFIX })
  const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada Lovelace', email: 'ada@example.org', rights: ['edit'] })
  return { gate, store, app, ada }
}

beforeEach(() => {
  vi.mocked(crypto.timingSafeEqual).mockClear()
  vi.mocked(crypto.randomBytes).mockClear()
})

describe('application tokens', () => {
  it('identify the application but authenticate nobody: private data stays refused with authentication_required', async () => {
    const { gate, app } = await setup()
    const outcome = await gate.handle(coreRequest({ headers: { 'x-app-token': app.appToken } }))
    if (outcome.type !== 'next') throw new Error('expected the request through')
    expect(outcome.context).toMatchObject({ auth: 'none', user: null, application: { appToken: app.appToken } })
    // Nor does the secret token: it is only ever the OAuth client_secret, never a Basic password.
    const secretAsBasic = answer(await gate.handle(coreRequest({ headers: { 'x-app-token': app.appToken, authorization: basic(app.appToken, app.secretToken) } })))
    expect(secretAsBasic.status).toBe(401)
    const refusal = compileGuard({ auth: 'required' })(outcome.context)
    expect(gate.errorResponse(refusal)).toMatchObject({ status: 403, headers: { 'x-error-code': 'authentication_required' } })
  })
})

describe('API keys', () => {
  it('act with their user’s rights and no others, and follow a change of them at once', async () => {
    const { gate, app, ada } = await setup()
    const { keyId, keySecret } = await gate.apiKeys.create(ada.id, { name: 'nightly ETL' })
    const send = async () => {
      const outcome = await gate.handle(coreRequest({ headers: { authorization: basic(keyId, keySecret), 'x-app-token': app.appToken } }))
      if (outcome.type !== 'next') throw new Error(`expected the request through, got ${outcome.response.status}`)
      return outcome.context
    }
    const edit = compileGuard({ auth: 'required', rights: ['edit'] })
    const admin = compileGuard({ auth: 'required', rights: ['admin'] })
    const context = await send()
    expect(context).toMatchObject({ auth: 'api-key', user: { id: ada.id, rights: ['edit'] } })
    expect(edit(context)).toBeUndefined()
    expect(gate.errorResponse(admin(context))).toMatchObject({ status: 403, headers: { 'x-error-code': 'permission_denied' } })
    await gate.users.update(ada.id, { rights: [] })
    expect(gate.errorResponse(edit(await send()))).toMatchObject({ status: 403, headers: { 'x-error-code': 'permission_denied' } })
  })
})

describe('access tokens', () => {
  it('are never read from a body field over https: the request stays anonymous and the token keeps working', async () => {
    const { gate, app, ada } = await setup()
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    const outcome = await gate.handle(
      coreRequest({ method: 'POST', url: '/api/v3/views/abcd-1234/query.json', headers: { 'x-app-token': app.appToken, 'content-type': 'application/json' }, parsedBody: () => ({ access_token: accessToken }) }),
    )
    if (outcome.type !== 'next') throw new Error('expected the request through')
    expect(outcome.context).toMatchObject({ auth: 'none', user: null })
    const later = await gate.handle(coreRequest({ headers: { authorization: `OAuth ${accessToken}` } }))
    expect(later.type === 'next' && later.context.user?.id).toBe(ada.id)
  })
})

describe('secrets are compared in constant time', () => {
  it('compares a client secret, an API key secret, a password and a PKCE verifier with crypto.timingSafeEqual', async () => {
    const { gate, store, app, ada } = await setup()
    const wrong = 'x'.repeat(43)

    // A client secret at the token endpoint: its SHA-256 against the stored hash.
    const client = new URLSearchParams({ client_id: app.appToken, client_secret: wrong, grant_type: 'authorization_code', code: 'x'.repeat(43), redirect_uri: REDIRECT })
    expect(answer(await gate.handle(coreRequest({ method: 'POST', url: `/oauth/access_token?${client}` }))).status).toBe(401)
    expect(compared()).toContain(sha256(wrong))

    // An API key secret over Basic.
    vi.mocked(crypto.timingSafeEqual).mockClear()
    const { keyId } = await gate.apiKeys.create(ada.id, { name: 'nightly ETL' })
    const key = answer(await gate.handle(coreRequest({ headers: { authorization: basic(keyId, wrong), 'x-app-token': app.appToken } })))
    expect(key.status).toBe(401)
    expect(compared()).toContain(sha256(wrong))

    // A password: the scrypt key derived from the guess against the stored one.
    vi.mocked(crypto.timingSafeEqual).mockClear()
    const password = answer(await gate.handle(coreRequest({ headers: { authorization: basic('ada', 'not the password'), 'x-app-token': app.appToken } })))
    expect(password.status).toBe(401)
    expect(compared()).toHaveLength(1)

    // A PKCE verifier: its S256 against the challenge the code was bound to.
    const code = 'c'.repeat(43)
    const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
    const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM' // RFC 7636 appendix B
    const now = Date.now()
    await store.recordGrant(ada.id, app.appToken, now)
    await store.insertAuthorizationCode({ codeHash: sha256(code), appToken: app.appToken, userId: ada.id, redirectUri: REDIRECT, codeChallenge: challenge, createdAt: now, expiresAt: now + 60_000, usedAt: null })
    vi.mocked(crypto.timingSafeEqual).mockClear()
    const otherVerifier = `${verifier.slice(0, -1)}A`
    const exchange = new URLSearchParams({ client_id: app.appToken, client_secret: app.secretToken, grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: otherVerifier })
    const refused = answer(await gate.handle(coreRequest({ method: 'POST', url: `/oauth/access_token?${exchange}` })))
    expect([refused.status, JSON.parse(refused.body).error]).toEqual([400, 'invalid_grant'])
    const s256 = crypto.createHash('sha256').update(otherVerifier).digest('base64url')
    expect(compared()).toContain(Buffer.from(s256).toString('hex'))
  })
})

describe('the authorize endpoint', () => {
  it('answers a method other than GET with a 405 page naming GET, and never a redirect', async () => {
    const { gate, app, ada } = await setup()
    const query = new URLSearchParams({ client_id: app.appToken, response_type: 'code', redirect_uri: REDIRECT, state: 'xyz' })
    for (const method of ['PUT', 'DELETE', 'PATCH']) {
      const res = answer(await gate.handle(coreRequest({ method, url: `/oauth/authorize?${query}`, headers: { 'x-signed-in': ada.id } })))
      expect(res.status).toBe(405)
      expect(res.headers.allow).toBe('GET, POST')
      expect(res.headers['content-type']).toMatch(/^text\/html/)
      expect(res.body).toContain('use GET')
      expect(res.headers.location).toBeUndefined()
    }
  })

  it('redirects with server_error and the state when issuing the code fails unexpectedly', async () => {
    const { gate, store, app, ada } = await setup({ rememberConsent: true })
    const failures: unknown[] = []
    gate.on('internalError', (e) => failures.push(e))
    await store.recordGrant(ada.id, app.appToken, Date.now())
    // The code's random bytes: the one thing issuing a code needs besides the store.
    vi.mocked(crypto.randomBytes).mockImplementationOnce(() => {
      throw new Error('entropy source unavailable')
    })
    const query = new URLSearchParams({ client_id: app.appToken, response_type: 'code', redirect_uri: REDIRECT, state: 'a b&c' })
    const res = answer(await gate.handle(coreRequest({ url: `/oauth/authorize?${query}`, headers: { 'x-signed-in': ada.id } })))
    expect(res.status).toBe(303)
    const back = new URL(res.headers.location as string)
    expect(back.href.startsWith(`${REDIRECT}&`)).toBe(true)
    expect(back.searchParams.get('error')).toBe('server_error')
    expect(back.searchParams.get('state')).toBe('a b&c')
    expect(back.searchParams.get('code')).toBeNull()
    expect(failures).toHaveLength(1)
    // Nothing was left half-issued: the next attempt gets a code.
    const again = answer(await gate.handle(coreRequest({ url: `/oauth/authorize?${query}`, headers: { 'x-signed-in': ada.id } })))
    expect(new URL(again.headers.location as string).searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/)
  })
})
