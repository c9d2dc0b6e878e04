/**
 * Provisioning the example portal from a file (`npm run demo -- --config portal.json`):
 * applications, users, their API keys and limits, with plain-text secrets in the file that
 * the gate hashes on load. Everything goes through the gate's public API
 * (`applications.register`, `users.create`, `apiKeys.create`), so the file is checked by
 * the same rules as any other input; it is loaded into a scratch in-memory gate first, so
 * a bad file changes nothing and the error names the field.
 *
 * Running it twice is harmless: an application or key with a given token or id that
 * exists already, or a user whose username exists, is kept (a limit or a password given
 * in the file is applied); entries without a token or id are made anew each time.
 */
import { readFile } from 'node:fs/promises'
import { createGate, GateError, MemoryStore, StoreError, type Gate } from 'open-data-gate'

/** One application of the file. */
export interface ApplicationEntry {
  name: string
  callbackPrefix?: string | null
  limit?: number | null
  /** Keep this app token (import); omit for a new one. */
  appToken?: string
  /** Keep this secret token (import); omit for a new one. */
  secretToken?: string
}

/** One API key of a user. */
export interface ApiKeyEntry {
  name: string
  keyId?: string
  keySecret?: string
}

/** One user of the file. */
export interface UserEntry {
  username: string
  password?: string | null
  displayName: string
  email: string
  screenName?: string
  rights?: string[]
  apiKeys?: ApiKeyEntry[]
}

/** The file: `{ "applications": [...], "users": [...] }`. */
export interface PortalConfig {
  applications?: ApplicationEntry[]
  users?: UserEntry[]
}

/** What provisioning made or found, with the secrets it knows (from the file, or new). */
export interface Provisioned {
  applications: Array<{ appToken: string; name: string; secretToken: string | null; created: boolean }>
  users: Array<{ id: string; username: string; created: boolean; apiKeys: Array<{ keyId: string; name: string; keySecret: string | null; created: boolean }> }>
}

/** A file that cannot be loaded: the message names the file and the field. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError'
}

const APPLICATION_FIELDS = ['name', 'callbackPrefix', 'limit', 'appToken', 'secretToken']
const USER_FIELDS = ['username', 'password', 'displayName', 'email', 'screenName', 'rights', 'apiKeys']
const KEY_FIELDS = ['name', 'keyId', 'keySecret']

/** Reads and checks a file. @throws {ConfigError} naming the field */
export async function loadConfig(path: string): Promise<PortalConfig> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    throw new ConfigError(`${path}: cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    throw new ConfigError(`${path}: not JSON: ${(error as Error).message}`)
  }
  const config = checkShape(path, parsed)
  // A dry run on a scratch store: the library's own rules check every value.
  await provision(createGate({ store: new MemoryStore(), basic: { scrypt: { logN: 10 } } }), config, path)
  return config
}

/**
 * Writes the file's records through the gate.
 * @throws {ConfigError} naming the entry and the field the gate refused
 */
export async function provision(gate: Gate, config: PortalConfig, source = 'config'): Promise<Provisioned> {
  const out: Provisioned = { applications: [], users: [] }
  for (const [i, entry] of (config.applications ?? []).entries()) {
    const at = `${source}: applications[${i}]`
    const existing = entry.appToken === undefined ? undefined : await gate.applications.find(entry.appToken)
    if (existing !== undefined) {
      if (entry.limit !== undefined && entry.limit !== existing.limit) await refusedAt(at, () => gate.applications.update(existing.appToken, { limit: entry.limit ?? null }))
      out.applications.push({ appToken: existing.appToken, name: existing.name, secretToken: entry.secretToken ?? null, created: false })
      continue
    }
    const registered = await refusedAt(at, () => gate.applications.register(entry))
    out.applications.push({ appToken: registered.appToken, name: registered.application.name, secretToken: registered.secretToken, created: true })
  }
  for (const [i, entry] of (config.users ?? []).entries()) {
    const at = `${source}: users[${i}]`
    const { apiKeys = [], ...fields } = entry
    const found = await gate.users.findByUsername(entry.username)
    const user = found ?? (await refusedAt(at, () => gate.users.create(fields)))
    // The file is the source of truth for a password it gives.
    if (found !== undefined && typeof entry.password === 'string') await refusedAt(`${at}.password`, () => gate.users.setPassword(found.id, entry.password as string))
    const keys: Provisioned['users'][number]['apiKeys'] = []
    for (const [k, key] of apiKeys.entries()) {
      const existing = key.keyId === undefined ? undefined : await gate.apiKeys.find(key.keyId)
      if (existing !== undefined) {
        if (existing.userId !== user.id) throw new ConfigError(`${at}.apiKeys[${k}].keyId: ${key.keyId} is another user's key`)
        keys.push({ keyId: existing.keyId, name: existing.name, keySecret: key.keySecret ?? null, created: false })
        continue
      }
      const issued = await refusedAt(`${at}.apiKeys[${k}]`, () => gate.apiKeys.create(user.id, key))
      keys.push({ keyId: issued.keyId, name: key.name, keySecret: issued.keySecret, created: true })
    }
    out.users.push({ id: user.id, username: user.username, created: found === undefined, apiKeys: keys })
  }
  return out
}

