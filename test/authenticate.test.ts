import * as crypto from 'node:crypto'
import { DOMParser } from '@xmldom/xmldom'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { createGate, ThrottledError, type Gate, type GateError, type GateOptions, type GateOutcome, type TokenRevokedEvent } from '../src/index.js'
import { sha256 } from '../src/secrets/tokens.js'
import { coreRequest } from './support/requests.js'

// The real scrypt, counted: how the tests see whether a request paid for a hash.
vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof crypto>()
  return { ...actual, scrypt: vi.fn(actual.scrypt) }
})
const scryptRuns = () => vi.mocked(crypto.scrypt).mock.calls.length

const PASSWORD = 'correct horse battery'
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

function respond(outcome: GateOutcome) {
  if (outcome.type !== 'respond') throw new Error('expected the gate to answer, it let the request through')
  const isJson = String(outcome.response.headers['content-type']).startsWith('application/json')
  return { ...outcome.response, json: (isJson ? JSON.parse(outcome.response.body) : null) as Record<string, unknown> }
}
function pass(outcome: GateOutcome) {
  if (outcome.type !== 'next') throw new Error(`expected the request through, got ${outcome.response.status} ${outcome.response.body}`)
  return outcome.context
}

async function setup(options: GateOptions = {}) {
  const gate = createGate({ basic: { scrypt: { logN: 10 }, ...options.basic }, ...options, throttle: options.throttle ?? false })
  const app = await gate.applications.register({ name: 'ETL' })
  const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada Lovelace', email: 'ada@example.org', rights: ['edit'] })
  const send = (authorization: string | undefined, extra: { tls?: boolean; token?: string | null; url?: string; method?: string; peer?: string } = {}) => {
    const headers: Record<string, string> = {}
    if (authorization !== undefined) headers.authorization = authorization
    if (extra.token !== null) headers['x-app-token'] = extra.token ?? app.appToken
    return gate.handle(
      coreRequest({ headers, tls: extra.tls ?? true, url: extra.url ?? '/resource/x.json', method: extra.method ?? 'GET', peerAddress: extra.peer ?? '203.0.113.5' }),
    )
  }
  vi.mocked(crypto.scrypt).mockClear()
  return { gate, app, ada, send }
}

