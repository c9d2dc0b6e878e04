import { describe, expect, it } from 'vitest'
import {
  anonymousRateKey,
  applicationRateKey,
  clientFailuresRateKey,
  limitRateKey,
  loginAddressLastRateKey,
  loginAddressRateKey,
  loginRateKey,
  oauthAddressRateKey,
  oauthClientRateKey,
  parseRateKey,
} from '../src/limits/rate-keys.js'

describe('rate keys', () => {
  it('are built in the formats the store, the docs and the command know', () => {
    expect(applicationRateKey('tok')).toBe('app:tok')
    expect(anonymousRateKey('shared', '203.0.113.9', 56)).toBe('anon')
    expect(anonymousRateKey('ip', '203.0.113.9', 56)).toBe('anon:203.0.113.9')
    expect(anonymousRateKey('ip', '2001:db8:aaaa:bb12:1:2:3:4', 64)).toBe('anon:2001:db8:aaaa:bb12:0:0:0:0/64')
    expect(loginRateKey('ada')).toBe('login:ada')
    expect(loginAddressRateKey('203.0.113.9')).toBe('login-ip:203.0.113.9')
    expect(loginAddressLastRateKey('203.0.113.9')).toBe('login-ip-last:203.0.113.9')
    expect(oauthAddressRateKey('2001:db8:aaaa:bb12:1:2:3:4')).toBe('oauth:2001:db8:aaaa:bb00:0:0:0:0/56')
    expect(oauthClientRateKey('tok')).toBe('oauth-client:tok')
    expect(clientFailuresRateKey('tok', '2001:db8:aaaa:bb12:1:2:3:4')).toBe('client:tok:2001:db8:aaaa:bb00:0:0:0:0/56')
  })

  it('are read back into what they count', () => {
    expect(parseRateKey(applicationRateKey('tok'))).toEqual({ kind: 'application', appToken: 'tok' })
    expect(parseRateKey('app:')).toEqual({ kind: 'application', appToken: '' })
    expect(parseRateKey('anon')).toEqual({ kind: 'anonymous', address: null })
    expect(parseRateKey(anonymousRateKey('ip', '2001:db8::1', 56))).toEqual({ kind: 'anonymous', address: '2001:db8:0:0:0:0:0:0/56' })
    expect(parseRateKey(loginRateKey('ada'))).toEqual({ kind: 'login', username: 'ada' })
    expect(parseRateKey(loginAddressRateKey('203.0.113.9'))).toEqual({ kind: 'login-address', address: '203.0.113.9' })
    expect(parseRateKey(loginAddressLastRateKey('203.0.113.9'))).toEqual({ kind: 'login-address-last', address: '203.0.113.9' })
    expect(parseRateKey(oauthAddressRateKey('203.0.113.9'))).toEqual({ kind: 'oauth-address', address: '203.0.113.9' })
    expect(parseRateKey(oauthClientRateKey('tok'))).toEqual({ kind: 'oauth-client', appToken: 'tok' })
    expect(parseRateKey(clientFailuresRateKey('tok', '2001:db8::1'))).toEqual({ kind: 'client-failures', appToken: 'tok', address: '2001:db8:0:0:0:0:0:0/56' })
  })

  it('that the gate does not make are not read as one', () => {
    for (const key of ['', 'anonx', 'anonymous:1.2.3.4', 'app', 'client:tok', 'other:x']) expect(parseRateKey(key)).toBeUndefined()
  })

  it("name a plan's limits after their subject's key, read back, and refuse a name that is not plain", () => {
    expect(limitRateKey(applicationRateKey('tok'), 'day')).toBe('{app:tok}:day')
    expect(parseRateKey(limitRateKey(applicationRateKey('tok'), 'per-hour_2'))).toEqual({ kind: 'limit', subject: { kind: 'application', appToken: 'tok' }, name: 'per-hour_2' })
    expect(parseRateKey(limitRateKey(anonymousRateKey('ip', '2001:db8::1', 56), 'day'))).toEqual({ kind: 'limit', subject: { kind: 'anonymous', address: '2001:db8:0:0:0:0:0:0/56' }, name: 'day' })
    for (const name of ['', 'Day', 'a b', 'x}:y', 'a'.repeat(41)]) expect(() => limitRateKey('app:tok', name)).toThrow(TypeError)
    expect(parseRateKey('{app:tok}:minute@2001:db8:0:0:0:0:0:0/56')).toEqual({ kind: 'limit', subject: { kind: 'application', appToken: 'tok' }, name: 'minute', address: '2001:db8:0:0:0:0:0:0/56' })
    expect(parseRateKey('{app:tok}:minute@203.0.113.9')).toMatchObject({ name: 'minute', address: '203.0.113.9' })
    for (const key of ['{app:tok}', '{app:tok}:', '{other:x}:day', '{app:tok}:Day', '{app:tok}:@203.0.113.9', '{app:tok}:minute:203.0.113.9']) expect(parseRateKey(key)).toBeUndefined()
  })
})
