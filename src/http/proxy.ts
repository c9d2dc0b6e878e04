/**
 * Who is the client, and did it reach us over https? From the socket, unless the
 * immediate peer is a proxy the operator trusts; then from the proxy headers, walked
 * from the right (nearest hop) until the first address that is not a trusted proxy.
 *
 * A header sent by an untrusted peer changes nothing. The headers of one family are
 * believed: `X-Forwarded-For`/`X-Forwarded-Proto` (the default) or RFC 7239 `Forwarded`,
 * because a proxy that manages one family passes a client's forged copy of the other
 * straight through.
 *
 * @see https://www.rfc-editor.org/rfc/rfc7239
 */
import { BlockList, isIP } from 'node:net'
import type { GateRequest } from './request.js'

/**
 * Which peers may speak for the client:
 * - `false`: none (the default): the socket is the truth.
 * - `true`: every peer (only when the app is reachable solely through proxies).
 * - addresses and CIDR ranges, as a list or a comma-separated string; the names
 *   `loopback`, `linklocal` and `uniquelocal` stand for their ranges.
 * - a function of the address and its distance from the app (0 = the socket peer).
 */
export type TrustProxyOption = boolean | string | readonly string[] | ((address: string, hop: number) => boolean)

/** Which proxy headers a trusted proxy speaks through. */
export type ProxyHeadersOption = 'x-forwarded' | 'forwarded'

/** The client as the gate resolved it. */
export interface ClientInfo {
  /** The client's address (IPv4-mapped IPv6 addresses are given as IPv4). */
  readonly ip: string
  /** Whether the client's own connection is https. */
  readonly secure: boolean
  /** The request's id (`X-Request-Id`), when the client is a request's; its events carry it. */
  readonly requestId?: string | undefined
}

const NAMED_RANGES: Record<string, readonly string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
}

/**
 * Compiles the `trustProxy` option into a predicate, once, at construction.
 * @throws {TypeError} naming the option when an entry is not an address, range or name.
 */
export function compileTrustProxy(option: TrustProxyOption): (address: string, hop: number) => boolean {
  if (option === false) return () => false
  if (option === true) return () => true
  if (typeof option === 'function') return option
  const entries = typeof option === 'string' ? option.split(',') : option
  if (!Array.isArray(entries)) throw new TypeError(`open-data-gate: trustProxy must be a boolean, a list of addresses or CIDR ranges, or a function`)
  const list = new BlockList()
  for (const raw of entries) {
    const entry = String(raw).trim()
    for (const range of NAMED_RANGES[entry] ?? [entry]) addRange(list, range)
  }
  // BlockList#check builds a SocketAddress per call; the same few proxy and client
  // addresses come back all the time, so decisions are remembered (and forgotten in bulk).
  const decisions = new Map<string, boolean>()
  return (address) => {
    let trusted = decisions.get(address)
    if (trusted === undefined) {
      const family = isIP(address)
      trusted = family !== 0 && list.check(address, family === 4 ? 'ipv4' : 'ipv6')
      if (decisions.size >= 10_000) decisions.clear()
      decisions.set(address, trusted)
    }
    return trusted
  }
}

const PRIVATE = new BlockList()
for (const range of [...(NAMED_RANGES.loopback ?? []), ...(NAMED_RANGES.uniquelocal ?? []), ...(NAMED_RANGES.linklocal ?? [])]) addRange(PRIVATE, range)

/** Whether an address is loopback, link-local or private (RFC 1918, RFC 4193): where a forgotten proxy would sit. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address)
  return family !== 0 && PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

/** Whether the request carries any proxy header, of either family. */
export function hasProxyHeaders(request: GateRequest): boolean {
  const headers = request.headers
  return headers['x-forwarded-for'] !== undefined || headers['x-forwarded-proto'] !== undefined || headers.forwarded !== undefined
}

/**
 * Whether the nearest proxy, if the peer is one, says the client used https: the last
 * `X-Forwarded-Proto` entry, or the `proto` of the last `Forwarded` element.
 */
export function claimsHttps(request: GateRequest): boolean {
  const proto = request.headers['x-forwarded-proto']
  if (proto !== undefined) {
    const entries = splitList(Array.isArray(proto) ? proto.join(',') : proto)
    if (entries[entries.length - 1]?.toLowerCase() === 'https') return true
  }
  const forwarded = request.headers.forwarded
  if (forwarded !== undefined) {
    const elements = parseForwarded(Array.isArray(forwarded) ? forwarded.join(',') : forwarded)
    if (elements?.[elements.length - 1]?.proto?.toLowerCase() === 'https') return true
  }
  return false
}

