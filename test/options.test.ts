import { describe, expect, it, vi } from 'vitest'
import { createGate, MemoryStore, type GateStore } from '../src/index.js'
import { STORE_METHODS } from '../src/store/guarded-store.js'
import { captureWarnings } from './support/warnings.js'

describe('options', () => {
  it.each([
    [{ throttle: { application: { limit: 0, windowMs: 1000 } } }, /throttle\.application\.limit must be a positive integer/],
    [{ throttle: { application: { limit: 10, windowMs: 1.5 } } }, /throttle\.application\.windowMs must be a positive integer/],
    [{ throttle: { anonymous: { limit: -1, windowMs: 1000 } } }, /throttle\.anonymous\.limit/],
    [{ throttle: { anonymous: { limit: 1, windowMs: 1000, scope: 'city' } } }, /throttle\.anonymous\.scope must be 'shared' or 'ip'/],
    [{ throttle: { anonymous: { limit: 1, windowMs: 1000, ipv6Subnet: 200 } } }, /ipv6Subnet/],
    [{ throttle: { onStoreError: 'ignore' } }, /throttle\.onStoreError/],
    [{ throttle: { legacyHeaders: 'yes' } }, /throttle\.legacyHeaders must be true or false/],
    [{ trustProxy: ['not-an-ip'] }, /trustProxy entry "not-an-ip"/],
    [{ proxyHeaders: 'x-real-ip' }, /proxyHeaders must be/],
    [{ storeTimeoutMs: 0 }, /storeTimeoutMs must be a positive integer/],
    [{ store: {} }, /store must implement the GateStore interface/],
    [{ bodyTimeoutMs: -5 }, /bodyTimeoutMs must be a positive integer/],
    [{ basic: { addressFailures: { limit: 0, windowMs: 1000 } } }, /basic\.addressFailures\.limit must be a positive integer/],
    [{ basic: { hashing: { concurrency: 0 } } }, /basic\.hashing\.concurrency must be a positive integer/],
    [{ basic: { hashing: { queuePerAddress: 1.5 } } }, /basic\.hashing\.queuePerAddress must be a positive integer/],
    [{ oauth: { maxSessionsPerUser: 0 } }, /oauth\.maxSessionsPerUser must be a positive integer/],
  ])('rejects %j with a TypeError naming the option', (options, message) => {
    expect(() => createGate(options as never)).toThrow(TypeError)
    expect(() => createGate(options as never)).toThrow(message)
  })

  it('does not change the caller’s options object', () => {
    const options = { throttle: { anonymous: { limit: 5, windowMs: 1000 } } }
    const copy = structuredClone(options)
    createGate(options)
    expect(options).toEqual(copy)
  })

  it.each([
    [{ throtle: false }, 'unknown option `throtle`; did you mean `throttle`?'],
    [{ throttle: { anonymous: { limt: 5, windowMs: 60_000 } } }, 'unknown option `throttle.anonymous.limt`; did you mean `limit`?'],
    [{ throttle: { application: { limit: 5, window: 60_000 } } }, 'unknown option `throttle.application.window`; did you mean `windowMs`?'],
    [{ throttle: { oauthBudget: 'anonymous' } }, 'unknown option `throttle.oauthBudget`; did you mean `oauthTokenBudget`?'],
    [{ basic: { scrypt: { logn: 12 } } }, 'unknown option `basic.scrypt.logn`; did you mean `logN`?'],
    [{ oauth: { pages: { sitename: 'Data' } } }, 'unknown option `oauth.pages.sitename`; did you mean `siteName`?'],
    [{ oauth: { paths: { authorise: '/auth' } } }, 'unknown option `oauth.paths.authorise`; did you mean `authorize`?'],
    [{ currentUser: { jsn: [] } }, 'unknown option `currentUser.jsn`; did you mean `json`?'],
    [{ trustproxy: true }, 'unknown option `trustproxy`; did you mean `trustProxy`?'],
    [{ somethingElse: 1 }, 'unknown option `somethingElse`; valid names are `store`, `rateStore`'],
  ])('refuses the unknown option in %j, naming the nearest valid one', (options, message) => {
    expect(() => createGate(options as never)).toThrow(TypeError)
    expect(() => createGate(options as never)).toThrow(message)
  })

  it('refuses unknown fields in guard rules, store options and management calls too', async () => {
    const gate = createGate()
    expect(() => gate.guard({ auth: 'required', right: ['x'] } as never)).toThrow('unknown option `guard rule.right`; did you mean `rights`?')
    expect(() => new MemoryStore({ maxRatekeys: 10 } as never)).toThrow('did you mean `maxRateKeys`?')
    await expect(gate.applications.register({ name: 'a', callbackPrefx: 'https://a.example/' } as never)).rejects.toThrow('did you mean `callbackPrefix`?')
    const { appToken } = await gate.applications.register({ name: 'a' })
    await expect(gate.applications.update(appToken, { limt: 5 } as never)).rejects.toThrow('did you mean `limit`?')
    await expect(gate.users.create({ username: 'ada', displayName: 'A', email: 'a@example.org', right: [] } as never)).rejects.toThrow('did you mean `rights`?')
  })

  it('refuses an oauthTokenBudget that is neither application nor anonymous', () => {
    expect(() => createGate({ throttle: { oauthTokenBudget: 'shared' as never } })).toThrow(/throttle\.oauthTokenBudget must be 'application' or 'anonymous'/)
  })

  it('refuses store: null or rateStore: null rather than running on a memory store of its own', () => {
    expect(() => createGate({ store: null as never })).toThrow(TypeError)
    expect(() => createGate({ store: null as never })).toThrow('open-data-gate: store must be a GateStore, got null; leave store out for an in-memory store')
    expect(() => createGate({ rateStore: null as never })).toThrow('open-data-gate: rateStore must be a store of rate counters, got null; leave rateStore out to count in store')
    // Left out (or undefined) is the in-memory store, as documented.
    expect(createGate({ store: undefined } as never).store).toBeDefined()
  })

  it('warns once per process, with a code, when the memory store runs with NODE_ENV=production', async () => {
    vi.stubEnv('NODE_ENV', 'production')
    try {
      const inner = new MemoryStore()
      const shared = Object.fromEntries(STORE_METHODS.map((name) => [name, (inner[name] as (...args: unknown[]) => unknown).bind(inner)])) as unknown as GateStore
      const { warnings } = await captureWarnings(() => {
        createGate({ store: shared, usage: false })
        createGate()
        createGate({ store: new MemoryStore() })
        createGate({ store: shared, rateStore: new MemoryStore(), usage: false })
      })
      expect(warnings).toEqual([
        {
          code: 'ODG_MEMORY_STORE_IN_PRODUCTION',
          message: expect.stringMatching(/^open-data-gate: NODE_ENV is production and the gate keeps its records and rate counters in memory \(MemoryStore\): each process has its own/),
        },
      ])
    } finally {
      vi.unstubAllEnvs()
    }
  })

  it('warns at startup, with a code, while loopback callbacks are allowed', async () => {
    const { warnings } = await captureWarnings(() => createGate({ oauth: { allowLoopbackCallbacks: true } }))
    expect(warnings).toEqual([expect.objectContaining({ code: 'ODG_LOOPBACK_CALLBACKS', message: expect.stringContaining('local development only') })])
    const quiet = await captureWarnings(() => createGate())
    expect(quiet.warnings).toEqual([])
  })
})