describe('HTTP Basic with a username and password', () => {
  beforeEach(() => {
    vi.mocked(crypto.scrypt).mockClear()
  })

  it('authenticates the user and says how', async () => {
    const { ada, send } = await setup()
    const context = pass(await send(basic('ada', PASSWORD)))
    expect(context.auth).toBe('password')
    expect(context.user).toEqual({ id: ada.id, username: 'ada', screenName: 'Ada Lovelace', displayName: 'Ada Lovelace', email: 'ada@example.org', rights: ['edit'] })
  })

  it('takes the username in any letter case', async () => {
    const { send } = await setup()
    expect(pass(await send(basic('ADA', PASSWORD))).user?.username).toBe('ada')
  })

  it('runs scrypt once for repeated requests with the same password', async () => {
    const { send } = await setup()
    pass(await send(basic('ada', PASSWORD)))
    expect(scryptRuns()).toBe(1)
    for (let i = 0; i < 20; i++) pass(await send(basic('ada', PASSWORD)))
    expect(scryptRuns()).toBe(1)
  })

  it('runs scrypt once for a cold burst of identical requests', async () => {
    const { send } = await setup()
    const contexts = await Promise.all(Array.from({ length: 50 }, () => send(basic('ada', PASSWORD))))
    expect(contexts.every((c) => c.type === 'next')).toBe(true)
    expect(scryptRuns()).toBe(1)
  })

  it('stops accepting the old password the moment it changes, cached or not', async () => {
    const { gate, ada, send } = await setup()
    pass(await send(basic('ada', PASSWORD)))
    await gate.users.setPassword(ada.id, 'a brand new password')
    expect(respond(await send(basic('ada', PASSWORD))).status).toBe(401)
    expect(pass(await send(basic('ada', 'a brand new password'))).user?.id).toBe(ada.id)
  })

  it('stops accepting a removed account’s cached credentials', async () => {
    const { gate, ada, send } = await setup()
    pass(await send(basic('ada', PASSWORD)))
    await gate.users.delete(ada.id)
    expect(respond(await send(basic('ada', PASSWORD))).status).toBe(401)
  })

  it('answers wrong credentials with 401 invalid_credentials and no challenge by default', async () => {
    const { send } = await setup()
    const refused = respond(await send(basic('ada', 'wrong password!')))
    expect(refused.status).toBe(401)
    expect(refused.json).toMatchObject({ code: 'invalid_credentials', error: true })
    expect(refused.headers['www-authenticate']).toBeUndefined()
  })

  it('sends a Basic challenge when asked', async () => {
    const { send } = await setup({ basic: { challenge: true }, realm: 'data portal' })
    expect(respond(await send(basic('ada', 'wrong password!'))).headers['www-authenticate']).toBe('Basic realm="data portal", charset="UTF-8"')
  })

  it('costs an unknown username a scrypt run too, so it cannot be told from a wrong password', async () => {
    const { send } = await setup()
    expect(respond(await send(basic('nobody', PASSWORD))).status).toBe(401)
    expect(scryptRuns()).toBeGreaterThanOrEqual(1)
  })

  it('refuses further attempts for a username once its budget is spent, before any scrypt', async () => {
    const { gate, send } = await setup({ basic: { failures: { limit: 3, windowMs: 60_000 } } })
    await gate.users.create({ username: 'grace', password: PASSWORD, displayName: 'G', email: 'g@example.org' })
    pass(await send(basic('ada', PASSWORD))) // verified and cached before the attack
    for (let i = 0; i < 3; i++) expect(respond(await send(basic('ada', `guess ${i} guess`))).status).toBe(401)
    const runs = scryptRuns()
    const locked = respond(await send(basic('ada', 'guess 4 guess')))
    expect(locked.status).toBe(429)
    expect(locked.json.code).toBe('too_many_requests')
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0)
    expect(scryptRuns()).toBe(runs)
    // Another account, from another address, is not affected.
    expect(pass(await send(basic('grace', PASSWORD), { peer: '203.0.113.6' })).auth).toBe('password')
  })

  it('answers a locked-out username from the cache only for the quiet address that verified it', async () => {
    const { send } = await setup({ basic: { failures: { limit: 3, windowMs: 60_000 } } })
    pass(await send(basic('ada', PASSWORD))) // the victim, from 203.0.113.5, fills the cache
    const attempt = (password: string, peer: string) => send(basic('ada', password), { peer })
    for (let i = 0; i < 3; i++) expect(respond(await attempt(`guess ${i} guess`, '198.51.100.66')).status).toBe(401)
    expect(respond(await attempt('guess 3 guess', '198.51.100.66')).status).toBe(429)
    // The right guess is not answered from the victim's entry at the attacker's address.
    expect(respond(await attempt(PASSWORD, '198.51.100.66')).status).toBe(429)
    // The victim's own, quiet address keeps working...
    expect(pass(await attempt(PASSWORD, '203.0.113.5')).auth).toBe('password')
    // ...until a guess fails from it (a neighbour behind the same NAT): then no answer comes from the cache.
    expect(respond(await attempt('neighbour guess', '203.0.113.5')).status).toBe(429)
    expect(respond(await attempt(PASSWORD, '203.0.113.5')).status).toBe(429)
  })

  it('counts a burst of concurrent guesses before hashing, so the budget holds', async () => {
    const { send } = await setup({ basic: { failures: { limit: 3, windowMs: 60_000 }, addressFailures: false } })
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => send(basic('ada', `concurrent guess ${i}`))))
    const statuses = answers.map((a) => respond(a).status)
    expect(statuses.filter((s) => s === 401)).toHaveLength(3)
    expect(statuses.filter((s) => s === 429)).toHaveLength(27)
    expect(scryptRuns()).toBeLessThanOrEqual(3)
  })

  it('starts the count again after a successful sign-in', async () => {
    const { send } = await setup({ basic: { failures: { limit: 3, windowMs: 60_000 }, cacheTtlMs: 0 } })
    for (let i = 0; i < 2; i++) expect(respond(await send(basic('ada', `guess ${i} guess`))).status).toBe(401)
    pass(await send(basic('ada', PASSWORD)))
    for (let i = 0; i < 2; i++) expect(respond(await send(basic('ada', `again ${i} guess`))).status).toBe(401)
    pass(await send(basic('ada', PASSWORD)))
  })

  it('refuses a username longer than any account’s without hashing', async () => {
    const { send } = await setup()
    expect(respond(await send(basic('a'.repeat(500), PASSWORD))).status).toBe(401)
    expect(scryptRuns()).toBe(0)
  })

  it('keeps verifying passwords hashed with older, weaker parameters', async () => {
    const weak = await setup()
    const gate = createGate({ store: weak.gate.store, throttle: false, basic: { scrypt: { logN: 11 } } })
    const { appToken } = await gate.applications.register({ name: 'x' })
    pass(await gate.handle(coreRequest({ headers: { authorization: basic('ada', PASSWORD), 'x-app-token': appToken } })))
  })
})

