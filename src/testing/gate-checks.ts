/**
 * Checks that drive a real gate over the store, through its public API and
 * `gate.handle(...)` requests as an adapter would send them: the whole sign-in, consent,
 * code, token, Basic and API-key path, with every call the gate makes to the store
 * recorded, so that the check can say no plaintext secret ever reached it.
 */
import assert from 'node:assert/strict'
import { randomInt } from 'node:crypto'
import { createGate, type Gate, type GateOutcome } from '../gate.js'
import type { GateRequest, GateResponse } from '../http/request.js'
import type { GateOptions } from '../config/options.js'
import { randomToken } from '../secrets/tokens.js'
import type { GateStore } from '../store/store.js'
import { SLICE_METHODS, STORE_SLICES } from '../store/slices.js'
import { group, type StoreCheck } from './check.js'

/** Makes the gate a check drives; the kit's own tests pass a deliberately leaky one. */
export type MakeGate = (options: GateOptions) => Gate

const CALLBACK_PREFIX = 'https://client.example/oauth/'
const REDIRECT_URI = `${CALLBACK_PREFIX}callback?tab=1`

/** One call the gate made to the store. */
interface StoreCall {
  readonly method: string
  readonly args: readonly unknown[]
}

/**
 * The store behind a Proxy that records every argument of every call, then calls the
 * store itself (with the store as `this`, so private fields keep working).
 */
export function recordingStore(store: GateStore): { store: GateStore; calls: StoreCall[] } {
  const calls: StoreCall[] = []
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        calls.push({ method: String(property), args })
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
  return { store: proxy, calls }
}

/** Every string inside a value (records, arrays, buffers), for the plaintext search. */
function stringsIn(value: unknown, out: string[], seen = new Set<unknown>()): string[] {
  if (typeof value === 'string') out.push(value)
  else if (typeof value === 'number' || typeof value === 'bigint') out.push(String(value))
  else if (Buffer.isBuffer(value) || value instanceof Uint8Array) {
    const bytes = Buffer.from(value)
    out.push(bytes.toString('utf8'), bytes.toString('hex'), bytes.toString('base64'))
  } else if (typeof value === 'object' && value !== null && !seen.has(value)) {
    seen.add(value)
    for (const key of Object.keys(value)) {
      out.push(key)
      stringsIn((value as Record<string, unknown>)[key], out, seen)
    }
    if (value instanceof Map || value instanceof Set) for (const entry of value) stringsIn(entry, out, seen)
  }
  return out
}

/** The forms a secret could travel in: as is, base64, base64url, hex of its text, and of its bytes when it is base64url. */
function formsOf(secret: string): string[] {
  const text = Buffer.from(secret, 'utf8')
  const forms = [secret, text.toString('base64'), text.toString('base64url'), text.toString('hex')]
  if (/^[A-Za-z0-9_-]{16,}$/.test(secret)) {
    const bytes = Buffer.from(secret, 'base64url')
    forms.push(bytes.toString('hex'), bytes.toString('base64'))
  }
  return forms.map((form) => form.toLowerCase())
}

/**
 * Which of `secrets` (name → plaintext) appear in any argument of `calls`, in any form
 * {@link formsOf} lists, case-insensitively. @returns a line per leak: which secret, which method
 */
export function findPlaintexts(calls: readonly StoreCall[], secrets: Readonly<Record<string, string>>): string[] {
  const leaks: string[] = []
  for (const { method, args } of calls) {
    const haystack = stringsIn(args, []).map((s) => s.toLowerCase())
    for (const [name, secret] of Object.entries(secrets)) {
      const forms = formsOf(secret)
      if (haystack.some((s) => forms.some((form) => s.includes(form)))) leaks.push(`the ${name} reached the store in ${method}()`)
    }
  }
  return [...new Set(leaks)]
}

/** A client of the gate that keeps cookies, as a browser would, from one address of its own. */
class KitClient {
  readonly #gate: Gate
  readonly #ip: string
  readonly #cookies = new Map<string, string>()
  readonly #headers: Readonly<Record<string, string>>

