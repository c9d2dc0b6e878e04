import { describe, expect, it } from 'vitest'
import { createGate } from '../src/index.js'

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
})
