/**
 * The soak's load driver and its oracle. Workers send a weighted mix of requests to random
 * gate instances over http and https, and judge each answer against what the soak knows:
 * which credentials are live, which were revoked (and when the revocation returned), and
 * whether the request overlapped an outage of Redis.
 *
 * A credential is judged only when its state is certain for the whole request: live (never
 * revoked, no revocation in flight or unconfirmed) or revoked (the revocation had returned
 * before the request started). A revocation whose request failed is retried until it
 * returns; until then the credential's answers are counted as unjudged.
 */
import { createHash, randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { type Answer, CookieJar, header, type SoakClient, type Verdict } from './client.js'
import { GATE_SETTINGS } from './settings.js'

export interface Instance {
  http: string
  https: string
}

export interface SoakApp {
  appToken: string
  secretToken: string
}

export interface SoakUser {
  id: string
  username: string
  password: string
}

/** An API key or an OAuth access token, and what the soak knows of it. */
export interface Credential {
  /** OAuth: the access token; API key: the key id. */
  id: string
  /** API key: its secret. */
  secret?: string
  /** Whose it is. */
  user: SoakUser
  /** When a revocation of it returned (ms since the start), or null. */
  revokedAt: number | null
  /** When a revocation was sent that has not returned yet (or failed), or null. */
  pendingSince: number | null
}

/** A hot application's limit: small, so the soak sees it reached all along. */
export const HOT_LIMIT = { limit: 40, windowMs: GATE_SETTINGS.applicationWindowMs }
export const REDIRECT_URI = 'https://client.soak.example/cb/done'
export const CALLBACK_PREFIX = 'https://client.soak.example/cb/'

export interface World {
  instances: Instance[]
  apps: SoakApp[]
  hotApp: SoakApp
  /** The OAuth client: its Callback Prefix is {@link CALLBACK_PREFIX}. */
  client: SoakApp
  users: SoakUser[]
  /** A user the soak only ever signs in with a wrong password. */
  mallory: string
  keys: Credential[]
  tokens: Credential[]
}

/** Per flow step, and per flow: how the full authorize-login-consent-exchange flows went. */
export interface FlowFigures {
  started: number
  completed: number
  /** Stopped by an answer Redis's outage explains (a 503 page, temporarily_unavailable). */
  interruptedByOutage: number
  /** Stopped by anything else: a bug. */
  failed: number
  replays: number
}

/** The audit after the run: each credential on each instance. */
export interface AuditFigures {
  checks: number
  /** A live credential refused, or a revoked one accepted: lost or half-written data (must be 0). */
  wrong: number
  /** Still a 503 after three retries. */
  unavailable: number
}

/** What a kind of request may be answered with, and what it says about its credential. */
type Expectation = 'live' | 'revoked' | 'unjudged'

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

/** Kinds whose answer needs a record from Redis (not an application record, which every instance keeps a copy of): a 503 during an outage is what the gate promises them. */
export const RECORD_KINDS = new Set([
  'password',
  'wrong-password',
  'api-key',
  'oauth',
  'revoked-oauth',
  'revoked-api-key',
  'leak-over-http',
  'revoke-token',
  'create-key',
  'delete-key',
  'flow-authorize',
  'flow-login',
  'flow-consent',
  'flow-approve',
  'flow-exchange',
  'flow-replay',
  'flow-use',
  'audit-password',
  'audit-api-key',
  'audit-oauth',
])

export class Traffic {
  readonly flows: FlowFigures = { started: 0, completed: 0, interruptedByOutage: 0, failed: 0, replays: 0 }
  /** A few answers the oracle did not expect, for the report. */
  readonly surprises: Array<{ kind: string; status: number; at: number; body: string }> = []
  readonly #client: SoakClient
  readonly #world: World
  #keyNames = 0

  constructor(client: SoakClient, world: World) {
    this.#client = client
    this.#world = world
  }

  /** Runs `workers` loops until `until` (ms since the start), each pausing up to `thinkMs` between actions. */
  async run(workers: number, until: number, thinkMs: number): Promise<void> {
    const loop = async () => {
      while (this.#client.now() < until) {
        await this.#action()
        await sleep(Math.random() * thinkMs)
      }
    }
    await Promise.all(Array.from({ length: workers }, loop))
  }

  /** Every application on every instance, so each instance holds its copy before the first outage. */
  async touchApplications(): Promise<void> {
    for (const [index, instance] of this.#world.instances.entries()) {
      for (const app of [...this.#world.apps, this.#world.hotApp, this.#world.client]) {
        const answer = await this.#client.send(`${instance.https}/resource/warm.json`, { headers: { 'x-app-token': app.appToken } })
        this.#judge('warm-app', index, answer, answer.status === 200 || answer.status === 429 ? 'ok' : 'unexpected')
      }
    }
  }

  /**
   * After the run, with Redis up and still: every credential on every instance. Live ones
   * must work and revoked ones must be refused: a restart lost nothing and left nothing
   * half-written. Every user, and up to `sample` API keys and `sample` access tokens of
   * each state (live, revoked), chosen at random, paced like the run's own traffic.
   */
  async audit(concurrency: number, sample: number): Promise<AuditFigures> {
    const figures: AuditFigures = { checks: 0, wrong: 0, unavailable: 0 }
    const jobs: Array<() => Promise<Verdict>> = []
    const instances = [...this.#world.instances.entries()]
    const settled = (pool: Credential[]) => {
      const live = shuffle(pool.filter((c) => c.revokedAt === null && c.pendingSince === null)).slice(0, sample)
      const revoked = shuffle(pool.filter((c) => c.revokedAt !== null)).slice(0, sample)
      return [...live, ...revoked]
    }
    for (const user of this.#world.users) for (const [index, instance] of instances) jobs.push(() => this.#password(index, instance, user, 'audit-password'))
    for (const key of settled(this.#world.keys)) for (const [index, instance] of instances) jobs.push(() => this.#apiKey(index, instance, key, 'audit-api-key'))
    for (const token of settled(this.#world.tokens)) for (const [index, instance] of instances) jobs.push(() => this.#oauth(index, instance, token, 'audit-oauth'))
    const next = async () => {
      for (let job = jobs.shift(); job !== undefined; job = jobs.shift()) {
        figures.checks++
        // A 503 says nothing about the data (and is counted as a 5xx all the same): ask again.
        let verdict = await job()
        for (let retry = 0; retry < 3 && verdict === 'outage-503'; retry++) {
          await sleep(250)
          verdict = await job()
        }
        if (verdict === 'outage-503') figures.unavailable++
        else if (verdict !== 'ok') figures.wrong++
        await sleep(Math.random() * 10)
      }
    }
    await Promise.all(Array.from({ length: concurrency }, next))
    return figures
  }

  async #action(): Promise<unknown> {
    const index = Math.floor(Math.random() * this.#world.instances.length)
    const instance = this.#world.instances[index] as Instance
    const roll = Math.random() * 100
    const world = this.#world
    if (roll < 18) return this.#anonymous(index, instance)
    if (roll < 34) return this.#app(index, instance)
    if (roll < 42) return this.#hotApp(index, instance)
    if (roll < 52) return this.#password(index, instance, pick(world.users), 'password')
    if (roll < 54) return this.#wrongPassword(index, instance)
    if (roll < 56) return this.#basicOverHttp(index, instance)
    if (roll < 66) return this.#apiKey(index, instance, this.#live(world.keys) ?? pick(world.keys), 'api-key')
    if (roll < 80) return this.#oauth(index, instance, this.#live(world.tokens) ?? pick(world.tokens), 'oauth')
    if (roll < 84) {
      const revoked = [...world.tokens, ...world.keys].filter((c) => c.revokedAt !== null)
      if (revoked.length === 0) return this.#anonymous(index, instance)
      const credential = pick(revoked)
      return credential.secret === undefined ? this.#oauth(index, instance, credential, 'revoked-oauth') : this.#apiKey(index, instance, credential, 'revoked-api-key')
    }
    if (roll < 85) return this.#leakOverHttp(index, instance)
    if (roll < 88) return this.#revokeToken(index, instance)
    if (roll < 89) return this.#createKey(index, instance)
    if (roll < 90) return this.#deleteKey(index, instance)
    return this.#flow()
  }

  /** A credential with no revocation, sent or returned, or undefined when none is left. */
  #live(pool: Credential[]): Credential | undefined {
    for (let i = 0; i < 8; i++) {
      const credential = pick(pool)
      if (credential.revokedAt === null && credential.pendingSince === null) return credential
    }
    return pool.find((c) => c.revokedAt === null && c.pendingSince === null)
  }

  #judge(kind: string, instance: number, answer: Answer, verdict: Verdict): Verdict {
    // A 503 is judged against the outage windows once the run is over (see the report);
    // every other 5xx, and no answer at all, is unexpected whatever the kind.
    if (answer.status === 503) verdict = RECORD_KINDS.has(kind) ? 'outage-503' : 'unexpected'
    else if (answer.status >= 500 || answer.status === 0) verdict = 'unexpected'
    if (verdict === 'unexpected' && this.surprises.length < 40) {
      this.surprises.push({ kind, status: answer.status, at: Math.round(answer.start), body: (answer.error ?? answer.text).slice(0, 200) })
    }
    this.#client.record(kind, instance, answer, verdict)
    return verdict
  }

  async #anonymous(index: number, instance: Instance): Promise<void> {
    const answer = await this.#client.send(`${Math.random() < 0.5 ? instance.http : instance.https}/resource/soak.json`)
    this.#judge('anonymous', index, answer, answer.status === 200 && body(answer)?.auth === 'none' ? 'ok' : 'unexpected')
  }

  async #app(index: number, instance: Instance): Promise<void> {
    const app = pick(this.#world.apps)
    const base = Math.random() < 0.5 ? instance.http : instance.https
    const answer =
      Math.random() < 0.5
        ? await this.#client.send(`${base}/resource/soak.json`, { headers: { 'x-app-token': app.appToken } })
        : await this.#client.send(`${base}/resource/soak.json?$$app_token=${app.appToken}`)
    this.#judge('app-token', index, answer, answer.status === 200 && body(answer)?.app === app.appToken ? 'ok' : 'unexpected')
  }

  async #hotApp(index: number, instance: Instance): Promise<void> {
    const hot = this.#world.hotApp
    const answer = await this.#client.send(`${Math.random() < 0.5 ? instance.http : instance.https}/resource/soak.json`, { headers: { 'x-app-token': hot.appToken } })
    const ok = (answer.status === 200 && body(answer)?.app === hot.appToken) || (answer.status === 429 && header(answer, 'retry-after') !== undefined)
    this.#judge('hot-app', index, answer, ok ? 'ok' : 'unexpected')
  }

  async #password(index: number, instance: Instance, user: SoakUser, kind: string): Promise<Verdict> {
    const answer = await this.#client.send(`${instance.https}/resource/soak.json`, {
      headers: { authorization: basic(user.username, user.password), 'x-app-token': pick(this.#world.apps).appToken },
    })
    return this.#judge(kind, index, answer, credentialVerdict(answer, 'live', user.username))
  }

  async #wrongPassword(index: number, instance: Instance): Promise<void> {
    const answer = await this.#client.send(`${instance.https}/resource/soak.json`, {
      headers: { authorization: basic(this.#world.mallory, `guess-${randomBytes(4).toString('hex')}`), 'x-app-token': pick(this.#world.apps).appToken },
    })
    // 429 once the username's sign-in budget is spent.
    this.#judge('wrong-password', index, answer, answer.status === 429 ? 'ok' : credentialVerdict(answer, 'revoked', this.#world.mallory))
  }

  async #basicOverHttp(index: number, instance: Instance): Promise<void> {
    const user = pick(this.#world.users)
    const answer = await this.#client.send(`${instance.http}/resource/soak.json`, {
      headers: { authorization: basic(user.username, user.password), 'x-app-token': pick(this.#world.apps).appToken },
    })
    this.#judge('basic-over-http', index, answer, answer.status === 403 && body(answer)?.code === 'https_required' ? 'ok' : 'unexpected')
  }

  async #apiKey(index: number, instance: Instance, key: Credential, kind: string): Promise<Verdict> {
    const answer = await this.#client.send(`${instance.https}/resource/soak.json`, {
      headers: { authorization: basic(key.id, key.secret as string), 'x-app-token': pick(this.#world.apps).appToken },
    })
    return this.#judge(kind, index, answer, credentialVerdict(answer, stateOf(key, answer), key.user.username))
  }

  async #oauth(index: number, instance: Instance, token: Credential, kind: string): Promise<Verdict> {
    const answer = await this.#client.send(`${instance.https}/resource/soak.json`, { headers: { authorization: `${Math.random() < 0.5 ? 'OAuth' : 'Bearer'} ${token.id}` } })
    return this.#judge(kind, index, answer, credentialVerdict(answer, stateOf(token, answer), token.user.username))
  }

  /** An access token sent over plain http: the gate revokes it and goes on as anonymous. */
  async #leakOverHttp(index: number, instance: Instance): Promise<void> {
    const token = this.#live(this.#world.tokens)
    if (token === undefined) return
    token.pendingSince = this.#client.now()
    const answer = await this.#client.send(`${instance.http}/resource/soak.json`, { headers: { authorization: `OAuth ${token.id}` } })
    const seen = body(answer)
    if (answer.status === 200 && seen?.user === null && seen.revokedInsecureToken === true) {
      token.revokedAt = answer.end
      token.pendingSince = null
      this.#judge('leak-over-http', index, answer, 'ok')
    } else {
      // The revocation may or may not have happened: /oauth/revoke settles it later.
      this.#judge('leak-over-http', index, answer, answer.status === 200 ? 'unexpected' : 'unjudged')
    }
  }

  /** RFC 7009 revocation by the client; an unconfirmed one from before is retried first. */
  async #revokeToken(index: number, instance: Instance): Promise<void> {
    const token = this.#world.tokens.find((t) => t.revokedAt === null && t.pendingSince !== null && this.#client.now() - t.pendingSince > 2000) ?? this.#live(this.#world.tokens)
    if (token === undefined) return
    token.pendingSince ??= this.#client.now()
    const { appToken, secretToken } = this.#world.client
    const answer = await this.#client.send(`${instance.https}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: token.id, client_id: appToken, client_secret: secretToken }).toString(),
    })
    if (answer.status === 200) {
      token.revokedAt = answer.end
      token.pendingSince = null
    }
    this.#judge('revoke-token', index, answer, answer.status === 200 ? 'ok' : 'unexpected')
  }

  /** A new API key through the platform's endpoint, signed in with a password. */
  async #createKey(index: number, instance: Instance): Promise<void> {
    const user = pick(this.#world.users)
    const answer = await this.#client.send(`${instance.https}/api/api_keys`, {
      method: 'POST',
      headers: { authorization: basic(user.username, user.password), 'x-app-token': pick(this.#world.apps).appToken, 'content-type': 'application/json' },
      body: JSON.stringify({ keyName: `soak ${process.pid} ${++this.#keyNames}` }),
    })
    const created = body(answer) as { keyId?: string; keySecret?: string } | undefined
    if (answer.status === 200 && typeof created?.keyId === 'string' && typeof created.keySecret === 'string') {
      this.#world.keys.push({ id: created.keyId, secret: created.keySecret, user, revokedAt: null, pendingSince: null })
      this.#judge('create-key', index, answer, 'ok')
    } else {
      this.#judge('create-key', index, answer, 'unexpected')
    }
  }

  /** Deletes one of a user's keys through the endpoint; it must never work again. */
  async #deleteKey(index: number, instance: Instance): Promise<void> {
    const key = this.#world.keys.find((k) => k.revokedAt === null && k.pendingSince !== null && this.#client.now() - k.pendingSince > 2000) ?? this.#live(this.#world.keys)
    if (key === undefined) return
    const retry = key.pendingSince !== null
    key.pendingSince ??= this.#client.now()
    const answer = await this.#client.send(`${instance.https}/api/api_keys/${key.id}`, {
      method: 'DELETE',
      headers: { authorization: basic(key.user.username, key.user.password), 'x-app-token': pick(this.#world.apps).appToken },
    })
    // A retried delete may find the key deleted by the attempt that seemed to fail.
    const done = answer.status === 200 || (retry && answer.status === 410)
    if (done) {
      key.revokedAt = answer.end
      key.pendingSince = null
    }
    this.#judge('delete-key', index, answer, done ? 'ok' : 'unexpected')
  }

  /**
   * The whole authorization code flow over raw HTTP, each step on a random instance:
   * the login page (CSRF cookie and field), the sign-in post, the consent page, Allow,
   * the code exchange, the token used; one flow in ten presents its code again, which
   * must be refused and revoke the token it issued.
   */
  async #flow(): Promise<void> {
    const world = this.#world
    const user = pick(world.users)
    const jar = new CookieJar()
    const state = randomBytes(8).toString('hex')
    const verifier = randomBytes(32).toString('base64url')
    const pkce = Math.random() < 0.5
    const params = new URLSearchParams({ client_id: world.client.appToken, response_type: 'code', redirect_uri: REDIRECT_URI, state })
    if (pkce) {
      params.set('code_challenge', createHash('sha256').update(verifier).digest('base64url'))
      params.set('code_challenge_method', 'S256')
    }
    const path = `/oauth/authorize?${params}`
    const at = () => Math.floor(Math.random() * world.instances.length)
    this.flows.started++
    /** One step: its answer, or null when the flow stops here. */
    const step = async (kind: string, url: (i: Instance) => string, init: Parameters<SoakClient['send']>[1], expect: (a: Answer) => boolean): Promise<Answer | null> => {
      const index = at()
      const answer = await this.#client.send(url(world.instances[index] as Instance), { ...init, headers: { ...init?.headers, ...jar.header() } })
      jar.take(answer)
      const location = header(answer, 'location') ?? ''
      // The authorize endpoint sends the store's failure back to the client as temporarily_unavailable.
      const unavailable = answer.status === 503 || (answer.status === 303 && location.startsWith(REDIRECT_URI) && location.includes('error=temporarily_unavailable'))
      if (unavailable) {
        const verdict = this.#judge(kind, index, answer, 'outage-503')
        if (verdict === 'outage-503') this.flows.interruptedByOutage++
        else this.flows.failed++
        return null
      }
      const ok = expect(answer)
      this.#judge(kind, index, answer, ok ? 'ok' : 'unexpected')
      if (!ok) this.flows.failed++
      return ok ? answer : null
    }
    const form = (fields: Record<string, string>) => ({
      method: 'POST' as const,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      body: new URLSearchParams(fields).toString(),
    })
    const login = await step('flow-authorize', (i) => `${i.https}${path}`, {}, (a) => a.status === 200 && a.text.includes('name="password"'))
    if (login === null) return
    const signedIn = await step('flow-login', (i) => `${i.https}${path}`, form({ csrf_token: csrfOf(login.text), username: user.username, password: user.password, action: 'login' }), (a) => a.status === 303)
    if (signedIn === null) return
    const consent = await step('flow-consent', (i) => `${i.https}${path}`, {}, (a) => a.status === 200 && a.text.includes('value="approve"'))
    if (consent === null) return
    const approved = await step('flow-approve', (i) => `${i.https}${path}`, form({ csrf_token: csrfOf(consent.text), action: 'approve' }), (a) => {
      const location = header(a, 'location')
      if (a.status !== 303 || location === undefined || !location.startsWith(`${REDIRECT_URI}?`)) return false
      const back = new URL(location).searchParams
      return back.get('state') === state && back.get('code') !== null
    })
    if (approved === null) return
    const code = new URL(header(approved, 'location') as string).searchParams.get('code') as string
    const exchange = () => form({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, client_id: world.client.appToken, client_secret: world.client.secretToken, ...(pkce ? { code_verifier: verifier } : {}) })
    const exchanged = await step('flow-exchange', (i) => `${i.https}/oauth/access_token`, exchange(), (a) => a.status === 200 && typeof body(a)?.access_token === 'string')
    if (exchanged === null) return
    const token: Credential = { id: body(exchanged)?.access_token as string, user, revokedAt: null, pendingSince: null }
    world.tokens.push(token)
    if (Math.random() < 0.1) {
      this.flows.replays++
      token.pendingSince = this.#client.now()
      const replayed = await step('flow-replay', (i) => `${i.https}/oauth/access_token`, exchange(), (a) => a.status === 400 && body(a)?.error === 'invalid_grant')
      if (replayed === null) return
      token.revokedAt = replayed.end
      token.pendingSince = null
    }
    // Judged by the token's state when the request started, as every other use of a
    // credential: another actor may revoke the token while this request is in flight.
    const used = await step('flow-use', (i) => `${i.https}/api/users/current.json`, { headers: { authorization: `OAuth ${token.id}` } }, (a) => {
      const worked = a.status === 200 && body(a)?.id === user.id
      const refused = a.status === 401
      const expectation = stateOf(token, a)
      return expectation === 'live' ? worked : expectation === 'revoked' ? refused : worked || refused
    })
    if (used !== null) this.flows.completed++
  }
}

/** The credential's state for this answer (see the class comment). */
function stateOf(credential: Credential, answer: Answer): Expectation {
  if (credential.revokedAt !== null && credential.revokedAt <= answer.start) return 'revoked'
  if (credential.revokedAt === null && credential.pendingSince === null) return 'live'
  return 'unjudged'
}

function credentialVerdict(answer: Answer, expectation: Expectation, username: string): Verdict {
  const seen = body(answer)
  const worked = answer.status === 200 && seen?.user === username
  const refused = answer.status === 401 && (seen?.code === 'invalid_credentials' || seen?.code === 'invalid_token')
  if (expectation === 'unjudged') return worked || refused ? 'unjudged' : 'unexpected'
  if (expectation === 'live') return worked ? 'ok' : refused ? 'should-work-failed' : 'unexpected'
  return refused ? 'ok' : worked ? 'should-fail-worked' : 'unexpected'
}

function body(answer: Answer): Record<string, unknown> | undefined {
  try {
    return JSON.parse(answer.text) as Record<string, unknown>
  } catch {
    return undefined
  }
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[items[i], items[j]] = [items[j] as T, items[i] as T]
  }
  return items
}

function csrfOf(html: string): string {
  return /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] ?? ''
}
