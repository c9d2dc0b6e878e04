/**
 * The example portal's `--config` file: provisioned through the gate's public API, checked
 * first on a scratch store so that a bad file changes nothing and its error names the field.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createGate, MemoryStore } from '../src/index.js'
import { loadConfig, provision } from '../examples/provision.js'

const dir = mkdtempSync(join(tmpdir(), 'odg-config-'))
const file = (name: string, content: unknown) => {
  const path = join(dir, name)
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content))
  return path
}

describe('the example portal provisioned from a file', () => {
  it.each([
    ['not-json.json', '{"applications": [', /not-json\.json: not JSON: /],
    ['top.json', { apps: [] }, /top\.json: apps is not a field here \(fields: applications, users\)/],
    ['type.json', { applications: [{ name: 'x', limit: '5' }] }, /applications\[0\]\.limit must be number or null/],
    ['missing.json', { users: [{ username: 'x', displayName: 'X' }] }, /users\[0\]\.email is missing/],
    ['prefix.json', { applications: [{ name: 'ok' }, { name: 'x', callbackPrefix: 'http://x.example/' }] }, /applications\[1\]: callbackPrefix must be an absolute https URL/],
    ['key.json', { users: [{ username: 'x', displayName: 'X', email: 'x@example.org', apiKeys: [{ name: 'k', keyId: 'short' }] }] }, /users\[0\]\.apiKeys\[0\]: an imported keyId must be 25 lower-case letters/],
    ['secret.json', { applications: [{ name: 'x', secretToken: 'tiny' }] }, /applications\[0\]: an imported secretToken must be 16 to 512/],
  ])('refuses %s naming the field', async (name, content, message) => {
    await expect(loadConfig(file(name, content))).rejects.toThrow(message)
  })

  it('provisions imported and new credentials, hashed, and provisions again without duplicating them', async () => {
    const path = file('good.json', {
      applications: [{ name: 'Imported', appToken: 'Imported_App_1', secretToken: 'imported-secret-token-0123456789', limit: 50 }],
      users: [{ username: 'grace', password: 'grace passphrase long', displayName: 'Grace', email: 'g@example.org', apiKeys: [{ name: 'Imported key', keyId: 'gracekey23456789abcdefghi', keySecret: 'imported-key-secret-0123456789' }] }],
    })
    const config = await loadConfig(path)
    const store = new MemoryStore()
    const gate = createGate({ store, basic: { scrypt: { logN: 10 } } })
    const first = await provision(gate, config)
    expect(first.applications).toEqual([{ appToken: 'Imported_App_1', name: 'Imported', secretToken: 'imported-secret-token-0123456789', created: true }])
    expect(await gate.applications.verifySecret('Imported_App_1', 'imported-secret-token-0123456789')).toBe(true)
    expect(JSON.stringify(store.getApplication('Imported_App_1'))).not.toContain('imported-secret')
    const again = await provision(gate, { ...config, applications: [{ ...config.applications![0]!, limit: 80 }] })
    expect(again.applications[0]).toMatchObject({ created: false })
    expect(again.users[0]).toMatchObject({ created: false, apiKeys: [{ keyId: 'gracekey23456789abcdefghi', created: false }] })
    expect((await gate.applications.list()).map((a) => [a.appToken, a.limit])).toEqual([['Imported_App_1', 80]])
    expect(await gate.apiKeys.list(first.users[0]!.id)).toHaveLength(1)
  })
})
