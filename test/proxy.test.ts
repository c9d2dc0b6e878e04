import { describe, expect, it } from 'vitest'
import { addressKey, claimsHttps, compileTrustProxy, isPrivateAddress, parseForwarded, resolveClient } from '../src/http/proxy.js'
import { coreRequest } from './support/requests.js'

const resolve = (trust: Parameters<typeof compileTrustProxy>[0], peer: string, headers: Record<string, string>, tls = false, family: 'x-forwarded' | 'forwarded' = 'x-forwarded') =>
  resolveClient(coreRequest({ peerAddress: peer, headers, tls }), compileTrustProxy(trust), family)

describe('client address and secure connection', () => {
  it('believes the socket when no proxy is trusted, whatever the headers say', () => {
    expect(resolve(false, '198.51.100.7', { 'x-forwarded-for': '1.2.3.4', 'x-forwarded-proto': 'https' })).toEqual({ ip: '198.51.100.7', secure: false })
    expect(resolve(false, '198.51.100.7', {}, true)).toEqual({ ip: '198.51.100.7', secure: true })
  })

  it('ignores spoofed headers from a peer outside the trusted list', () => {
    expect(resolve(['10.0.0.0/8'], '198.51.100.7', { 'x-forwarded-for': '1.2.3.4', 'x-forwarded-proto': 'https' })).toEqual({ ip: '198.51.100.7', secure: false })
  })

  it('believes a trusted proxy about the client address and protocol', () => {
    expect(resolve(['10.0.0.0/8'], '10.1.2.3', { 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https' })).toEqual({ ip: '203.0.113.9', secure: true })
  })

  it('stops at the first untrusted hop from the right, so a client cannot prepend a fake address', () => {
    // The client sent "X-Forwarded-For: 6.6.6.6"; the trusted proxy appended the real address.
    expect(resolve(['10.0.0.0/8'], '10.0.0.1', { 'x-forwarded-for': '6.6.6.6, 203.0.113.9' }).ip).toBe('203.0.113.9')
    // Two trusted proxies in a row are walked through.
    expect(resolve(['10.0.0.0/8'], '10.0.0.1', { 'x-forwarded-for': '203.0.113.9, 10.0.0.2' }).ip).toBe('203.0.113.9')
  })

  it('takes the protocol of the hop it chose when the proxies append one protocol per hop', () => {
    expect(resolve(['10.0.0.0/8'], '10.0.0.1', { 'x-forwarded-for': '203.0.113.9, 10.0.0.2', 'x-forwarded-proto': 'http, https' }).secure).toBe(false)
    expect(resolve(['10.0.0.0/8'], '10.0.0.1', { 'x-forwarded-for': '203.0.113.9, 10.0.0.2', 'x-forwarded-proto': 'https, http' }).secure).toBe(true)
  })

  it('keeps the socket protocol when a trusted proxy sends no protocol', () => {
    expect(resolve(true, '10.0.0.1', { 'x-forwarded-for': '203.0.113.9' }, true)).toEqual({ ip: '203.0.113.9', secure: true })
  })

  it('normalises IPv4-mapped IPv6 peers before matching', () => {
    expect(resolve('loopback', '::ffff:127.0.0.1', { 'x-forwarded-for': '203.0.113.9' }).ip).toBe('203.0.113.9')
    expect(resolve(false, '::ffff:127.0.0.1', {}).ip).toBe('127.0.0.1')
  })

  it('accepts a predicate that sees each hop and its distance', () => {
    const seen: Array<[string, number]> = []
    const trust = (ip: string, hop: number) => {
      seen.push([ip, hop])
      return hop < 2
    }
    expect(resolve(trust, '10.0.0.1', { 'x-forwarded-for': '1.1.1.1, 2.2.2.2, 3.3.3.3' }).ip).toBe('2.2.2.2')
    expect(seen).toEqual([['10.0.0.1', 0], ['3.3.3.3', 1], ['2.2.2.2', 2]])
  })

  it('reads RFC 7239 Forwarded only when told to', () => {
    const headers = { forwarded: 'for=203.0.113.9;proto=https, for="[2001:db8::17]:4711";proto=http', 'x-forwarded-for': '6.6.6.6' }
    expect(resolve(true, '10.0.0.1', headers, false, 'forwarded')).toEqual({ ip: '203.0.113.9', secure: true })
    expect(resolve(['10.0.0.0/8'], '10.0.0.1', headers, false, 'forwarded')).toEqual({ ip: '2001:db8::17', secure: false })
    expect(resolve(true, '10.0.0.1', headers, false, 'x-forwarded').ip).toBe('6.6.6.6')
  })

  it('ends the walk at an obfuscated or unknown Forwarded node', () => {
    expect(resolve(true, '10.0.0.1', { forwarded: 'for=203.0.113.9, for=_hidden' }, false, 'forwarded').ip).toBe('10.0.0.1')
    expect(resolve(true, '10.0.0.1', { forwarded: 'for=unknown;proto=https' }, false, 'forwarded')).toEqual({ ip: '10.0.0.1', secure: false })
  })

  it('does not believe a malformed Forwarded header', () => {
    expect(parseForwarded('for=1.2.3.4;;')).toBeUndefined()
    expect(parseForwarded('for="unterminated')).toBeUndefined()
    expect(parseForwarded('for=1.2.3.4;for=5.6.7.8')).toBeUndefined()
    expect(resolve(true, '10.0.0.1', { forwarded: 'for=1.2.3.4;;proto=https' }, false, 'forwarded')).toEqual({ ip: '10.0.0.1', secure: false })
  })

  it('rejects a trustProxy entry that is not an address, range or name, naming the option', () => {
    expect(() => compileTrustProxy(['10.0.0.0/33'])).toThrow(/trustProxy entry "10.0.0.0\/33"/)
    expect(() => compileTrustProxy('example.com')).toThrow(TypeError)
  })

  it('understands the named ranges and comma-separated strings', () => {
    const trust = compileTrustProxy('loopback, uniquelocal')
    expect(trust('127.0.0.1', 0)).toBe(true)
    expect(trust('::1', 0)).toBe(true)
    expect(trust('172.20.1.1', 0)).toBe(true)
    expect(trust('172.32.0.1', 0)).toBe(false)
    expect(trust('8.8.8.8', 0)).toBe(false)
  })
})

describe('throttle keys for client addresses', () => {
  it('keys IPv4 by the address and IPv6 by its prefix', () => {
    expect(addressKey('203.0.113.9', 56)).toBe('203.0.113.9')
    expect(addressKey('2001:db8:aaaa:bb12:1:2:3:4', 56)).toBe('2001:db8:aaaa:bb00:0:0:0:0/56')
    expect(addressKey('2001:db8:aaaa:bbff::9', 56)).toBe(addressKey('2001:db8:aaaa:bb00::1', 56))
    expect(addressKey('2001:db8:aaaa:bc00::1', 56)).not.toBe(addressKey('2001:db8:aaaa:bb00::1', 56))
    expect(addressKey('::ffff:1.2.3.4', 128)).toBe('0:0:0:0:0:ffff:102:304/128')
    expect(addressKey('fe80::1%eth0', 64)).toBe('fe80:0:0:0:0:0:0:0/64')
  })
})

describe('spotting a proxy nobody trusts', () => {
  it('knows the addresses a forgotten proxy sits at: loopback, private, link-local', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '172.16.0.9', '172.31.255.1', '192.168.1.1', '169.254.1.1', '::1', 'fd00::1', 'fe80::1']) {
      expect(isPrivateAddress(address), address).toBe(true)
    }
    for (const address of ['203.0.113.1', '172.32.0.1', '8.8.8.8', '2001:db8::1', 'unknown', '']) {
      expect(isPrivateAddress(address), address).toBe(false)
    }
  })

  it('reads the nearest proxy’s claim of https from either header family', () => {
    const claims = (headers: Record<string, string>) => claimsHttps({ method: 'GET', url: '/', headers, peerAddress: '10.0.0.1', tls: false })
    expect(claims({ 'x-forwarded-proto': 'https' })).toBe(true)
    expect(claims({ 'x-forwarded-proto': 'HTTPS' })).toBe(true)
    expect(claims({ 'x-forwarded-proto': 'http, https' })).toBe(true)
    expect(claims({ 'x-forwarded-proto': 'https, http' })).toBe(false)
    expect(claims({ forwarded: 'for=203.0.113.9;proto=https' })).toBe(true)
    expect(claims({ forwarded: 'for=203.0.113.9;proto=http' })).toBe(false)
    expect(claims({ forwarded: 'proto=https;;' })).toBe(false)
    expect(claims({ 'x-forwarded-for': '203.0.113.9' })).toBe(false)
  })
})