describe('gate.users.signIn, for a host’s own sign-in form', () => {
  beforeEach(() => {
    vi.mocked(crypto.scrypt).mockClear()
  })
  const CLIENT = '203.0.113.5'

  it('answers the user for the right password, without the hash', async () => {
    const { gate, ada } = await setup()
    const user = await gate.users.signIn({ username: 'ADA', password: PASSWORD, clientIp: CLIENT })
    expect(user).toEqual(await gate.users.find(ada.id))
    expect(user).not.toHaveProperty('passwordHash')
  })

  it('refuses an API key id and its right secret, without a hash, and leaves the key working', async () => {
    const { gate, ada, send } = await setup()
    const key = await gate.apiKeys.create(ada.id, { name: 'etl' })
    for (const username of [key.keyId, key.keyId.toUpperCase(), ` ${key.keyId}`]) {
      await expect(gate.users.signIn({ username, password: key.keySecret, clientIp: CLIENT })).rejects.toMatchObject({
        code: 'invalid_credentials',
        status: 401,
        message: expect.stringMatching(/An API key cannot sign in/),
      })
    }
    expect(scryptRuns()).toBe(0)
    expect(pass(await send(basic(key.keyId, key.keySecret))).auth).toBe('api-key')
  })

  it('refuses a wrong password and an unknown user alike, each at the cost of a scrypt run, without a Basic challenge', async () => {
    const { gate } = await setup({ basic: { challenge: true } })
    const failures: unknown[] = []
    gate.on('authenticationFailed', (event) => failures.push(event))
    for (const username of ['ada', 'nobody']) {
      const runs = scryptRuns()
      const error = await gate.users.signIn({ username, password: 'not the password', clientIp: CLIENT }).catch((e: unknown) => e)
      expect(error).toMatchObject({ code: 'invalid_credentials', status: 401, message: 'Wrong username or password.' })
      expect((error as GateError).headers?.['www-authenticate']).toBeUndefined()
      expect(scryptRuns()).toBeGreaterThan(runs)
    }
    expect(failures).toEqual([
      { method: 'password', ip: CLIENT, username: 'ada' },
      { method: 'password', ip: CLIENT, username: 'nobody' },
    ])
  })

  it('spends the same failure budgets as Basic: per username, and per address across usernames', async () => {
    const { gate, send } = await setup({ basic: { failures: { limit: 3, windowMs: 60_000 }, addressFailures: { limit: 4, windowMs: 60_000 } } })
    for (let i = 0; i < 3; i++) await expect(gate.users.signIn({ username: 'ada', password: `guess ${i}`, clientIp: '198.51.100.7' })).rejects.toMatchObject({ code: 'invalid_credentials' })
    const locked = await gate.users.signIn({ username: 'ada', password: PASSWORD, clientIp: '198.51.100.8' }).catch((e: unknown) => e)
    expect(locked).toBeInstanceOf(ThrottledError)
    expect(locked).toMatchObject({ code: 'too_many_requests', retryAfterMs: expect.any(Number) })
    // The lock is the username's, whatever the way in.
    expect(respond(await send(basic('ada', PASSWORD), { peer: '198.51.100.9' })).status).toBe(429)
    // A fourth failure from the guessing address spends its own budget, across usernames: even a right password from it is refused.
    await gate.users.create({ username: 'grace', password: PASSWORD, displayName: 'G', email: 'g@example.org' })
    await expect(gate.users.signIn({ username: 'nobody', password: 'x', clientIp: '198.51.100.7' })).rejects.toMatchObject({ code: 'invalid_credentials' })
    await expect(gate.users.signIn({ username: 'grace', password: PASSWORD, clientIp: '198.51.100.7' })).rejects.toMatchObject({ code: 'too_many_requests' })
    expect(await gate.users.signIn({ username: 'grace', password: PASSWORD, clientIp: '198.51.100.10' })).toMatchObject({ username: 'grace' })
  })

  it('refuses credentials that are not text as wrong ones, and a host’s mistakes with a TypeError', async () => {
    const { gate } = await setup()
    for (const [username, password] of [[['ada'], PASSWORD], ['ada', undefined], [null, null]] as const) {
      await expect(gate.users.signIn({ username, password, clientIp: CLIENT } as never)).rejects.toMatchObject({ code: 'invalid_credentials' })
    }
    expect(scryptRuns()).toBe(0)
    for (const clientIp of [undefined, '', 'localhost', '::ffff:not-an-ip', 42]) {
      await expect(gate.users.signIn({ username: 'ada', password: PASSWORD, clientIp } as never)).rejects.toThrow(TypeError)
    }
    await expect(gate.users.signIn({ username: 'ada', password: PASSWORD, clientIp: CLIENT, remember: true } as never)).rejects.toThrow(/unknown.*remember|remember/)
    await expect(gate.users.signIn(undefined as never)).rejects.toThrow(TypeError)
    // IPv4-mapped IPv6, as Node gives it, is the IPv4 address: the same budget.
    expect(await gate.users.signIn({ username: 'ada', password: PASSWORD, clientIp: `::ffff:${CLIENT}` })).toMatchObject({ username: 'ada' })
  })
})

