/**
 * A store's connection URL as its driver reads it, without its passwords: for messages,
 * banners and logs. The command (`open-data-gate`) and the example portal print a store
 * only through this.
 *
 * A password hides in more places than `user:password@`: a `?password=` parameter (both
 * drivers read one), an `@` inside the password (`postgres://u:pa@ss@h/x`, where only the
 * last `@` ends it). So the URL is read by the driver's own parser (`pg-connection-string`
 * for PostgreSQL, ioredis for Redis) and shown rebuilt from what that parser found: scheme,
 * user, host, port and database, never the query. Every password the parser found is also
 * struck from any other text (a driver's error message) by {@link StoreUrl.redact}.
 */
import { parse as parsePostgres } from 'pg-connection-string'

/** A store URL, read: what it names and how to show it. */
export interface StoreUrl {
  /** The store its scheme names, or `undefined` for another scheme or a string that is no URL. */
  readonly kind: 'redis' | 'postgres' | 'memory' | undefined
  /**
   * The URL without its passwords and query, as the driver reads it
   * (`postgres://ada:***@db.example:5432/gate`); `undefined` when the string is not a URL
   * at all (a libpq `host=... password=...` string), which is then never shown.
   */
  readonly shown: string | undefined
  /** Whether the URL carries a password anywhere (user info or a parameter). */
  readonly hasPassword: boolean
  /** `text` with every password of the URL, as written or decoded, replaced by `***`. */
  redact(text: string): string
}

const PASSWORD_KEY = /pass/i

/**
 * Reads a store URL with its driver's parser (ioredis when it is installed, else the same
 * WHATWG rules ioredis 6 applies) and says how to show it without its passwords.
 * @example
 * const url = await inspectStoreUrl(process.env.DATABASE_URL ?? '')
 * console.log(`store: ${url.shown ?? '(not a URL)'}`)
 */
export async function inspectStoreUrl(url: string): Promise<StoreUrl> {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase()
  const read =
    scheme === 'postgres' || scheme === 'postgresql'
      ? readPostgres(url, scheme)
      : scheme === 'redis' || scheme === 'rediss'
        ? await readRedis(url, scheme)
        : scheme === 'memory'
          ? { kind: 'memory' as const, shown: url, secrets: [] }
          : readOther(url, scheme)
  const secrets = read?.secrets ?? keywordPasswords(url)
  const forms = [...new Set(secrets.flatMap((s) => [s, encodeURIComponent(s), encodeURI(s)]))].filter((s) => s !== '').sort((a, b) => b.length - a.length)
  return {
    kind: read?.kind,
    shown: read?.shown,
    hasPassword: secrets.some((s) => s !== ''),
    redact: (text) => forms.reduce((out, secret) => out.split(secret).join('***'), text),
  }
}

interface Read {
  kind: StoreUrl['kind']
  shown: string
  secrets: string[]
}

/** `user:***@` when there is a password, `user@` when only a user, nothing otherwise. */
function userInfo(user: unknown, hasPassword: boolean): string {
  const name = typeof user === 'string' && user !== '' ? encodeURIComponent(user) : ''
  return hasPassword ? `${name}:***@` : name === '' ? '' : `${name}@`
}

function hostPart(host: string): string {
  if (host.startsWith('/')) return encodeURIComponent(host)
  return host.includes(':') ? `[${host}]` : host
}

function passwordsOf(options: Record<string, unknown>): string[] {
  return Object.entries(options)
    .filter(([key, value]) => PASSWORD_KEY.test(key) && typeof value === 'string' && value !== '')
    .map(([, value]) => value as string)
}

/** pg-connection-string, as pg reads a `connectionString`. */
function readPostgres(url: string, scheme: string): Read | undefined {
  let config: Record<string, unknown>
  try {
    // It reads sslcert/sslkey/sslrootcert files when named: a missing one throws.
    config = parsePostgres(url) as Record<string, unknown>
  } catch {
    return readOther(url, scheme, 'postgres')
  }
  const secrets = passwordsOf(config)
  const host = typeof config.host === 'string' ? hostPart(config.host) : ''
  const port = typeof config.port === 'string' && config.port !== '' ? `:${config.port}` : ''
  const database = typeof config.database === 'string' ? encodeURI(config.database) : ''
  return { kind: 'postgres', shown: `${scheme}://${userInfo(config.user, secrets.length > 0)}${host}${port}/${database}`, secrets }
}

/** ioredis's own reading of the URL (`new Redis(url, { lazyConnect: true }).options`, which connects nowhere). */
async function readRedis(url: string, scheme: string): Promise<Read | undefined> {
  let options: Record<string, unknown>
  try {
    const { Redis } = await import('ioredis')
    const client = new Redis(url, { lazyConnect: true })
    options = { ...client.options } as Record<string, unknown>
    client.disconnect()
  } catch (error) {
    // Not installed: the command says so when it opens the store. A URL ioredis refuses: shown as WHATWG reads it.
    return readOther(url, scheme, (error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' || (error as { code?: string }).code === 'MODULE_NOT_FOUND' ? 'redis' : undefined)
  }
  const secrets = passwordsOf(options)
  const host = typeof options.host === 'string' ? hostPart(options.host) : ''
  const port = options.port === undefined ? '' : `:${String(options.port)}`
  const db = options.db === undefined || Number(options.db) === 0 ? '' : `/${String(options.db)}`
  return { kind: 'redis', shown: `${scheme}://${userInfo(options.username, secrets.length > 0)}${host}${port}${db}`, secrets }
}

/** Any other URL, by the WHATWG rules: scheme, user, host and path; never the query. */
function readOther(url: string, scheme: string | undefined, kind?: StoreUrl['kind']): Read | undefined {
  if (scheme === undefined) return undefined
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return undefined
  }
  const secrets = [decode(parsed.password), ...[...parsed.searchParams].filter(([key]) => PASSWORD_KEY.test(key)).map(([, value]) => value)].filter((s) => s !== '')
  const rest = `${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`
  return { kind, shown: `${parsed.protocol}//${userInfo(decode(parsed.username), secrets.length > 0)}${rest}`, secrets }
}

/** The password of a libpq keyword string (`host=h password='p w'`): no driver here reads one, so it is only struck out. */
function keywordPasswords(text: string): string[] {
  const found: string[] = []
  for (const match of text.matchAll(/\bpassword\s*=\s*(?:'((?:\\.|[^'\\])*)'|(\S+))/gi)) {
    const value = match[1] === undefined ? match[2] : match[1].replace(/\\(.)/g, '$1')
    if (value !== undefined && value !== '') found.push(value, match[1] ?? value)
  }
  return found
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}
