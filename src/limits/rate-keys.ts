/**
 * The rate keys: the names of the GCRA counters the gate keeps in the rate store. Every
 * key is built here, and read back here for the command's `rate show` and `rate reset`,
 * so the formats below are the whole list. A key is `<kind>` or `<kind>:<subject>`; the
 * kind never contains a colon, the subject may (IPv6 addresses).
 *
 * | key | counts | budget option |
 * |---|---|---|
 * | `app:<app token>` | an application's requests | `throttle.application` (or the application's own limit) |
 * | `anon` | requests without an app token, one pool for all | `throttle.anonymous` with `scope: 'shared'` |
 * | `anon:<address>` | requests without an app token, per client address | `throttle.anonymous` with `scope: 'ip'` |
 * | `login:<username>` | failed passwords per account (the username's RFC 8265 key) | `basic.failures` |
 * | `login-ip:<address>` | failed passwords per client address, across usernames | `basic.addressFailures` |
 * | `login-ip-last:<address>` | a one-unit key restarted at each failure from the address: whether it has been quiet a whole window | `basic.addressFailures` (its window) |
 * | `oauth:<address>` | posts to the OAuth endpoints per client address | `oauth.throttle` |
 * | `oauth-client:<app token>` | posts to the token and revocation endpoints per authenticated client | `oauth.throttle` |
 * | `client:<app token>:<address>` | failed client authentications per client and address | `oauth.clientFailures` |
 * | `self-service:<user id>` | one user's requests to the self-service endpoints (a usage read weighs more) | `selfServiceBudget` |
 * | `near-limit:<app token>:<limit>:<percent>:<window>` | one unit: whether an instance reported the application near a threshold of that limit (its name in the plan, `app` for a limit of its own) in that window (a quota's: its period's start) | `nearLimit` |
 * | `{<key>}:<name>` | one named limit of a plan (a rate or a calendar quota) of the subject `<key>`, one of the keys above | plans of several limits |
 * | `{<key>}:<name>@<address>` | a limit counted per client address (`per: 'address'`): one per application and address, IPv6 by `throttle.anonymous.ipv6Subnet` | plans of several limits |
 *
 * An `<address>` is the client address as {@link addressKey} writes it: IPv4 as is, IPv6
 * cut to a prefix (`2001:db8:0:0:0:0:0:0/56`), of `throttle.anonymous.ipv6Subnet` bits for
 * `anon:` and of {@link ABUSE_PREFIX_BITS} for the brute-force budgets.
 * @see docs/guides/throttling.md, docs/security.md, docs/guides/cli.md
 */
import { addressKey } from '../http/proxy.js'

/**
 * The IPv6 prefix the brute-force budgets (`login-ip:`, `oauth:`, `client:`) count one
 * address by: one IPv6 host commonly owns a whole /64 or /56.
 */
export const ABUSE_PREFIX_BITS = 56

/** `app:<app token>`: an application's requests. */
export function applicationRateKey(appToken: string): string {
  return `app:${appToken}`
}

/** `anon` (one pool for all) or `anon:<address>` (per client address, IPv6 per `ipv6Subnet` bits): requests without an app token. */
export function anonymousRateKey(scope: 'shared' | 'ip', ip: string, ipv6Subnet: number): string {
  return scope === 'shared' ? 'anon' : `anon:${addressKey(ip, ipv6Subnet)}`
}

/** `login:<username>`: failed passwords for one account, whatever width or case its name is typed in. */
export function loginRateKey(usernameKey: string): string {
  return `login:${usernameKey}`
}

/** `login-ip:<address>`: failed passwords from one client address. @param address an {@link addressKey} */
export function loginAddressRateKey(address: string): string {
  return `login-ip:${address}`
}

/** `login-ip-last:<address>`: when the address's latest failed password was. @param address an {@link addressKey} */
export function loginAddressLastRateKey(address: string): string {
  return `login-ip-last:${address}`
}

/** `oauth:<address>`: posts to the OAuth endpoints from one client address. */
export function oauthAddressRateKey(ip: string): string {
  return `oauth:${addressKey(ip, ABUSE_PREFIX_BITS)}`
}

/** `oauth-client:<app token>`: posts to the token and revocation endpoints by one authenticated client. */
export function oauthClientRateKey(appToken: string): string {
  return `oauth-client:${appToken}`
}

/** `client:<app token>:<address>`: failed client authentications of one client from one address. */
export function clientFailuresRateKey(clientId: string, ip: string): string {
  return `client:${clientId}:${addressKey(ip, ABUSE_PREFIX_BITS)}`
}

/** `registrations:<user id>`: applications one user registered on the self-service endpoints or a developer page. */
export function registrationsRateKey(userId: string): string {
  return `registrations:${userId}`
}

