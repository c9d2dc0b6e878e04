import { describe, expect, it } from 'vitest'
import { hashPassword, verifyPassword } from '../src/secrets/passwords.js'

const FAST = { logN: 10, blockSize: 8, parallelization: 1 }

describe('passwords', () => {
  it('stores scrypt with its salt and parameters, never the password', async () => {
    const hash = await hashPassword('correct horse battery staple', FAST)
    expect(hash).toMatch(/^\$scrypt\$ln=10,r=8,p=1\$[A-Za-z0-9+/]+=*\$[A-Za-z0-9+/]+=*$/)
    expect(hash).not.toContain('correct')
    expect(await hashPassword('correct horse battery staple', FAST)).not.toBe(hash)
  })

  it('verifies the right password and refuses a wrong one', async () => {
    const hash = await hashPassword('correct horse battery staple', FAST)
    expect(await verifyPassword('correct horse battery staple', hash)).toBe(true)
    expect(await verifyPassword('correct horse battery stapl', hash)).toBe(false)
  })

  it('treats the composed and decomposed forms of a password as the same', async () => {
    const hash = await hashPassword('caf\u00e9 au lait', FAST)
    expect(await verifyPassword('cafe\u0301 au lait', hash)).toBe(true)
  })

  it('verifies each hash with the parameters it was made with', async () => {
    const cheap = await hashPassword('correct horse battery staple', FAST)
    const dearer = await hashPassword('correct horse battery staple', { logN: 11, blockSize: 8, parallelization: 1 })
    expect(await verifyPassword('correct horse battery staple', cheap)).toBe(true)
    expect(await verifyPassword('correct horse battery staple', dearer)).toBe(true)
  })

  it('never matches a malformed hash', async () => {
    expect(await verifyPassword('x', 'plaintext')).toBe(false)
    expect(await verifyPassword('x', '$scrypt$ln=10,r=8,p=1$$')).toBe(false)
  })
})