describe('HTTP Basic transport and application token rules', () => {
  it('denies Basic over an insecure connection with 403, right credentials or not, without hashing', async () => {
    const { send } = await setup()
    for (const password of [PASSWORD, 'wrong password!']) {
      const refused = respond(await send(basic('ada', password), { tls: false }))
      expect(refused.status).toBe(403)
      expect(refused.json).toMatchObject({ code: 'https_required' })
      expect(refused.json.message).toMatch(/https/)
    }
    expect(scryptRuns()).toBe(0)
  })

  it('denies Basic without an application token by default', async () => {
    const { send } = await setup()
    const refused = respond(await send(basic('ada', PASSWORD), { token: null }))
    expect(refused.status).toBe(403)
    expect(refused.json).toMatchObject({ code: 'app_token_required' })
    expect(refused.json.message).toMatch(/X-App-Token/)
  })

  it('lets Basic without an application token through with requireAppToken: false', async () => {
    const { send } = await setup({ basic: { requireAppToken: false } })
    expect(pass(await send(basic('ada', PASSWORD), { token: null })).auth).toBe('password')
  })

  it('counts an authenticated request against its application, and refuses over the limit before verifying', async () => {
    const { send } = await setup({ throttle: { application: { limit: 2, windowMs: 60_000 } } })
    expect(pass(await send(basic('ada', PASSWORD))).throttle).toMatchObject({ policy: 'application', remaining: 1 })
    expect(pass(await send(basic('ada', PASSWORD))).throttle).toMatchObject({ policy: 'application', remaining: 0 })
    vi.mocked(crypto.scrypt).mockClear()
    expect(respond(await send(basic('ada', 'a wrong password'))).status).toBe(429)
    expect(scryptRuns()).toBe(0)
  })
})

