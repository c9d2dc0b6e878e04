import { describe, expect, it } from 'vitest'
import { RouteTable, type Route } from '../src/pipeline/routes.js'

const route = (name: string): Route => ({ stage: 'checked', endpoint: { answer: () => ({ status: 200, headers: {}, body: name }) } })

describe('RouteTable', () => {
  const exact = route('exact')
  const item = route('item')
  const table = new RouteTable()
  table.add('/oauth/token', exact)
  table.addMatcher(['/api/keys/'], (path) => (path.startsWith('/api/keys/') && path.length > 10 ? item : undefined))

  it('finds exact paths and paths under a matcher prefix', () => {
    expect(table.find('/oauth/token')).toBe(exact)
    expect(table.find('/api/keys/k1')).toBe(item)
  })

  it('gives the host every other path, whether or not its second character is one of the table\'s', () => {
    for (const path of ['/resource/x.json', '/oauth/tokens', '/api/keys/', '/apx', '/', '', '/é', 'x']) expect(table.find(path)).toBeUndefined()
  })

  it('still finds paths of one character or with a non-ASCII second one', () => {
    const short = route('short')
    const accented = route('accented')
    const other = new RouteTable()
    other.add('/', short)
    other.add('/é', accented)
    expect(other.find('/')).toBe(short)
    expect(other.find('/é')).toBe(accented)
    expect(other.find('/resource/x.json')).toBeUndefined()
  })
})
