/**
 * Which words `rate show` and `rate reset` take as a key: only a key the gate could have
 * written (src/limits/rate-keys.ts), with the application it names registered. The rate
 * store answers a key nobody wrote as a full, untouched budget, so a mistyped key (the
 * app token without `app:`, an IPv6 address not cut to its prefix) would read as
 * healthy, or be "reset" while the real key stays spent.
 */
import { isIP } from 'node:net'
import { nearestName } from '../../util/did-you-mean.js'
import { DEFAULT_ANONYMOUS_IPV6_SUBNET } from '../../config/defaults.js'
import type { Gate } from '../../gate.js'
import { addressKey } from '../../http/proxy.js'
import { ABUSE_PREFIX_BITS, parseRateKey, type RateKey } from '../../limits/rate-keys.js'
import { usernameLookups } from '../../rules/usernames.js'
import { isPlausibleAppToken } from '../../rules/credential-shapes.js'
import { RefusedError } from '../cli-errors.js'

/** The kinds a key may start with, as the refusal lists them. */
const FORMS = 'app:APP_TOKEN, anon, anon:ADDRESS, login:USERNAME, login-ip:ADDRESS, login-ip-last:ADDRESS, oauth:ADDRESS, oauth-client:APP_TOKEN, client:APP_TOKEN:ADDRESS, registrations:USER_ID, self-service:USER_ID, near-limit:APP_TOKEN:PERCENT:WINDOW, {app:APP_TOKEN}:LIMIT, {app:APP_TOKEN}:LIMIT@ADDRESS'
const KINDS = ['app', 'anon', 'login', 'login-ip', 'login-ip-last', 'oauth', 'oauth-client', 'client', 'registrations', 'self-service', 'near-limit']

/**
 * The key, read as the gate writes it.
 * @throws {RefusedError} (exit 1) for a key the gate never writes, with the key it meant where that can be told
 */