describe('HTTP Basic with an API key', () => {
  it('authenticates with the key id and secret, and records when the key was used', async () => {
    const { gate, ada, send } = await setup()
    const { keyId, keySecret } = await gate.apiKeys.create(ada.id, { name: 'nightly ETL' })
    const context = pass(await send(basic(keyId, keySecret)))
    expect(context).toMatchObject({ auth: 'api-key', apiKeyId: keyId, user: { id: ada.id } })
    expect(scryptRuns()).toBe(0)
    await vi.waitFor(async () => expect((await gate.apiKeys.find(keyId))?.lastUsedAt).toEqual(expect.any(Number)))
  })

  it('works for an account without a password', async () => {
    const { gate, send } = await setup()
    const sso = await gate.users.create({ username: 'sso', displayName: 'S', email: 's@example.org' })
    const { keyId, keySecret } = await gate.apiKeys.create(sso.id, { name: 'job' })
    expect(pass(await send(basic(keyId, keySecret))).user?.id).toBe(sso.id)
    expect(respond(await send(basic('sso', 'any password at all'))).status).toBe(401)
  })

  it('stops working the moment it is revoked, and the others keep working', async () => {
    const { gate, ada, send } = await setup()
    const a = await gate.apiKeys.create(ada.id, { name: 'a' })
    const b = await gate.apiKeys.create(ada.id, { name: 'b' })
    pass(await send(basic(a.keyId, a.keySecret)))
    await gate.apiKeys.revoke(a.keyId)
    expect(respond(await send(basic(a.keyId, a.keySecret))).status).toBe(401)
    pass(await send(basic(b.keyId, b.keySecret)))
    pass(await send(basic('ada', PASSWORD)))
  })

  it('refuses the old secret after a rotation and accepts the new one', async () => {
    const { gate, ada, send } = await setup()
    const key = await gate.apiKeys.create(ada.id, { name: 'a' })
    const rotated = await gate.apiKeys.rotate(key.keyId)
    expect(respond(await send(basic(key.keyId, key.keySecret))).status).toBe(401)
    pass(await send(basic(key.keyId, rotated?.keySecret as string)))
  })

  it('is not disturbed by a password change', async () => {
    const { gate, ada, send } = await setup()
    const key = await gate.apiKeys.create(ada.id, { name: 'a' })
    await gate.users.setPassword(ada.id, 'another long password')
    pass(await send(basic(key.keyId, key.keySecret)))
  })

  it('refuses a wrong secret and an unknown key id', async () => {
    const { gate, ada, send } = await setup()
    const key = await gate.apiKeys.create(ada.id, { name: 'a' })
    expect(respond(await send(basic(key.keyId, `${key.keySecret}x`))).status).toBe(401)
    expect(respond(await send(basic('abcdefghijkmnpqrstuvwxyz2', key.keySecret))).status).toBe(401)
  })
})

describe('OAuth access tokens', () => {
  it('authenticates Authorization: OAuth and Bearer', async () => {
    const { gate, app, ada, send } = await setup()
    const { accessToken, record } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    for (const scheme of ['OAuth', 'Bearer']) {
      const context = pass(await send(`${scheme} ${accessToken}`))
      expect(context).toMatchObject({ auth: 'oauth', user: { id: ada.id }, accessToken: { appToken: app.appToken, expiresAt: record.expiresAt } })
    }
  })

  it('ignores Bearer when it is turned off', async () => {
    const { gate, app, ada, send } = await setup({ oauth: { acceptBearer: false } })
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    expect(pass(await send(`Bearer ${accessToken}`)).auth).toBe('none')
    expect(pass(await send(`OAuth ${accessToken}`)).auth).toBe('oauth')
  })

  it('never takes a token from a query parameter', async () => {
    const { gate, app, ada, send } = await setup()
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    expect(pass(await send(undefined, { url: `/resource/x.json?access_token=${accessToken}` })).auth).toBe('none')
  })

  it('answers an unknown, expired or revoked token with 401 invalid_token and a challenge', async () => {
    const { gate, app, ada, send } = await setup()
    const expired = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken, ttlMs: 1 })
    const revoked = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    await gate.tokens.revoke(revoked.accessToken)
    await new Promise((r) => setTimeout(r, 5))
    for (const token of ['unknown-token', expired.accessToken, revoked.accessToken]) {
      const refused = respond(await send(`OAuth ${token}`))
      expect(refused.status).toBe(401)
      expect(refused.json.code).toBe('invalid_token')
      expect(refused.headers['www-authenticate']).toBe('OAuth realm="api", error="invalid_token"')
    }
  })

  it('revokes a token sent over plain http even when the request is refused for something else', async () => {
    const { gate, app, ada, send } = await setup()
    for (const extra of [{ token: 'not-a-registered-token' }, { url: '/oauth/access_token' }]) {
      const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
      await send(`OAuth ${accessToken}`, { tls: false, ...extra })
      expect((await gate.store.getAccessToken(sha256(accessToken)))?.revokedAt).toEqual(expect.any(Number))
    }
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    await gate.handle(coreRequest({ tls: false, headers: { authorization: `OAuth ${accessToken}` }, authorization: [`OAuth ${accessToken}`, basic('ada', PASSWORD)] }))
    expect((await gate.store.getAccessToken(sha256(accessToken)))?.revokedAt).toEqual(expect.any(Number))
  })

  it('revokes a token used over plain http at once, answers as unauthenticated, and tells the event', async () => {
    const { gate, app, ada, send } = await setup()
    const events: TokenRevokedEvent[] = []
    gate.on('tokenRevoked', (e) => events.push(e))
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    const context = pass(await send(`OAuth ${accessToken}`, { tls: false }))
    expect(context).toMatchObject({ auth: 'none', user: null, revokedInsecureToken: true })
    expect(events).toEqual([{ reason: 'insecure-transport', userId: ada.id, appToken: app.appToken, ip: '203.0.113.5', requestId: expect.any(String) }])
    expect((await gate.store.getAccessToken(sha256(accessToken)))?.revokedAt).toEqual(expect.any(Number))
    expect(respond(await send(`OAuth ${accessToken}`)).status).toBe(401)
  })

  it('revokes the tokens of a deleted application', async () => {
    const { gate, app, ada, send } = await setup()
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    const other = await gate.applications.register({ name: 'other' })
    await gate.applications.delete(app.appToken)
    expect(respond(await send(`OAuth ${accessToken}`, { token: other.appToken })).status).toBe(401)
  })

  it('revokes all of a user’s tokens', async () => {
    const { gate, app, ada, send } = await setup()
    const a = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    const b = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    expect(await gate.tokens.revokeAllForUser(ada.id)).toBe(2)
    for (const t of [a, b]) expect(respond(await send(`OAuth ${t.accessToken}`)).status).toBe(401)
  })
})