function addRange(list: BlockList, range: string): void {
  const slash = range.indexOf('/')
  const address = slash === -1 ? range : range.slice(0, slash)
  const family = isIP(address)
  const bits = slash === -1 ? (family === 4 ? 32 : 128) : Number(range.slice(slash + 1))
  if (family === 0 || !Number.isInteger(bits) || bits < 0 || bits > (family === 4 ? 32 : 128)) {
    throw new TypeError(`open-data-gate: trustProxy entry ${JSON.stringify(range)} is not an IP address, a CIDR range or one of loopback, linklocal, uniquelocal`)
  }
  list.addSubnet(address, bits, family === 4 ? 'ipv4' : 'ipv6')
}

/**
 * An IPv4-mapped IPv6 address in any spelling (`::ffff:1.2.3.4`, `::FFFF:1.2.3.4`,
 * `::ffff:0102:0304`, `0:0:0:0:0:ffff:1.2.3.4`) → `1.2.3.4`; anything else unchanged.
 * Otherwise one client would have several budgets, one per spelling its proxy chose.
 */
export function normalizeAddress(address: string): string {
  // The spelling node:net gives a dual-stack socket, first: one check per request.
  if (address.startsWith('::ffff:') && isIP(address.slice(7)) === 4) return address.slice(7)
  if (!/ffff/i.test(address) || isIP(address) !== 6) return address
  const groups = expandIPv6(address)
  if (groups === undefined || groups[5] !== 0xffff || groups.slice(0, 5).some((g) => g !== 0)) return address
  const [high, low] = [groups[6] as number, groups[7] as number]
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`
}

/**
 * Resolves the client address and whether its connection is secure.
 * @param trust the compiled `trustProxy` predicate
 * @param requestId the request's id, carried with the client to the events about it
 */
export function resolveClient(
  request: GateRequest,
  trust: (address: string, hop: number) => boolean,
  headers: ProxyHeadersOption,
  requestId?: string,
): ClientInfo {
  const peer = normalizeAddress(request.peerAddress ?? '')
  if (!trust(peer, 0)) return { ip: peer, secure: request.tls, requestId }
  const hops = headers === 'forwarded' ? forwardedHops(request) : xForwardedHops(request)
  if (hops === undefined) return { ip: peer, secure: request.tls, requestId }

  // hops[i] describes the connection that arrived at the proxy after it. Walk from the
  // nearest hop; stop at the first address that is not a trusted proxy: that is the client.
  let ip = peer
  let proto = hops.lastProto
  for (let i = hops.addresses.length - 1, distance = 1; i >= 0; i--, distance++) {
    const address = hops.addresses[i]
    if (address === undefined || isIP(address) === 0) break // "unknown", obfuscated: the chain ends here
    ip = normalizeAddress(address)
    proto = hops.protos[i] ?? proto
    if (!trust(ip, distance)) break
  }
  return { ip, secure: proto === undefined ? request.tls : proto === 'https', requestId }
}

interface Hops {
  /** Client-side first, as the headers list them. */
  readonly addresses: readonly (string | undefined)[]
  /** The protocol of each hop where known, aligned with `addresses`. */
  readonly protos: readonly (string | undefined)[]
  /** The protocol the nearest proxy reported, for hops the list does not align with. */
  readonly lastProto: string | undefined
}

function splitList(value: string | undefined): string[] {
  if (value === undefined) return []
  // Most proxies send one value: no split, no intermediate arrays.
  if (!value.includes(',')) {
    const one = value.trim()
    return one === '' ? [] : [one]
  }
  return value.split(',').map((s) => s.trim()).filter((s) => s !== '')
}

function xForwardedHops(request: GateRequest): Hops | undefined {
  const forwardedFor = request.headers['x-forwarded-for']
  const forwardedProto = request.headers['x-forwarded-proto']
  if (forwardedFor === undefined && forwardedProto === undefined) return undefined
  const addresses = splitList(Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).map(stripPort)
  const protos = splitList(Array.isArray(forwardedProto) ? forwardedProto.join(',') : forwardedProto).map((p) => p.toLowerCase())
  // A proxy that appends gives one protocol per address; a proxy that overwrites gives one.
  return {
    addresses,
    protos: protos.length === addresses.length ? protos : [],
    lastProto: protos[protos.length - 1],
  }
}

/** `203.0.113.7:4711` → `203.0.113.7`, `[2001:db8::1]:443` → `2001:db8::1`; bare IPv6 unchanged. */
function stripPort(value: string): string {
  if (value.startsWith('[')) {
    const close = value.indexOf(']')
    return close === -1 ? value : value.slice(1, close)
  }
  const colon = value.indexOf(':')
  return colon !== -1 && value.indexOf(':', colon + 1) === -1 ? value.slice(0, colon) : value
}

function forwardedHops(request: GateRequest): Hops | undefined {
  const raw = request.headers.forwarded
  if (raw === undefined) return undefined
  const elements = parseForwarded(Array.isArray(raw) ? raw.join(',') : raw)
  if (elements === undefined) return { addresses: [undefined], protos: [], lastProto: undefined }
  return {
    addresses: elements.map((e) => (e.for === undefined ? undefined : stripPort(e.for))),
    protos: elements.map((e) => e.proto?.toLowerCase()),
    lastProto: undefined,
  }
}

/**
 * Parses RFC 7239 `Forwarded`: elements separated by commas, pairs by semicolons, values
 * tokens or quoted strings. Returns `undefined` when the header is malformed, which ends
 * the walk at the nearest proxy instead of believing a half-parsed header.
 */
export function parseForwarded(header: string): Array<Record<string, string>> | undefined {
  const elements: Array<Record<string, string>> = []
  let element: Record<string, string> = {}
  let i = 0
  const n = header.length
  const skipSpace = () => {
    while (i < n && (header[i] === ' ' || header[i] === '\t')) i++
  }
  for (;;) {
    skipSpace()
    const keyStart = i
    while (i < n && /[!#$%&'*+.^_`|~0-9A-Za-z-]/.test(header[i] as string)) i++
    const key = header.slice(keyStart, i).toLowerCase()
    if (key === '' || header[i] !== '=') return undefined
    i++
    let value: string
    if (header[i] === '"') {
      i++
      value = ''
      while (i < n && header[i] !== '"') {
        if (header[i] === '\\') i++
        value += header[i] ?? ''
        i++
      }
      if (header[i] !== '"') return undefined
      i++
    } else {
      const valueStart = i
      while (i < n && /[!#$%&'*+.^_`|~0-9A-Za-z:-]/.test(header[i] as string)) i++
      value = header.slice(valueStart, i)
      if (value === '') return undefined
    }
    if (key in element) return undefined
    element[key] = value
    skipSpace()
    if (i >= n) break
    if (header[i] === ';') {
      i++
    } else if (header[i] === ',') {
      i++
      elements.push(element)
      element = {}
    } else {
      return undefined
    }
  }
  elements.push(element)
  return elements
}