  /** @param headers sent with every request */
  constructor(gate: Gate, headers: Readonly<Record<string, string>> = {}) {
    this.#gate = gate
    this.#headers = headers
    // A private address of its own: the gate's per-address budgets of one run never meet another's.
    this.#ip = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`
  }

  cookie(name: string): string | undefined {
    return this.#cookies.get(name)
  }

  /** `tls: false` sends it over plain http. */
  async send(method: string, url: string, options: { headers?: Record<string, string>; form?: Record<string, string>; cookies?: boolean; tls?: boolean } = {}): Promise<GateOutcome> {
    const headers: Record<string, string> = { ...this.#headers, ...options.headers }
    if (options.cookies !== false && this.#cookies.size > 0) headers.cookie = [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ')
    let readBody: GateRequest['readBody']
    if (options.form !== undefined) {
      const bytes = Buffer.from(new URLSearchParams(options.form).toString())
      headers['content-type'] = 'application/x-www-form-urlencoded'
      readBody = async (limit) => (bytes.length > limit ? { kind: 'too-large' } : { kind: 'raw', bytes })
    }
    const outcome = await this.#gate.handle({ method, url, headers, peerAddress: this.#ip, tls: options.tls ?? true, readBody })
    if (outcome.type === 'respond') this.#keepCookies(outcome.response)
    return outcome
  }

  #keepCookies(response: GateResponse): void {
    const header = response.headers['set-cookie']
    for (const line of header === undefined ? [] : typeof header === 'string' ? [header] : header) {
      const pair = line.split(';')[0] ?? ''
      const eq = pair.indexOf('=')
      const [name, value] = [pair.slice(0, eq), pair.slice(eq + 1)]
      if (/max-age=0(;|$)/i.test(line)) this.#cookies.delete(name)
      else this.#cookies.set(name, value)
    }
  }
}

function responded(outcome: GateOutcome, status: number, what: string): GateResponse {
  assert.equal(outcome.type, 'respond', `${what}: the gate let the request through instead of answering ${status}`)
  const { response } = outcome as Extract<GateOutcome, { type: 'respond' }>
  assert.equal(response.status, status, `${what}: expected ${status}, got ${response.status} ${response.body.slice(0, 200)}`)
  return response
}

function passed(outcome: GateOutcome, what: string): Extract<GateOutcome, { type: 'next' }> {
  if (outcome.type === 'respond') assert.fail(`${what}: the gate answered ${outcome.response.status} ${outcome.response.body.slice(0, 200)}`)
  return outcome
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

/** A gate over the recorded store, with budgets high enough that only the check decides what is refused. */
function kitGate(makeGate: MakeGate, store: GateStore, extra: Partial<GateOptions> = {}): Gate {
  return makeGate({
    store,
    storeTimeoutMs: 5_000,
    basic: { scrypt: { logN: 10 }, cacheTtlMs: 0 },
    // Usage has checks of its own (checks/usage.ts); these gates count nothing.
    usage: false,
    ...extra,
    oauth: { throttle: { limit: 1_000, windowMs: 60_000 }, clientFailures: { limit: 1_000, windowMs: 60_000 }, ...extra.oauth },
  })
}

/** Signs `client` in on the gate's login page and approves; @returns the code from the redirect. */
async function codeThroughPages(client: KitClient, appToken: string, login?: { username: string; password: string }): Promise<string> {
  const authorize = `/oauth/authorize?${new URLSearchParams({ client_id: appToken, response_type: 'code', redirect_uri: REDIRECT_URI, state: 'kit' })}`
  const first = responded(await client.send('GET', authorize), 200, 'the authorize page')
  const csrf = client.cookie('__Host-odg-csrf')
  assert.ok(csrf !== undefined, 'the authorize page sets the CSRF cookie')
  if (login !== undefined) {
    assert.match(first.body, /password/i, 'the authorize page asks to sign in')
    const wrong = await client.send('POST', authorize, { form: { csrf_token: csrf, action: 'login', username: login.username, password: `${login.password}-wrong` } })
    responded(wrong, 401, 'signing in with a wrong password')
    const signedIn = responded(await client.send('POST', authorize, { form: { csrf_token: csrf, action: 'login', ...login } }), 303, 'signing in on the login page')
    assert.ok(client.cookie('__Host-odg-session') !== undefined, `signing in sets the session cookie (got ${String(signedIn.headers['set-cookie'])})`)
    responded(await client.send('GET', authorize), 200, 'the consent page after signing in')
  }
  const approved = responded(await client.send('POST', authorize, { form: { csrf_token: csrf, action: 'approve' } }), 303, 'approving on the consent page')
  const location = new URL(String(approved.headers.location))
  const code = location.searchParams.get('code')
  assert.ok(code !== null, `approving redirects with a code (got ${location.href})`)
  return code
}

const exchange = (client: KitClient, appToken: string, secretToken: string, code: string, tls = true) =>
  client.send('POST', '/oauth/access_token', {
    form: { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, client_id: appToken, client_secret: secretToken },
    cookies: false,
    tls,
  })

/** Whether the client authenticates at the token endpoint: with a code nobody issued, invalid_grant (400) says it did, invalid_client (401) that it did not. */
async function authenticates(client: KitClient, appToken: string, secret: string): Promise<boolean> {
  const outcome = await exchange(client, appToken, secret, `kit-${randomToken(12)}`)
  assert.equal(outcome.type, 'respond', 'the token endpoint answers')
  const { status } = (outcome as Extract<GateOutcome, { type: 'respond' }>).response
  assert.ok(status === 400 || status === 401, `the token endpoint answers 400 or 401, got ${status}`)
  return status === 400
}

/** The gate-driven checks, over gates `makeGate` makes. */
export function gateChecks(makeGate: MakeGate = createGate): StoreCheck[] {
  return [...fullGateChecks(makeGate), ...smallGateChecks(makeGate)]
}

/** The gate with every feature on: every slice of the contract. */
function fullGateChecks(makeGate: MakeGate): StoreCheck[] {
  return group('a gate over the store', STORE_SLICES, [
    [
      'accepts a rotated secret at the token endpoint while its grace lasts, refuses it after, and gives the store only hashes',
      async (store) => {
        const recorded = recordingStore(store)
        const gate = kitGate(makeGate, recorded.store)
        const client = new KitClient(gate)
        const long = await gate.applications.register({ name: 'Kit rotation (long grace)', callbackPrefix: CALLBACK_PREFIX })
        const longNext = await gate.applications.rotateSecret(long.appToken, { graceMs: 3_600_000 })
        assert.ok(await authenticates(client, long.appToken, long.secretToken), 'the previous secret is accepted within its grace')
        assert.ok(await authenticates(client, long.appToken, longNext), 'the new secret is accepted')
        const short = await gate.applications.register({ name: 'Kit rotation (short grace)', callbackPrefix: CALLBACK_PREFIX })
        const shortNext = await gate.applications.rotateSecret(short.appToken, { graceMs: 1 })
        await new Promise((resolve) => setTimeout(resolve, 20))
        assert.ok(!(await authenticates(client, short.appToken, short.secretToken)), 'the previous secret is refused once its grace is over')
        assert.ok(await authenticates(client, short.appToken, shortNext), 'the new secret is still accepted')
        const leaks = findPlaintexts(recorded.calls, { first: long.secretToken, rotated: longNext, short: short.secretToken, shortRotated: shortNext })
        assert.deepEqual(leaks, [], 'no secret token reached the store in plaintext')
      },
    ],
    [
      'retires a rotated secret seen over plain http, so no instance on the store accepts it after, and keeps the new one',
      async (store) => {
        const [one, other] = [kitGate(makeGate, store), kitGate(makeGate, store)]
        const exposed: Array<{ appToken: string; secret: string }> = []
        one.on('clientSecretExposed', (event) => exposed.push(event))
        const app = await one.applications.register({ name: 'Kit rotation (seen in clear)', callbackPrefix: CALLBACK_PREFIX })
        const next = await one.applications.rotateSecret(app.appToken, { graceMs: 3_600_000 })
        const otherClient = new KitClient(other)
        assert.ok(await authenticates(otherClient, app.appToken, app.secretToken), 'the previous secret is accepted within its grace')
        const inClear = await exchange(new KitClient(one), app.appToken, app.secretToken, `kit-${randomToken(12)}`, false)
        assert.equal(inClear.type === 'respond' && inClear.response.status, 400, 'the token endpoint over plain http refuses')
        assert.deepEqual(exposed.map((e) => [e.appToken, e.secret]), [[app.appToken, 'previous']], 'clientSecretExposed tells which secret was seen')
        assert.ok(!(await authenticates(otherClient, app.appToken, app.secretToken)), 'the previous secret is refused by another instance over https after')
        assert.ok(await authenticates(otherClient, app.appToken, next), 'the new secret is still accepted')
        assert.equal((await other.applications.find(app.appToken))?.previousSecretExpiresAt, null, 'the application has no previous secret')
      },
    ],
    [
      'never hands the store a plaintext password, key secret, client secret, code, access token or session cookie',
      async (store) => {
        const recorded = recordingStore(store)
        const gate = kitGate(makeGate, recorded.store)
        const client = new KitClient(gate)
        const secrets: Record<string, string> = {}

        const app = await gate.applications.register({ name: 'Conformance kit', callbackPrefix: CALLBACK_PREFIX })
        secrets['client secret'] = app.secretToken
        const username = `kit-${randomToken(9).toLowerCase()}`
        secrets.password = `kit password ${randomToken(12)}`
        secrets['wrong password'] = `${secrets.password}-wrong`
        const user = await gate.users.create({ username, password: secrets.password, displayName: 'Kit User', email: `${username}@kit.example` })
        const key = await gate.apiKeys.create(user.id, { name: 'kit key' })
        secrets['API key secret'] = key.keySecret

        const withApp = (authorization: string) => ({ headers: { authorization, 'x-app-token': app.appToken } })
        const byPassword = passed(await client.send('GET', '/resource/kit.json', withApp(basic(username, secrets.password))), 'a request with the password')
        assert.equal(byPassword.context.user?.id, user.id, 'the password authenticates the user')
        const byKey = passed(await client.send('GET', '/resource/kit.json', withApp(basic(key.keyId, key.keySecret))), 'a request with the API key')
        assert.equal(byKey.context.auth, 'api-key')

        const code = await codeThroughPages(client, app.appToken, { username, password: secrets.password })
        secrets['authorization code'] = code
        secrets['session cookie'] = client.cookie('__Host-odg-session') ?? assert.fail('no session cookie')
        const tokenResponse = responded(await exchange(client, app.appToken, app.secretToken, code), 200, 'exchanging the code')
        const accessToken = (JSON.parse(tokenResponse.body) as { access_token: string }).access_token
        secrets['access token'] = accessToken
        const byToken = passed(await client.send('GET', '/resource/kit.json', { headers: { authorization: `OAuth ${accessToken}` } }), 'a request with the access token')
        assert.equal(byToken.context.user?.id, user.id)

        // The self-service endpoints: a key made over HTTP with the password (never with the
        // application's access token), the connected app the consent recorded.
        responded(
          await client.send('POST', '/api/api_keys', { headers: { authorization: `OAuth ${accessToken}` }, form: { keyName: 'kit token key' }, cookies: false }),
          403,
          'creating an API key through /api/api_keys with an access token',
        )
        const made = responded(
          await client.send('POST', '/api/api_keys', { ...withApp(basic(username, secrets.password)), form: { keyName: 'kit endpoint key' }, cookies: false }),
          200,
          'creating an API key through /api/api_keys with the password',
        )
        const endpointKey = JSON.parse(made.body) as { keyId: string; keySecret: string }
        secrets['API key secret made over HTTP'] = endpointKey.keySecret
        passed(await client.send('GET', '/resource/kit.json', withApp(basic(endpointKey.keyId, endpointKey.keySecret))), 'a request with the key made over HTTP')
        const grants = responded(await client.send('GET', '/api/oauth/grants', { ...withApp(basic(username, secrets.password)), cookies: false }), 200, 'listing connected apps')
        assert.ok(grants.body.includes(app.appToken), 'the approved application is listed as a connected app')
        responded(await client.send('DELETE', `/api/api_keys/${endpointKey.keyId}`, { ...withApp(basic(username, secrets.password)), cookies: false }), 200, 'deleting the key made over HTTP')
        responded(await client.send('GET', '/resource/kit.json', withApp(basic(endpointKey.keyId, endpointKey.keySecret))), 401, 'a request with the deleted key')

        const revoked = await client.send('POST', '/oauth/revoke', { form: { token: accessToken, client_id: app.appToken, client_secret: app.secretToken }, cookies: false })
        responded(revoked, 200, 'revoking the access token')
        responded(await client.send('GET', '/resource/kit.json', { headers: { authorization: `OAuth ${accessToken}` } }), 401, 'a request with the revoked token')

        const issued = await gate.tokens.issue({ userId: user.id, appToken: app.appToken })
        secrets['issued access token'] = issued.accessToken
        passed(await client.send('GET', '/resource/kit.json', { headers: { authorization: `Bearer ${issued.accessToken}` } }), 'a request with an issued token')

        secrets['new password'] = `kit new password ${randomToken(12)}`
        await gate.users.setPassword(user.id, secrets['new password'])
        passed(await client.send('GET', '/resource/kit.json', withApp(basic(username, secrets['new password']))), 'a request with the new password')
        const rotatedKey = await gate.apiKeys.rotate(key.keyId)
        secrets['rotated API key secret'] = rotatedKey?.keySecret ?? assert.fail('rotating the API key failed')
        passed(await client.send('GET', '/resource/kit.json', withApp(basic(key.keyId, secrets['rotated API key secret']))), 'a request with the rotated key')
        secrets['rotated client secret'] = (await gate.applications.rotateSecret(app.appToken)) ?? assert.fail('rotating the client secret failed')
        assert.equal(await gate.applications.verifySecret(app.appToken, secrets['rotated client secret']), true)

        // What was revoked or replaced is refused from the moment the call returns.
        responded(await client.send('GET', '/resource/kit.json', withApp(basic(username, secrets.password))), 401, 'a request with the old password')
        responded(await client.send('GET', '/resource/kit.json', withApp(basic(key.keyId, key.keySecret))), 401, 'a request with the replaced key secret')
        assert.equal(await gate.apiKeys.revoke(key.keyId), true)
        responded(await client.send('GET', '/resource/kit.json', withApp(basic(key.keyId, secrets['rotated API key secret']))), 401, 'a request with the revoked key')
        assert.equal(await gate.applications.delete(app.appToken), true)
        responded(await client.send('GET', '/resource/kit.json', { headers: { 'x-app-token': app.appToken } }), 403, 'a request with the deleted app token')

        const called = new Set(recorded.calls.map((call) => call.method))
        for (const method of ['insertUser', 'insertApiKey', 'insertSession', 'insertAuthorizationCode', 'insertAccessToken', 'consumeAuthorizationCode', 'recordGrant']) {
          assert.ok(called.has(method), `the gate called ${method} on the store`)
        }
        const leaks = findPlaintexts(recorded.calls, secrets)
        assert.deepEqual(leaks, [], `plaintext secrets reached the store:\n${leaks.join('\n')}`)
      },
    ],
    [
      'answers 50 concurrent exchanges of one code with exactly one token, and revokes it as a replay',
      async (store) => {
        const gate = kitGate(makeGate, store, {
          oauth: { authenticateUser: (request) => (request.headers['x-kit-user'] as string | undefined) ?? null },
        })
        const client = new KitClient(gate)
        const app = await gate.applications.register({ name: 'Conformance kit', callbackPrefix: CALLBACK_PREFIX })
        const user = await gate.users.create({ username: `kit-${randomToken(9).toLowerCase()}`, displayName: 'Kit User', email: 'kit@kit.example' })
        // Signed in by the host (oauth.authenticateUser): no password to hash.
        const code = await codeThroughPages(new KitClient(gate, { 'x-kit-user': user.id }), app.appToken)
        const outcomes = await Promise.all(Array.from({ length: 50 }, () => exchange(client, app.appToken, app.secretToken, code)))
        const statuses = outcomes.map((o) => (o.type === 'respond' ? o.response.status : 0))
        assert.equal(statuses.filter((s) => s === 200).length, 1, `exchanges answered with a token (statuses: ${[...new Set(statuses)].join(', ')})`)
        for (const outcome of outcomes) {
          if (outcome.type === 'respond' && outcome.response.status !== 200) {
            assert.equal((JSON.parse(outcome.response.body) as { error: string }).error, 'invalid_grant', 'every other exchange is invalid_grant')
          }
        }
        const winner = outcomes.find((o) => o.type === 'respond' && o.response.status === 200) as Extract<GateOutcome, { type: 'respond' }>
        const token = (JSON.parse(winner.response.body) as { access_token: string }).access_token
        responded(await client.send('GET', '/resource/kit.json', { headers: { authorization: `OAuth ${token}` } }), 401, 'the winning token, once the code was replayed')
        assert.deepEqual(await store.listAccessTokens(user.id), [], 'no token issued from the replayed code is live')
      },
    ],
  ])
}

/** The methods of the applications and rates slices (and the lifecycle): all a gate with every other feature off may call. */
const SMALL_GATE_METHODS: ReadonlySet<string> = new Set([...SLICE_METHODS.applications, ...SLICE_METHODS.rates, 'attach', 'close'])

/** The gate with HTTP Basic, OAuth and what needs them off: the applications and rates slices only. */
function smallGateChecks(makeGate: MakeGate): StoreCheck[] {
  return group('a gate over the store', ['applications', 'rates'], [
    [
      'serves app tokens and throttling with every other feature off, asking the store for applications and rates only',
      async (store) => {
        // The store as one of these two slices only: a whole store is checked as the small one it contains.
        const small = Object.fromEntries([...SMALL_GATE_METHODS].filter((name) => typeof (store as unknown as Record<string, unknown>)[name] === 'function').map((name) => [name, (store as unknown as Record<string, (...args: unknown[]) => unknown>)[name]?.bind(store)]))
        const recorded = recordingStore(small as unknown as GateStore)
        // usage: false: this view of the store has the two slices only, and is not meant to count.
        const gate = makeGate({ store: recorded.store, storeTimeoutMs: 5_000, basic: false, oauth: false, usage: false, throttle: { application: { limit: 3, windowMs: 60_000 }, anonymous: false } })
        const client = new KitClient(gate)
        const app = await gate.applications.register({ name: 'Conformance kit, small' })
        const withApp = (headers: Record<string, string> = {}) => ({ headers: { 'x-app-token': app.appToken, ...headers } })
        for (let i = 1; i <= 3; i++) {
          const through = passed(await client.send('GET', '/resource/kit.json', withApp()), `request ${i} of 3 with the app token`)
          assert.equal(through.context.application?.appToken, app.appToken, 'the request counts against its application')
          assert.equal(through.context.throttle?.remaining, 3 - i, `request ${i} of 3 leaves ${3 - i}`)
        }
        responded(await client.send('GET', '/resource/kit.json', withApp()), 429, 'the fourth request with the app token')
        const basicRefused = responded(await client.send('GET', '/resource/kit.json', withApp({ authorization: basic('kit', 'password') })), 401, 'a request with HTTP Basic turned off')
        assert.match(basicRefused.body, /authentication_method_disabled/)
        assert.equal(await gate.applications.delete(app.appToken), true)
        responded(await client.send('GET', '/resource/kit.json', withApp()), 403, 'a request with the deleted app token')
        const outside = [...new Set(recorded.calls.map((call) => call.method).filter((method) => !SMALL_GATE_METHODS.has(method)))]
        assert.deepEqual(outside, [], `the gate called the store outside the applications and rates slices: ${outside.join(', ')}`)
      },
    ],
  ])
}
