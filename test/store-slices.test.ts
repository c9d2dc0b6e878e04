/**
 * The storage contract in slices: a store of only applications and rates serves app tokens
 * and throttling with the other features off, and is never asked for anything else; a
 * store lacking a slice a feature that is on needs is refused when the gate is made.
 */
import { describe, expect, it } from 'vitest'
import { createGate, MemoryStore, type ApplicationStore, type GateOutcome, type RateStore } from '../src/index.js'
import { checkStore, describeStore, storeCheckNames } from '../src/testing/index.js'
import { coreRequest } from './support/requests.js'

/** A store of the two smallest slices, kept by a MemoryStore it does not expose. */
class SmallStore implements ApplicationStore, RateStore {
  readonly #inner = new MemoryStore()
  readonly calls: string[] = []
  insertApplication: ApplicationStore['insertApplication'] = (record, limits) => this.#call('insertApplication', () => this.#inner.insertApplication(record, limits))
  getApplication: ApplicationStore['getApplication'] = (appToken) => this.#call('getApplication', () => this.#inner.getApplication(appToken))
  listApplications: ApplicationStore['listApplications'] = (filter) => this.#call('listApplications', () => this.#inner.listApplications(filter))
  updateApplication: ApplicationStore['updateApplication'] = (appToken, patch) => this.#call('updateApplication', () => this.#inner.updateApplication(appToken, patch))
  deleteApplication: ApplicationStore['deleteApplication'] = (appToken) => this.#call('deleteApplication', () => this.#inner.deleteApplication(appToken))
  consumeRate: RateStore['consumeRate'] = (key, limit, windowMs, cost) => this.#call('consumeRate', () => this.#inner.consumeRate(key, limit, windowMs, cost))
  resetRate: RateStore['resetRate'] = (key) => this.#call('resetRate', () => this.#inner.resetRate(key))

  #call<T>(name: string, run: () => T): T {
    this.calls.push(name)
    return run()
  }
}

// usage: false too: this small store keeps no usage, and says so once when usage is on (checked in usage.test.ts).
const FEATURES_OFF = { usage: false, basic: false, oauth: false, currentUser: false, apiKeyEndpoints: false, connectedApps: false } as const
const SLICE_APPLICATION_METHODS = ['insertApplication', 'getApplication', 'listApplications', 'updateApplication', 'deleteApplication'] as const
const SMALL_SLICE_METHODS = new Set(['insertApplication', 'getApplication', 'listApplications', 'updateApplication', 'deleteApplication', 'consumeRate', 'resetRate'])

function response(outcome: GateOutcome) {
  if (outcome.type !== 'respond') throw new Error('the gate let the request through')
  return { ...outcome.response, json: JSON.parse(outcome.response.body) as { code: string; message: string } }
}

