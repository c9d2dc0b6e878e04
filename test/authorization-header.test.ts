import { describe, expect, it } from 'vitest'
import { readCredentials } from '../src/http/authorization-header.js'
import { coreRequest } from './support/requests.js'

const basic = (raw: string) => `Basic ${Buffer.from(raw, 'utf8').toString('base64')}`
const read = (authorization: string | string[], acceptBearer = true) =>
  readCredentials(
    coreRequest({ headers: { authorization: Array.isArray(authorization) ? authorization[0] : authorization }, authorization: Array.isArray(authorization) ? authorization : [authorization] }),
    acceptBearer,
  )

describe('Authorization header', () => {
  it('splits Basic credentials at the first colon, so passwords may contain colons', () => {
    expect(read(basic('ada:pa:ss:word'))).toEqual({ kind: 'basic', user: 'ada', password: 'pa:ss:word' })
    expect(read(basic('ada:'))).toEqual({ kind: 'basic', user: 'ada', password: '' })
  })

  it('decodes Basic credentials as UTF-8', () => {
    expect(read(basic('zoë:пароль🔑'))).toEqual({ kind: 'basic', user: 'zoë', password: 'пароль🔑' })
  })

  it('accepts the scheme in any case and unpadded base64', () => {
    expect(read(`bAsIc ${Buffer.from('a:b').toString('base64').replace(/=+$/, '')}`)).toEqual({ kind: 'basic', user: 'a', password: 'b' })
  })

  it.each([
    ['Basic', 'one space'],
    ['Basic !!!!', 'not base64'],
    ['Basic YWJj', 'no ":"'],
    [`Basic ${Buffer.from([0x61, 0x3a, 0xff, 0xfe]).toString('base64')}`, 'not UTF-8'],
    [basic('ada:pass\nword'), 'control characters'],
  ])('answers malformed Basic credentials %s with invalid_request', (header, why) => {
    expect(() => read(header)).toThrow(expect.objectContaining({ code: 'invalid_request', status: 400 }))
    expect(() => read(header)).toThrow(why)
  })

  it('reads OAuth and Bearer tokens', () => {
    expect(read('OAuth abc.DEF-123_~+/=')).toEqual({ kind: 'token', scheme: 'oauth', token: 'abc.DEF-123_~+/=' })
    expect(read('Bearer xyz')).toEqual({ kind: 'token', scheme: 'bearer', token: 'xyz' })
  })

  it('leaves Bearer alone when it is turned off, and other schemes always', () => {
    expect(read('Bearer xyz', false)).toBeUndefined()
    expect(read('Digest username="a"')).toBeUndefined()
    expect(read('Token abc')).toBeUndefined()
  })

  it('answers a malformed token with invalid_request', () => {
    expect(() => read('OAuth')).toThrow(expect.objectContaining({ code: 'invalid_request' }))
    expect(() => read('OAuth a b')).toThrow(/Malformed access token/)
  })

  it.each([
    ['a tab', (c: string) => `Basic\t${c}`],
    ['two spaces', (c: string) => `Basic  ${c}`],
    ['a comma', (c: string) => `Basic,${c}`],
    ['a trailing comma', (c: string) => `Basic ${c},`],
  ])('refuses %s after the Basic scheme rather than skipping it', (_, header) => {
    expect(() => read(header(Buffer.from('a:b').toString('base64')))).toThrow(expect.objectContaining({ code: 'invalid_request', status: 400 }))
  })

  it.each(['OAuth\tabc', 'OAuth  abc', 'Bearer\tabc', 'OAuth abc,', 'OAuth token="abc"', 'OAuth,abc'])('refuses the token header %j with invalid_request', (header) => {
    expect(() => read(header)).toThrow(expect.objectContaining({ code: 'invalid_request', status: 400 }))
  })

  it('refuses two Authorization headers (Basic and a token at once) with invalid_request', () => {
    expect(() => read([basic('a:b'), 'OAuth xyz'])).toThrow(/more than one Authorization header/)
  })

  it('refuses two Authorization headers that a Fetch host joined into one value with ", " as two headers', () => {
    expect(() => read(`${basic('a:b')}, OAuth xyz`)).toThrow(/more than one Authorization header/)
    expect(() => read('OAuth abc, OAuth def')).toThrow(/more than one Authorization header/)
    expect(() => read('Bearer abc, Basic YTpi')).toThrow(expect.objectContaining({ code: 'invalid_request', status: 400 }))
  })
})