describe('credentials sent in clear', () => {
  /** The parts of an outcome a client sees, without the flag that says a token was revoked. */
  function seen(outcome: GateOutcome) {
    if (outcome.type === 'respond') return { status: outcome.response.status, body: outcome.response.body }
    // The same answer but for the request's own id.
    return { status: 200, context: { ...outcome.context, revokedInsecureToken: undefined, requestId: undefined } }
  }

  async function clearSetup() {
    const world = await setup()
    const other = await world.gate.applications.register({ name: 'Other' })
    const gone = await world.gate.applications.register({ name: 'Deleted' })
    await world.gate.applications.delete(gone.appToken)
    return { ...world, other, gone }
  }
  type World = Awaited<ReturnType<typeof clearSetup>>
  const plain = (overrides: Partial<Parameters<typeof coreRequest>[0]>) => coreRequest({ tls: false, ...overrides })

  const b64 = (user: string, secret: string) => Buffer.from(`${user}:${secret}`).toString('base64')
  /** Where and how an API key id and its secret may travel, and what refuses the request before any verification. */
  const KEY_CASES: ReadonlyArray<{ name: string; request: (w: World, keyId: string, secret: string) => Parameters<Gate['handle']>[0] }> = [
    { name: 'with an unknown app token', request: (_w, id, s) => plain({ headers: { authorization: basic(id, s), 'x-app-token': 'not-a-registered-token' } }) },
    { name: 'with the token of a deleted application', request: (w, id, s) => plain({ headers: { authorization: basic(id, s), 'x-app-token': w.gone.appToken } }) },
    { name: 'with two different app tokens', request: (w, id, s) => plain({ url: `/resource/x.json?$$app_token=${w.other.appToken}`, headers: { authorization: basic(id, s), 'x-app-token': w.app.appToken } }) },
    { name: 'as Basic with two spaces', request: (w, id, s) => plain({ headers: { authorization: `Basic  ${b64(id, s)}`, 'x-app-token': w.app.appToken } }) },
    { name: 'as Basic with a colon for the space', request: (w, id, s) => plain({ headers: { authorization: `Basic:${b64(id, s)}`, 'x-app-token': w.app.appToken } }) },
    { name: 'as Basic, not base64-encoded', request: (w, id, s) => plain({ headers: { authorization: `Basic ${id}:${s}`, 'x-app-token': w.app.appToken } }) },
    {
      name: 'in the second of two Authorization headers',
      request: (w, id, s) => plain({ headers: { authorization: basic('ada', 'not the password'), 'x-app-token': w.app.appToken }, authorization: [basic('ada', 'not the password'), basic(id, s)] }),
    },
    { name: 'as Basic client authentication at the token endpoint', request: (_w, id, s) => plain({ method: 'POST', url: '/oauth/access_token', headers: { authorization: basic(id, s) } }) },
  ]

  it.each(KEY_CASES)('revokes an API key whose right secret came over plain http $name, and answers as it would have anyway', async ({ request }) => {
    const world = await clearSetup()
    const { gate, app, ada, send } = world
    const revoked: unknown[] = []
    gate.on('apiKeyRevoked', (e) => revoked.push(e))
    const key = await gate.apiKeys.create(ada.id, { name: 'etl' })
    const dud = seen(await gate.handle(request(world, key.keyId, 'not-the-secret-of-this-key-0123456789abcd')))
    expect(await gate.apiKeys.find(key.keyId)).toMatchObject({ revokedAt: null })
    const leaked = seen(await gate.handle(request(world, key.keyId, key.keySecret)))
    expect(leaked).toEqual(dud)
    expect(revoked).toEqual([{ reason: 'insecure-transport', keyId: key.keyId, userId: ada.id, ip: '203.0.113.5', requestId: expect.any(String) }])
    const after = respond(await send(basic(key.keyId, key.keySecret), { token: app.appToken }))
    expect([after.status, after.json.code]).toEqual([401, 'invalid_credentials'])
    expect(scryptRuns()).toBe(0)
  })

  /** Where and how an access token may travel in clear. */
  const TOKEN_CASES: ReadonlyArray<{ name: string; request: (w: World, token: string) => Parameters<Gate['handle']>[0] }> = [
    { name: 'Bearer:<t>', request: (_w, t) => plain({ headers: { authorization: `Bearer:${t}` } }) },
    { name: "OAuth '<t>'", request: (_w, t) => plain({ headers: { authorization: `OAuth '${t}'` } }) },
    { name: 'Bearer <<t>>', request: (_w, t) => plain({ headers: { authorization: `Bearer <${t}>` } }) },
    { name: 'Bearer%20<t>', request: (_w, t) => plain({ headers: { authorization: `Bearer%20${t}` } }) },
    { name: 'a scheme of the host', request: (_w, t) => plain({ headers: { authorization: `Token ${t}` } }) },
    { name: 'the second Authorization header', request: (_w, t) => plain({ headers: { authorization: 'Digest username="ada"' }, authorization: ['Digest username="ada"', `OAuth ${t}`] }) },
    { name: '?access_token[]=<t>', request: (_w, t) => plain({ url: `/resource/x.json?access_token[]=${t}` }) },
    { name: '?access_token%5B0%5D=<t>', request: (_w, t) => plain({ url: `/resource/x.json?access_token%5B0%5D=${t}` }) },
    { name: '?[oauth_token]=<t>', request: (_w, t) => plain({ url: `/resource/x.json?[oauth_token]=${t}` }) },
    { name: '?a=1;access_token=<t>', request: (_w, t) => plain({ url: `/resource/x.json?a=1;access_token=${t}` }) },
    { name: 'access_token[x] in a parsed body', request: (_w, t) => plain({ method: 'POST', url: '/api/v3/views/x/query.json', parsedBody: () => ({ access_token: { x: t } }) }) },
    { name: 'OAuth <t> with an unknown app token', request: (_w, t) => plain({ headers: { authorization: `OAuth ${t}`, 'x-app-token': 'not-a-registered-token' } }) },
    { name: 'OAuth <t> with two different app tokens', request: (w, t) => plain({ url: `/resource/x.json?$$app_token=${w.other.appToken}`, headers: { authorization: `OAuth ${t}`, 'x-app-token': w.app.appToken } }) },
  ]

  it.each(TOKEN_CASES)('revokes an access token sent over plain http as $name, and answers as it would have anyway', async ({ request }) => {
    const world = await clearSetup()
    const { gate, app, ada, send } = world
    const events: TokenRevokedEvent[] = []
    gate.on('tokenRevoked', (e) => events.push(e))
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    const dud = seen(await gate.handle(request(world, 'never-issued-token-0123456789abcdefghijklmno')))
    const leaked = seen(await gate.handle(request(world, accessToken)))
    expect(leaked).toEqual(dud)
    expect(events).toEqual([{ reason: 'insecure-transport', userId: ada.id, appToken: app.appToken, ip: '203.0.113.5', requestId: expect.any(String) }])
    const after = respond(await send(`OAuth ${accessToken}`))
    expect([after.status, after.json.code]).toEqual([401, 'invalid_token'])
  })

  it('looks up a bounded number of candidates, and never a password: no hash runs for Basic in clear', async () => {
    const { gate, app } = await setup()
    const reads: string[] = []
    const store = gate.store as unknown as Record<string, (...args: unknown[]) => unknown>
    for (const name of ['getAccessToken', 'getApiKey', 'getUserByUsername']) {
      const original = store[name]!.bind(gate.store)
      store[name] = (...args: unknown[]) => {
        reads.push(name)
        return original(...args)
      }
    }
    const words = Array.from({ length: 40 }, (_, i) => `candidate-token-${String(i).padStart(4, '0')}`)
    const keys = Array.from({ length: 40 }, (_, i) => basic(`${'k'.repeat(23)}${String(i).padStart(2, '0')}`, 'some-secret-value-0123456789'))
    await gate.handle(coreRequest({ tls: false, headers: { authorization: `Bearer ${words.join(' ')}`, 'x-app-token': app.appToken }, authorization: [`Bearer ${words.join(' ')}`, ...keys] }))
    expect(reads.length).toBeLessThanOrEqual(8)
    await gate.handle(coreRequest({ tls: false, headers: { authorization: basic('ada', PASSWORD), 'x-app-token': app.appToken } }))
    expect(reads.filter((r) => r === 'getUserByUsername')).toEqual([])
    expect(scryptRuns()).toBe(0)
  })
})