describe('a store of applications and rates', () => {
  it('serves app tokens and throttling through createGate with the other features off', async () => {
    const store = new SmallStore()
    const gate = createGate({ store, ...FEATURES_OFF, throttle: { application: { limit: 2, windowMs: 60_000 }, anonymous: { limit: 1, windowMs: 60_000 } } })
    const app = await gate.applications.register({ name: 'Small' })
    const withToken = coreRequest({ headers: { 'x-app-token': app.appToken } })
    const first = await gate.handle(withToken)
    expect(first).toMatchObject({ type: 'next', context: { application: { appToken: app.appToken }, throttle: { remaining: 1 } } })
    expect((await gate.handle(withToken)).type).toBe('next')
    expect(response(await gate.handle(withToken)).status).toBe(429)
    expect((await gate.handle(coreRequest())).type).toBe('next')
    expect(response(await gate.handle(coreRequest())).status).toBe(429)
    expect(response(await gate.handle(coreRequest({ headers: { 'x-app-token': 'nobody-registered-this' } }))).status).toBe(403)
    expect(new Set(store.calls).size).toBeGreaterThan(0)
    expect(store.calls.filter((name) => !SMALL_SLICE_METHODS.has(name))).toEqual([])
  })

  it('answers Basic, OAuth and Bearer credentials 401 authentication_method_disabled, and looks nothing up over plain http', async () => {
    const store = new SmallStore()
    const gate = createGate({ store, ...FEATURES_OFF })
    const app = await gate.applications.register({ name: 'Small' })
    const basic = `Basic ${Buffer.from('abcdefghijklmnopqrstuvwxy:secret-of-a-key').toString('base64')}`
    for (const tls of [true, false]) {
      for (const authorization of [basic, 'OAuth abcdefghijklmnopqrstuvwxyz0123456789', 'Bearer abcdefghijklmnopqrstuvwxyz0123456789']) {
        const refused = response(await gate.handle(coreRequest({ tls, headers: { authorization, 'x-app-token': app.appToken } })))
        expect(refused.status).toBe(401)
        expect(refused.json.code).toBe('authentication_method_disabled')
      }
    }
    // A token in a query parameter over plain http: nothing the gate could hold, nothing looked up.
    expect((await gate.handle(coreRequest({ tls: false, url: '/resource/x.json?access_token=abcdefghijklmnopqrstuvwxyz0123456789' }))).type).toBe('next')
    expect(store.calls.filter((name) => !SMALL_SLICE_METHODS.has(name))).toEqual([])
  })

  it('needs no more than basic: false and oauth: false, which turn the features that need them off by default', () => {
    expect(() => createGate({ store: new SmallStore(), basic: false, oauth: false })).not.toThrow()
  })

  it('serves no OAuth endpoint with oauth: false', async () => {
    const gate = createGate({ oauth: false })
    for (const url of ['/oauth/authorize', '/oauth/access_token', '/oauth/revoke', '/.well-known/oauth-authorization-server', '/oauth/grants', '/api/oauth/grants']) {
      expect((await gate.handle(coreRequest({ url }))).type, url).toBe('next')
    }
  })

  it('is refused with a TypeError naming the slices, their methods and the options when basic is left on', () => {
    const make = () => createGate({ store: new SmallStore(), oauth: false, currentUser: false })
    expect(make).toThrow(TypeError)
    expect(make).toThrow(/it lacks insertUser, getUser, getUserByUsername, updateUser, deleteUser \(the users slice, which `basic` and `apiKeyEndpoints` need\)/)
    expect(make).toThrow(/insertApiKey, getApiKey, listApiKeys, updateApiKey, revokeApiKey \(the apiKeys slice, which `basic` and `apiKeyEndpoints` need\)/)
    expect(make).toThrow(/turn off what needs it \(basic: false, apiKeyEndpoints: false\)/)
  })

  it('is refused for the OAuth slice when oauth is left on, and for the rates slice without a rateStore', () => {
    expect(() => createGate({ store: new SmallStore(), basic: false })).toThrow(/getAccessToken.*\(the oauth slice, which `oauth` and `connectedApps` need\)/)
    const small = new SmallStore()
    const applicationsOnly = Object.fromEntries(SLICE_APPLICATION_METHODS.map((name) => [name, small[name]]))
    expect(() => createGate({ store: applicationsOnly as never, basic: false, oauth: false })).toThrow(/consumeRate, resetRate \(the rates slice, which every gate needs, unless a rateStore holds the rates\)/)
    expect(() => createGate({ store: applicationsOnly as never, rateStore: new MemoryStore(), basic: false, oauth: false })).not.toThrow()
  })

  it('refuses a feature asked for while what it needs is off', () => {
    expect(() => createGate({ basic: false, apiKeyEndpoints: { maxActiveKeys: 5 } })).toThrow(/apiKeyEndpoints needs basic, which is off/)
    expect(() => createGate({ oauth: false, connectedApps: { path: '/grants' } })).toThrow(/connectedApps needs oauth, which is off/)
    expect(() => createGate({ basic: false, oauth: false, currentUser: {} })).toThrow(/currentUser needs basic or oauth, which is off \(basic: false and oauth: false\)/)
    expect(() => createGate({ basic: false, oauth: false, applications: { maxPerUser: 5 } })).toThrow(/applications needs basic or oauth, which is off/)
    // The grace of a rotated secret is no request for the endpoints: it serves gate.applications too.
    expect(() => createGate({ basic: false, oauth: false, applications: { secretGraceMs: 0 } })).not.toThrow()
  })

  it('says which slice an operator call needs when the store lacks it', async () => {
    const gate = createGate({ store: new SmallStore(), ...FEATURES_OFF })
    await expect(gate.users.create({ username: 'ada', displayName: 'Ada', email: 'ada@example.org' })).rejects.toThrow(/the store has no .* \(the users slice of the contract\)/)
  })
})

describe('the conformance kit, slice by slice', () => {
  it('passes a store of applications and rates on the checks of those slices, found by what it implements', async () => {
    const report = await checkStore(() => new SmallStore())
    expect(report.failed).toEqual([])
    expect(report.slices).toEqual(['applications', 'rates'])
    const groups = new Set(report.passed.map((name) => name.slice(0, name.indexOf(':'))))
    expect(groups).toEqual(new Set(['applications', 'rate steps', 'a gate over the store']))
    expect(report.passed).toContain('a gate over the store: serves app tokens and throttling with every other feature off, asking the store for applications and rates only')
  })

  it('runs the checks of the slices a store declares, and only those', async () => {
    const report = await checkStore(() => new MemoryStore(), { slices: ['rates'] })
    expect(report.slices).toEqual(['rates'])
    expect(report.failed).toEqual([])
    // The rates slice: its steps, and several limits at once (MemoryStore has consumeLimits).
    expect(report.passed.every((name) => /^(rate steps|several limits \(optional\)): /.test(name))).toBe(true)
    expect(report.passed.some((name) => name.startsWith('several limits (optional): '))).toBe(true)
    expect(() => checkStore(() => new MemoryStore(), { slices: ['tokens' as never] })).toThrow(/slices must be a list of 'applications'/)
  })

  it('fails the checks of a slice left half done, rather than skipping it', async () => {
    const store = new SmallStore() as SmallStore & { getUser?: () => undefined }
    store.getUser = () => undefined
    const report = await checkStore(() => store)
    expect(report.slices).toContain('users')
    expect(report.failed.some((failure) => failure.name.startsWith('users: '))).toBe(true)
  })

  it('declares every check by default, and the checks of the declared slices with describeStore', () => {
    const declared = (slices?: Parameters<typeof checkStore>[1] extends infer O ? (O extends { slices?: infer S } ? S : never) : never) => {
      const names: string[] = []
      let group = ''
      describeStore('X', () => new MemoryStore(), {
        describe: (name, body) => {
          const outer = group
          group = name
          body()
          group = outer
        },
        it: (name) => void names.push(`${group}: ${name}`),
        ...(slices === undefined ? {} : { slices }),
      })
      return names
    }
    expect(declared()).toHaveLength(storeCheckNames.length)
    const small = declared(['applications', 'rates'])
    expect(small.length).toBeGreaterThan(0)
    expect(small.every((name) => /^(applications|rate steps|several limits \(optional\)|a gate over the store): /.test(name))).toBe(true)
  })
})
