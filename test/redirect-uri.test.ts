import { describe, expect, it } from 'vitest'
import { redirectUriProblem, withParams } from '../src/oauth/redirect-uri.js'

const PREFIX = 'https://app.example/oauth/'

describe('redirect_uri against the Callback Prefix', () => {
  it.each([
    'https://app.example/oauth/',
    'https://app.example/oauth/callback',
    'https://app.example/oauth/callback?tab=1&x=%20y',
    'https://app.example/oauth/c%C3%A9?q=%27',
  ])('accepts %s', (uri) => {
    expect(redirectUriProblem(uri, PREFIX)).toBeUndefined()
  })

  it.each([
    ['http://app.example/oauth/cb', 'does not use https'],
    ['https://app.example.evil.net/oauth/cb', 'scheme, host or port differ'],
    ['https://evil.net/app.example/oauth/cb', 'scheme, host or port differ'],
    ['https://app.example:8443/oauth/cb', 'scheme, host or port differ'],
    ['https://app.example@evil.net/oauth/cb', 'contains credentials'],
    ['https://user:pw@app.example/oauth/cb', 'contains credentials'],
    ['https://app.example/oauth/cb#frag', 'contains a fragment'],
    ['https://app.example/oauth/cb#', 'contains a fragment'],
    ['https://app.example/oauth/../admin', 'dot segments'],
    ['https://app.example/oauth/%2e%2e/admin', 'dot segments'],
    ['https://app.example/oauth/./cb', 'dot segments'],
    ['https://app.example/oauth%2fcb', 'encoded slash'],
    ['https://app.example/oauth/cb%5C..%5Cadmin', 'encoded slash'],
    ['https://app.example/oauth\\cb', 'backslash'],
    ['https://app.example/oauth/c b', 'whitespace'],
    ['https://app.example/other/cb', 'does not start with the registered Callback Prefix'],
    ['https://app.example/oauthx/cb', 'does not start with the registered Callback Prefix'],
    ['/oauth/cb', 'not an absolute URL'],
    ['https:app.example/oauth/cb', 'not written as the absolute URL it stands for (https://app.example/oauth/cb)'],
    ['https:/app.example/oauth/cb', 'not written as the absolute URL'],
    ['https:///app.example/oauth/cb', 'not written as the absolute URL'],
    ['https://APP.example:443/oauth/cb', 'not written as the absolute URL'],
    ['HTTPS://app.example/oauth/cb', 'not written as the absolute URL'],
    ['https://app.example', 'not written as the absolute URL'],
    ['https://app.example/oauth/..;/admin', 'dot segments'],
    ['https://app.example/oauth/%252e%252e/admin', 'dot segments'],
    ['https://app.example/oauth/.%2E/admin', 'dot segments'],
    ['https://app.example/oauth/%252fadmin', 'encoded slash'],
    ['https://app.example/oauth/cb%255c', 'encoded slash'],
    ['https://app.example/oauth/cb//evil.example', 'empty segment'],
    ['https://app.example/oauth//cb', 'empty segment'],
    ['https://app.example/oauth/cb?code=planted', 'already has a code parameter'],
    ['https://app.example/oauth/cb?x=1&state=planted', 'already has a state parameter'],
    [`https://app.example/oauth/${'a'.repeat(3000)}`, 'too long'],
  ])('refuses %s (%s)', (uri, why) => {
    expect(redirectUriProblem(uri, PREFIX)).toContain(why)
  })

  it('continues a prefix without a trailing slash only at a segment boundary', () => {
    expect(redirectUriProblem('https://app.example/cb', 'https://app.example/cb')).toBeUndefined()
    expect(redirectUriProblem('https://app.example/cb/more', 'https://app.example/cb')).toBeUndefined()
    expect(redirectUriProblem('https://app.example/cb?x=1', 'https://app.example/cb')).toBeUndefined()
    expect(redirectUriProblem('https://app.example/cbevil', 'https://app.example/cb')).toContain('does not start with')
  })
})

describe('adding the response to the redirect_uri', () => {
  it('keeps an existing query byte for byte and appends after it', () => {
    expect(withParams('https://a.example/cb?x=%20y&z', { code: 'abc', state: 's' })).toBe('https://a.example/cb?x=%20y&z&code=abc&state=s')
    expect(withParams('https://a.example/cb', { code: 'abc' })).toBe('https://a.example/cb?code=abc')
    expect(withParams('https://a.example/cb?', { code: 'abc' })).toBe('https://a.example/cb?code=abc')
  })

  it('encodes values so they come back exactly as sent, and leaves out absent ones', () => {
    const url = withParams('https://a.example/cb', { state: 'a b&c=d/é', error_description: undefined })
    expect(new URL(url).searchParams.get('state')).toBe('a b&c=d/é')
    expect(url).not.toContain('error_description')
  })
})