/** Runs a write, and turns the gate's refusal into one naming the entry. */
async function refusedAt<T>(at: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write()
  } catch (error) {
    // A TypeError names the bad field; a GateError is a refusal (a taken token). An outage is not the file's fault.
    if (error instanceof TypeError || (error instanceof GateError && !(error instanceof StoreError))) {
      throw new ConfigError(`${at}: ${error.message.replace(/^open-data-gate: /, '')}`)
    }
    throw error
  }
}

/** Types and unknown fields, before any value reaches the gate. */
function checkShape(source: string, value: unknown): PortalConfig {
  const object = (at: string, v: unknown, allowed: string[]): Record<string, unknown> => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ConfigError(`${source}: ${at} must be an object`)
    for (const key of Object.keys(v)) {
      if (!allowed.includes(key)) throw new ConfigError(`${source}: ${at === '(top level)' ? '' : `${at}.`}${key} is not a field here (fields: ${allowed.join(', ')})`)
    }
    return v as Record<string, unknown>
  }
  const list = (at: string, v: unknown): unknown[] => {
    if (v === undefined) return []
    if (!Array.isArray(v)) throw new ConfigError(`${source}: ${at} must be a list`)
    return v
  }
  const types = (at: string, entry: Record<string, unknown>, spec: Record<string, string>) => {
    for (const [field, type] of Object.entries(spec)) {
      const v = entry[field]
      const required = !type.endsWith('?')
      const base = type.replace('?', '')
      if (v === undefined) {
        if (required) throw new ConfigError(`${source}: ${at}.${field} is missing`)
        continue
      }
      const ok = base === 'string' ? typeof v === 'string' : base === 'string|null' ? typeof v === 'string' || v === null : base === 'number|null' ? typeof v === 'number' || v === null : base === 'string[]' ? Array.isArray(v) && v.every((s) => typeof s === 'string') : false
      if (!ok) throw new ConfigError(`${source}: ${at}.${field} must be ${base.replace('|', ' or ').replace('string[]', 'a list of strings')}`)
    }
  }
  const top = object('(top level)', value, ['applications', 'users'])
  list('applications', top.applications).forEach((entry, i) =>
    types(`applications[${i}]`, object(`applications[${i}]`, entry, APPLICATION_FIELDS), { name: 'string', callbackPrefix: 'string|null?', limit: 'number|null?', appToken: 'string?', secretToken: 'string?' }),
  )
  list('users', top.users).forEach((entry, i) => {
    const user = object(`users[${i}]`, entry, USER_FIELDS)
    types(`users[${i}]`, user, { username: 'string', password: 'string|null?', displayName: 'string', email: 'string', screenName: 'string?', rights: 'string[]?' })
    list(`users[${i}].apiKeys`, user.apiKeys).forEach((key, k) =>
      types(`users[${i}].apiKeys[${k}]`, object(`users[${i}].apiKeys[${k}]`, key, KEY_FIELDS), { name: 'string', keyId: 'string?', keySecret: 'string?' }),
    )
  })
  return top as PortalConfig
}
