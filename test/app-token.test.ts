import { describe, expect, it } from 'vitest'
import { extractAppToken } from '../src/pipeline/app-token.js'
import { PlatformError } from '../src/index.js'
import { coreRequest } from './support/requests.js'

const extract = (headers: Record<string, string>, url = '/resource/x.json', legacy = true) =>
  extractAppToken(coreRequest({ headers, url }), legacy)

describe('application token extraction', () => {
  it('reads the X-App-Token header', () => {
    expect(extract({ 'x-app-token': 'abc' })).toBe('abc')
  })

  it('reads $$app_token, plain or percent-encoded', () => {
    expect(extract({}, '/resource/x.json?$$app_token=abc&$limit=5')).toBe('abc')
    expect(extract({}, '/resource/x.json?%24%24app_token=abc')).toBe('abc')
  })

  it('reads the SODA 1.0 name app_token unless turned off', () => {
    expect(extract({}, '/resource/x.json?app_token=abc')).toBe('abc')
    expect(extract({}, '/resource/x.json?app_token=abc', false)).toBeUndefined()
  })

  it('treats an empty header or parameter as absent', () => {
    expect(extract({ 'x-app-token': '  ' }, '/x?$$app_token=')).toBeUndefined()
  })

  it('accepts the same token in the header and the query', () => {
    expect(extract({ 'x-app-token': 'abc' }, '/x?$$app_token=abc')).toBe('abc')
  })

  it('refuses a header and a query naming different tokens with permission_denied', () => {
    const attempt = () => extract({ 'x-app-token': 'abc' }, '/x?$$app_token=def')
    expect(attempt).toThrow(PlatformError)
    expect(attempt).toThrow(expect.objectContaining({ code: 'permission_denied', status: 403 }))
  })

  it('refuses two different query tokens, and two different repeated headers', () => {
    expect(() => extract({}, '/x?$$app_token=a&app_token=b')).toThrow(/Conflicting app tokens/)
    expect(() => extract({ 'x-app-token': 'a, b' })).toThrow(/Conflicting app tokens/)
    expect(extract({ 'x-app-token': 'a, a' })).toBe('a')
  })

  it('reads every name Express 4\'s query parser reads as an app token, and no other', () => {
    for (const name of ['$$app_token[]', '$$app_token[x]', '[$$app_token]', '%24%24app_token%5B%5D', 'app_token[0]', '$$app_token[']) {
      expect({ name, token: extract({}, `/x?${name}=abc`) }).toEqual({ name, token: 'abc' })
    }
    for (const name of ['x[$$app_token]', '[]$$app_token', '$$app_token]', '$$app_token.x', '$$app_tokens[]']) {
      expect({ name, token: extract({}, `/x?${name}=abc`) }).toEqual({ name, token: undefined })
    }
    expect(extract({}, '/x?app_token[]=abc', false)).toBeUndefined()
    expect(() => extract({}, '/x?$$app_token=abc&$$app_token[]=def')).toThrow(/Conflicting app tokens/)
  })

  it('ignores app_token inside other parameter values', () => {
    expect(extract({}, '/x?$where=name%3D%27app_token%27')).toBeUndefined()
  })
})