export async function checkRateKey(gate: Gate, key: string): Promise<RateKey> {
  const parsed = parseRateKey(key)
  if (parsed === undefined) throw new RefusedError(`${JSON.stringify(key)} is not a rate key of the gate${await guess(gate, key)}; a key is one of ${FORMS}`)
  if (parsed.kind === 'limit') return checkLimitKey(gate, key, parsed)
  if (key !== 'anon' && Object.values(parsed).some((part) => part === '')) throw new RefusedError(`rate key ${JSON.stringify(key)} lacks what follows ${key.slice(0, key.indexOf(':') + 1)}; a key is one of ${FORMS}`)
  switch (parsed.kind) {
    case 'application':
    case 'oauth-client':
    case 'client-failures':
    case 'near-limit':
      // Only registered applications get these keys (a made-up client_id is refused before its budget).
      if (!isPlausibleAppToken(parsed.appToken) || (await gate.applications.find(parsed.appToken)) === undefined) throw new RefusedError(`no application with app token ${parsed.appToken}, so rate key ${key} is never written`)
      if (parsed.kind === 'client-failures') checkAddress(key, parsed.address, ABUSE_PREFIX_BITS)
      break
    case 'anonymous':
      if (parsed.address !== null) checkAddress(key, parsed.address, null)
      break
    case 'login-address':
    case 'login-address-last':
    case 'oauth-address':
      checkAddress(key, parsed.address, ABUSE_PREFIX_BITS)
      break
    case 'login': {
      const written = usernameLookups(parsed.username).key
      if (written !== parsed.username) throw new RefusedError(`rate key ${key} is never written: a username's key is its RFC 8265 form; did you mean login:${written}?`)
      break
    }
    case 'registrations': {
      // Keyed by the user's id; the username is what an operator often has at hand.
      if ((await gate.users.find(parsed.userId)) !== undefined) break
      const byName = await gate.users.findByUsername(parsed.userId)
      throw new RefusedError(`no user with id ${parsed.userId}, so rate key ${key} is never written${byName === undefined ? '' : `; did you mean registrations:${byName.id}? (${parsed.userId} is that user's username)`}`)
    }
  }
  return parsed
}

/**
 * A limit of a plan, `{app:APP_TOKEN}:NAME`, or one counted per client address,
 * `{app:APP_TOKEN}:NAME@ADDRESS`: only an application's, registered, and an address as
 * {@link addressKey} writes it (IPv6 cut to `throttle.anonymous.ipv6Subnet`, as `anon:`).
 */
async function checkLimitKey(gate: Gate, key: string, parsed: Extract<RateKey, { kind: 'limit' }>): Promise<RateKey> {
  const subject = parsed.subject
  if (subject.kind !== 'application') throw new RefusedError(`rate key ${key} is never written: the gate keeps named limits for applications only, {app:APP_TOKEN}:LIMIT or {app:APP_TOKEN}:LIMIT@ADDRESS`)
  if (!isPlausibleAppToken(subject.appToken) || (await gate.applications.find(subject.appToken)) === undefined) throw new RefusedError(`no application with app token ${subject.appToken}, so rate key ${key} is never written`)
  const address = parsed.address
  if (address === undefined) return parsed
  const ip = address.includes('/') ? address.slice(0, address.lastIndexOf('/')) : address
  if (isIP(ip) === 0) throw new RefusedError(`rate key ${key} is never written: what follows @ is the client address the limit counts (an IPv4 address, or an IPv6 prefix such as 2001:db8:0:0:0:0:0:0/56), got ${JSON.stringify(address)}`)
  checkAddress(key, address, null)
  return parsed
}

/**
 * An IPv6 address in a key is its prefix as {@link addressKey} writes it (`2001:db8:0:0:0:0:0:0/56`):
 * a whole address, or a prefix written another way, names a key the gate never writes.
 * @param bits the prefix the gate cuts to, or `null` for `anon:` (the serving gate's `ipv6Subnet`)
 */
function checkAddress(key: string, address: string, bits: number | null): void {
  const slash = address.lastIndexOf('/')
  const ip = slash === -1 ? address : address.slice(0, slash)
  if (isIP(ip) !== 6) return
  const given = slash === -1 ? undefined : Number(address.slice(slash + 1))
  const prefix = bits ?? (given !== undefined && Number.isInteger(given) && given >= 1 && given <= 128 ? given : DEFAULT_ANONYMOUS_IPV6_SUBNET)
  const written = addressKey(ip, prefix)
  if (written === address) return
  const meant = key.slice(0, key.length - address.length) + written
  const which = bits === null ? ` (with throttle.anonymous.ipv6Subnet at ${prefix}${given === undefined ? ', the default' : ''})` : ''
  throw new RefusedError(`rate key ${key} is never written: an IPv6 address is keyed by its /${prefix} prefix, written out in full; did you mean ${meant}${which}?`)
}

/** "; did you mean …" for a key of no known kind, or nothing. */
async function guess(gate: Gate, key: string): Promise<string> {
  const limit = /^(\{app:[^}]+\}:[a-z0-9_-]{1,40})[:/](.+)$/.exec(key)
  if (limit !== null && isIP((limit[2] as string).replace(/\/\d+$/, '')) !== 0) return `; did you mean ${limit[1] as string}@${limit[2] as string}? (a limit per client address is keyed NAME@ADDRESS)`
  const colon = key.indexOf(':')
  if (colon === -1) {
    if (isIP(key) !== 0) return `; did you mean anon:${isIP(key) === 6 ? addressKey(key, DEFAULT_ANONYMOUS_IPV6_SUBNET) : key}?`
    if (isPlausibleAppToken(key) && (await gate.applications.find(key)) !== undefined) return `; did you mean app:${key}? (${key} is an application's app token)`
    return nearestName(key, ['anon']) === undefined ? '' : '; did you mean anon?'
  }
  const kind = nearestName(key.slice(0, colon), KINDS)
  return kind === undefined ? '' : `; did you mean ${kind}:${key.slice(colon + 1)}?`
}