/** `self-service:<user id>`: one user's requests to the self-service endpoints (API keys, applications, their usage, connected apps). */
export function selfServiceRateKey(userId: string): string {
  return `self-service:${userId}`
}

/** `near-limit:<app token>:<limit>:<percent>:<window>`: taken by the one instance that reports the application near that share of that limit in that window (`nearLimit`). */
export function nearLimitRateKey(appToken: string, limitName: string, threshold: number, window: number): string {
  return `near-limit:${appToken}:${limitName}:${Math.round(threshold * 100)}:${window}`
}

/** A limit's name in a plan: lower-case letters, digits, `_` and `-`, 1 to 40 of them. */
const LIMIT_NAME = /^[a-z0-9_-]{1,40}$/

/**
 * `{<key>}:<name>`: the limit `name` of a plan, for the subject whose own rate key is `key`
 * (an application's `app:<app token>`). The subject's key leads in braces: RedisStore
 * hashes a key that starts with `{…}` by what the braces hold, so every limit of one subject,
 * and the subject's own key, share a Redis Cluster hash slot and one script decides them
 * together (`consumeLimits`). No other rate key starts with `{`.
 * @throws {TypeError} for a name other than 1 to 40 of `a-z`, `0-9`, `_`, `-`
 * @example
 * limitRateKey(applicationRateKey('abc'), 'day') // '{app:abc}:day'
 */
export function limitRateKey(subjectKey: string, name: string): string {
  if (!LIMIT_NAME.test(name)) throw new TypeError(`open-data-gate: a limit's name must be 1 to 40 of a-z, 0-9, _ and -, got ${JSON.stringify(name)}`)
  return `{${subjectKey}}:${name}`
}

/** What a rate key counts, as {@link parseRateKey} reads it. */
export type RateKey =
  | { readonly kind: 'application'; readonly appToken: string }
  | { readonly kind: 'anonymous'; readonly address: string | null }
  | { readonly kind: 'login'; readonly username: string }
  | { readonly kind: 'login-address'; readonly address: string }
  | { readonly kind: 'login-address-last'; readonly address: string }
  | { readonly kind: 'oauth-address'; readonly address: string }
  | { readonly kind: 'oauth-client'; readonly appToken: string }
  | { readonly kind: 'client-failures'; readonly appToken: string; readonly address: string }
  | { readonly kind: 'registrations'; readonly userId: string }
  | { readonly kind: 'self-service'; readonly userId: string }
  | { readonly kind: 'near-limit'; readonly appToken: string; readonly threshold: string }
  | { readonly kind: 'limit'; readonly subject: RateKey; readonly name: string; readonly address?: string }

/**
 * What a rate key counts, read back from its text; `undefined` for a key the gate does
 * not make. (An app token has no colon, so `client:` splits at its second one.)
 */
export function parseRateKey(key: string): RateKey | undefined {
  if (key === 'anon') return { kind: 'anonymous', address: null }
  if (key.startsWith('{')) {
    const close = key.lastIndexOf('}:')
    const subject = close === -1 ? undefined : parseRateKey(key.slice(1, close))
    // A limit per client address: `<name>@<address>` (a name has no `@`).
    const rest = key.slice(close + 2)
    const at = rest.indexOf('@')
    const name = at === -1 ? rest : rest.slice(0, at)
    if (subject === undefined || !LIMIT_NAME.test(name)) return undefined
    return at === -1 ? { kind: 'limit', subject, name } : { kind: 'limit', subject, name, address: rest.slice(at + 1) }
  }
  const colon = key.indexOf(':')
  if (colon === -1) return undefined
  const subject = key.slice(colon + 1)
  switch (key.slice(0, colon)) {
    case 'app':
      return { kind: 'application', appToken: subject }
    case 'anon':
      return { kind: 'anonymous', address: subject }
    case 'login':
      return { kind: 'login', username: subject }
    case 'login-ip':
      return { kind: 'login-address', address: subject }
    case 'login-ip-last':
      return { kind: 'login-address-last', address: subject }
    case 'oauth':
      return { kind: 'oauth-address', address: subject }
    case 'oauth-client':
      return { kind: 'oauth-client', appToken: subject }
    case 'registrations':
      return { kind: 'registrations', userId: subject }
    case 'self-service':
      return { kind: 'self-service', userId: subject }
    case 'near-limit': {
      const split = subject.indexOf(':')
      return split === -1 ? undefined : { kind: 'near-limit', appToken: subject.slice(0, split), threshold: subject.slice(split + 1) }
    }
    case 'client': {
      const split = subject.indexOf(':')
      return split === -1 ? undefined : { kind: 'client-failures', appToken: subject.slice(0, split), address: subject.slice(split + 1) }
    }
    default:
      return undefined
  }
}