describe('the current user', () => {
  it('answers /api/users/current.json and /users/current.json with the user and nothing secret', async () => {
    const { ada, send } = await setup()
    for (const url of ['/api/users/current.json', '/users/current.json']) {
      const res = respond(await send(basic('ada', PASSWORD), { url }))
      expect(res.status).toBe(200)
      expect(res.json).toEqual({ id: ada.id, screenName: 'Ada Lovelace', displayName: 'Ada Lovelace', email: 'ada@example.org', rights: ['edit'] })
      expect(res.body).not.toMatch(/scrypt|passwordHash/)
      expect(res.headers['cache-control']).toBe('private, no-store')
    }
  })

  it('answers /users/current.xml with well-formed, escaped XML', async () => {
    const { gate, app, send } = await setup()
    const odd = await gate.users.create({ username: 'odd', password: PASSWORD, displayName: 'A <b>&"quoted"\u0007', email: "o'neil@example.org", rights: ['x<y'] })
    const { accessToken } = await gate.tokens.issue({ userId: odd.id, appToken: app.appToken })
    const res = respond(await send(`OAuth ${accessToken}`, { url: '/users/current.xml' }))
    expect(res.headers['content-type']).toBe('application/xml; charset=utf-8')
    const errors: string[] = []
    const doc = new DOMParser({ onError: (level, message) => errors.push(`${level}: ${message}`) }).parseFromString(res.body, 'application/xml')
    expect(errors).toEqual([])
    const text = (name: string) => doc.getElementsByTagName(name)[0]?.textContent
    expect(text('id')).toBe(odd.id)
    expect(text('displayName')).toBe('A <b>&"quoted"')
    expect(text('email')).toBe("o'neil@example.org")
    expect(text('right')).toBe('x<y')
  })

  it('refuses an anonymous request with 403 authentication_required', async () => {
    const { send } = await setup()
    const res = respond(await send(undefined, { url: '/api/users/current.json' }))
    expect(res.status).toBe(403)
    expect(res.json.code).toBe('authentication_required')
  })

  it('refuses other methods with 405', async () => {
    const { send } = await setup()
    const res = respond(await send(basic('ada', PASSWORD), { url: '/users/current.json', method: 'DELETE' }))
    expect(res.status).toBe(405)
    expect(res.headers.allow).toBe('GET, HEAD')
  })

  it('moves to other paths, or away entirely', async () => {
    const moved = await setup({ currentUser: { json: ['/me.json'], xml: [] } })
    expect(respond(await moved.send(basic('ada', PASSWORD), { url: '/me.json' })).status).toBe(200)
    expect(pass(await moved.send(basic('ada', PASSWORD), { url: '/users/current.xml' })).auth).toBe('password')
    const off = await setup({ currentUser: false })
    expect(pass(await off.send(basic('ada', PASSWORD), { url: '/api/users/current.json' })).auth).toBe('password')
  })
})

describe('two kinds of credentials at once', () => {
  it('answers Basic and an OAuth token in one request with 400', async () => {
    const { gate, app, ada } = await setup()
    const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
    const res = respond(
      await gate.handle(coreRequest({ headers: { authorization: basic('ada', PASSWORD), 'x-app-token': app.appToken }, authorization: [basic('ada', PASSWORD), `OAuth ${accessToken}`] })),
    )
    expect(res.status).toBe(400)
    expect(res.json.code).toBe('invalid_request')
  })
})