/**
 * The throttle key part for a client address: IPv4 as is, IPv6 cut to its first
 * `prefixBits` bits, because one IPv6 host commonly owns a whole /64 or /56.
 */
export function addressKey(address: string, prefixBits: number): string {
  if (isIP(address) !== 6) return address
  const groups = expandIPv6(address)
  if (groups === undefined) return address
  const out: string[] = []
  for (let g = 0; g < 8; g++) {
    const keep = Math.max(0, Math.min(16, prefixBits - g * 16))
    const value = keep === 0 ? 0 : (groups[g] as number) & (0xffff << (16 - keep)) & 0xffff
    out.push(value.toString(16))
  }
  return `${out.join(':')}/${prefixBits}`
}

function expandIPv6(address: string): number[] | undefined {
  let text = address
  const zone = text.indexOf('%')
  if (zone !== -1) text = text.slice(0, zone)
  // A trailing dotted quad (`::ffff:1.2.3.4`) is two more 16-bit groups.
  const lastColon = text.lastIndexOf(':')
  const last = text.slice(lastColon + 1)
  if (isIP(last) === 4) {
    const [a, b, c, d] = last.split('.').map(Number) as [number, number, number, number]
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, rest] = text.split('::') as [string, string | undefined]
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((h) => parseInt(h, 16)))
  const left = parse(head)
  const right = rest === undefined ? [] : parse(rest)
  const missing = 8 - left.length - right.length
  if (rest === undefined ? missing !== 0 : missing < 0) return undefined
  return [...left, ...new Array<number>(rest === undefined ? 0 : missing).fill(0), ...right]
}
