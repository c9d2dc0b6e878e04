/**
 * Generators for everything a client controls at the edge of the gate: the
 * `Authorization` header, app tokens in headers and queries, redirect_uri against
 * Callback Prefixes, token endpoint bodies, proxy headers, and the login and consent
 * forms. Each mixes the values that matter (the world's real tokens and secrets, the
 * exact spellings the gate looks for) with the ways to get them wrong.
 */
import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { KNOWN, TRUSTED_PROXIES } from './world.js'
import type { HostileBody, HostileRequest } from './requests.js'

type Arb<T> = fc.Arbitrary<T>
/** Header lines, in order. */
type Lines = ReadonlyArray<readonly [string, string]>

// ---------------------------------------------------------------- strings

const CONTROL = fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c))

/** Short strings of any kind: printable, control characters, unicode, lone surrogates. */
export const anyText: Arb<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
  { weight: 1, arbitrary: fc.string({ unit: fc.oneof(CONTROL, fc.constantFrom('\u007f', '\u0085', '\u00a0', '\u2028', '\ufeff', '\ud800', '\udfff')), maxLength: 4 }) },
)

/** `s` with one character inserted somewhere: a NUL, a CR/LF, a tab, a space, a non-breaking space. */
function withInjected(s: string): Arb<string> {
  return fc.tuple(fc.nat({ max: s.length }), fc.constantFrom('\u0000', '\r\n', '\n', '\t', ' ', '\u00a0', '\u0007', '\u007f', '\u00ff', '\u{1F600}')).map(([i, c]) => s.slice(0, i) + c + s.slice(i))
}

/** `s` with lone surrogates replaced, as UTF-8 encoding replaces them on the wire. */
export function wellFormed(s: string): string {
  return s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')
}

type Encoding = 'keep' | 'upper' | 'lower'

function encodeChar(c: string, how: Encoding): string {
  if (how === 'keep') return c
  const hex = [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')
  return how === 'upper' ? hex.toUpperCase() : hex
}

/** Every percent-encoding of `s`: each character kept, or encoded with upper or lower hex; sometimes encoded twice. */
export function percentEncodings(s: string): Arb<string> {
  let arbitrary = encodings.get(s)
  if (arbitrary === undefined) {
    arbitrary = makePercentEncodings(s)
    if (encodings.size < 10_000) encodings.set(s, arbitrary)
  }
  return arbitrary
}

/** Made once per string: building an arbitrary per generated value costs more than the case. */
const encodings = new Map<string, Arb<string>>()

function makePercentEncodings(s: string): Arb<string> {
  const chars = [...s]
  return fc
    .tuple(
      fc.array(fc.constantFrom<Encoding>('keep', 'keep', 'upper', 'lower'), { minLength: chars.length, maxLength: chars.length }),
      fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    )
    .map(([modes, twice]) => {
      const once = chars.map((c, i) => encodeChar(c, modes[i] ?? 'keep')).join('')
      return twice && once.includes('%') ? once.replace(/%/g, '%25') : once
    })
}

// ---------------------------------------------------------------- Authorization

const SCHEMES = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('Basic', 'basic', 'BASIC', 'OAuth', 'oauth', 'OAUTH', 'Bearer', 'bearer', 'BEARER') },
  { weight: 1, arbitrary: fc.constantFrom('Digest', 'Negotiate', 'Token', 'Bas ic', 'Basic:', 'OAuth2', 'Bearer,', '', 'Ba\u0073ic', 'Baſic', 'OAUTH\u0130') },
  { weight: 1, arbitrary: anyText },
)

const SEPARATORS = fc.oneof(
  { weight: 8, arbitrary: fc.constant(' ') },
  { weight: 2, arbitrary: fc.constantFrom('  ', '\t', ' \t', '', '\u00a0', ',', '=', ' \u0000') },
)

const USERS = fc.oneof(
  fc.constantFrom(KNOWN.users.ada.username, 'ADA', ' ada', KNOWN.users.sso.username, 'nobody', KNOWN.apiKeys.live.keyId, KNOWN.apiKeys.revoked.keyId, KNOWN.apiKeys.live.keyId.toUpperCase()),
  fc.constantFrom(KNOWN.apps.oauth.appToken, encodeURIComponent(KNOWN.apps.oauth.appToken), ''),
  anyText,
)

const PASSWORDS = fc.oneof(
  fc.constantFrom(KNOWN.users.ada.password, KNOWN.apiKeys.live.secret, KNOWN.apiKeys.revoked.secret, KNOWN.apps.oauth.secret, `${KNOWN.users.ada.password}:x`, ''),
  anyText,
)

const KNOWN_TOKENS = fc.constantFrom(...Object.values(KNOWN.tokens))

const B64_CHARS = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_.~ '.split(''))

/** What follows the scheme: credentials right and wrong. */
const CREDENTIALS: Arb<string> = fc.oneof(
  // user:password, base64 (standard or url-safe alphabet, padded or not)
  { weight: 6, arbitrary: fc.tuple(USERS, PASSWORDS, fc.constantFrom('base64', 'base64url', 'unpadded')).map(([u, p, alphabet]) => encodeBase64(`${u}:${p}`, alphabet)) },
  // no colon, bytes that are not UTF-8, control characters inside
  { weight: 2, arbitrary: USERS.map((u) => Buffer.from(u.replace(/:/g, '')).toString('base64')) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 24 }).map((b) => Buffer.from(b).toString('base64')) },
  { weight: 1, arbitrary: fc.tuple(USERS, PASSWORDS).chain(([u, p]) => withInjected(`${u}:${p}`)).map((s) => Buffer.from(s).toString('base64')) },
  // broken base64
  { weight: 2, arbitrary: fc.string({ unit: B64_CHARS, maxLength: 30 }) },
  // tokens: the world's, made up, malformed
  { weight: 5, arbitrary: KNOWN_TOKENS },
  { weight: 1, arbitrary: KNOWN_TOKENS.chain(withInjected) },
  { weight: 1, arbitrary: fc.string({ unit: B64_CHARS, minLength: 20, maxLength: 60 }) },
  // anything at all
  { weight: 1, arbitrary: anyText },
  // around the 8 KB limit
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 8150, max: 8250 }), fc.constantFrom('A', 'a=', 'é')).map(([n, c]) => c.repeat(Math.ceil(n / c.length)).slice(0, n)) },
)

function encodeBase64(s: string, alphabet: 'base64' | 'base64url' | 'unpadded'): string {
  const b = Buffer.from(s, 'utf8')
  if (alphabet === 'base64url') return b.toString('base64url')
  const padded = b.toString('base64')
  return alphabet === 'unpadded' ? padded.replace(/=+$/, '') : padded
}

/** One `Authorization` header value. */
export const authorizationValue: Arb<string> = fc.oneof(
  { weight: 12, arbitrary: fc.tuple(SCHEMES, SEPARATORS, CREDENTIALS, fc.constantFrom('', '', '', ' ', '\t', ', Basic x', ' x')).map(([s, sep, c, tail]) => `${s}${sep}${c}${tail}`) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'Basic', 'Basic ', 'OAuth', 'Bearer ', 'Basic Og==', 'Basic ==', 'Basic =') },
  { weight: 1, arbitrary: anyText },
)

/** Zero to three `Authorization` lines (any case of the name). */
export const authorizationHeaders: Arb<Lines> = fc.oneof(
  { weight: 3, arbitrary: fc.constant([]) },
  { weight: 6, arbitrary: fc.tuple(fc.constantFrom('authorization', 'Authorization', 'AUTHORIZATION'), authorizationValue).map((line) => [line]) },
  { weight: 1, arbitrary: fc.array(fc.tuple(fc.constant('Authorization'), authorizationValue), { minLength: 2, maxLength: 3 }) },
)

// ---------------------------------------------------------------- app tokens

const APP_TOKENS = Object.values(KNOWN.apps).map((a) => a.appToken)

/** A value for an app token, right or wrong. */
export const appTokenValue: Arb<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...APP_TOKENS) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'unknownButPlausible0001', `${APP_TOKENS[0]},${APP_TOKENS[1]}`, `${APP_TOKENS[0]}, ${APP_TOKENS[0]}`, ` ${APP_TOKENS[0]} `, 'x'.repeat(129), KNOWN.apps.oauth.secret) },
  { weight: 1, arbitrary: fc.constantFrom(...APP_TOKENS).chain(withInjected) },
  { weight: 1, arbitrary: anyText },
)

const APP_TOKEN_HEADER_NAMES = fc.constantFrom('X-App-Token', 'x-app-token', 'X-APP-TOKEN', 'X-App-token', 'X_App_Token', 'X-App-Tokens')

export const appTokenHeaders: Arb<Lines> = fc.oneof(
  { weight: 3, arbitrary: fc.constant([]) },
  { weight: 4, arbitrary: fc.tuple(APP_TOKEN_HEADER_NAMES, appTokenValue).map((line) => [line]) },
  { weight: 1, arbitrary: fc.array(fc.tuple(APP_TOKEN_HEADER_NAMES, appTokenValue), { minLength: 2, maxLength: 3 }) },
)

const APP_TOKEN_PARAM_NAMES = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('$$app_token', 'app_token', '%24%24app_token') },
  { weight: 2, arbitrary: fc.constantFrom('$$app_token', 'app_token').chain(percentEncodings) },
  { weight: 1, arbitrary: fc.constantFrom('$app_token', '$$App_Token', 'APP_TOKEN', '$$app_token ', '$$app%5Ftoken', '$$app+token', '$$app_token[]', 'x$$app_token') },
  // What Express 4's query parser (qs) reads as the name, and what it does not.
  { weight: 1, arbitrary: fc.constantFrom('$$app_token[]', 'app_token[x]', '$$app_token[0]', '[$$app_token]', '%5B%24%24app_token%5D%5B%5D', '$$app_token%5B', 'app_token]', 'x[$$app_token]', '[]$$app_token', '$$app_token.x') },
)

/** Query pairs naming app tokens: both spellings, every percent-encoding of names and values, repeats, empties. */
export const appTokenQuery: Arb<readonly string[]> = fc.oneof(
  { weight: 3, arbitrary: fc.constant([]) },
  {
    weight: 3,
    arbitrary: fc.array(
      fc.tuple(APP_TOKEN_PARAM_NAMES, fc.oneof(appTokenValue.map((v) => encodeURIComponent(wellFormed(v))), appTokenValue.chain(percentEncodings)), fc.boolean()).map(([n, v, bare]) => (bare && v === '' ? n : `${n}=${v}`)),
      { minLength: 1, maxLength: 3 },
    ),
  },
)

// ---------------------------------------------------------------- redirect_uri

const PREFIXES = [
  KNOWN.prefixes.oauth,
  KNOWN.prefixes.root,
  'https://a.example/cb',
  'https://a.example/cb/',
  'https://xn--bcher-kva.example/r',
  'https://[2001:db8::1]:444/p/',
  'https://127.0.0.1/',
  'HTTPS://A.EXAMPLE:443/Cb',
  'https://a.example/%7Euser/',
]

/** Callback Prefixes a tenant might register (all absolute https without query or fragment, as registration requires). */
export const callbackPrefix: Arb<string> = fc.constantFrom(...PREFIXES)

/**
 * Loopback Callback Prefixes, which registration takes only with
 * `oauth.allowLoopbackCallbacks` (RFC 8252 §7.3): plain http on localhost, 127.0.0.1 and
 * [::1], with and without a port and a path.
 */
export const loopbackPrefix: Arb<string> = fc.constantFrom('http://localhost:8080/cb/', 'http://localhost/', 'http://127.0.0.1/', 'http://127.0.0.1:65535/oauth', 'http://[::1]:3000/oauth/callback', 'http://[::1]/')

const HOST_TRICKS = fc.constantFrom(
  '',
  '.evil.net',
  '.',
  '@evil.net',
  ':443',
  ':8443',
  ':0',
  ':65536',
  '%2eevil.net',
  '%40evil.net',
  '\\@evil.net',
  '%5c@evil.net',
  '#@evil.net',
  '?@evil.net',
  '/@evil.net',
  '\t',
  ':@evil.net',
  '%00',
  '.nip.io',
  '%2e',
  ':80',
  ':080',
)

const PATH_TRICKS = fc.constantFrom(
  'callback',
  'callback/x',
  '',
  '/',
  '//evil.net/x',
  '../admin',
  '..',
  '%2e%2e/admin',
  '.%2E/admin',
  '%2E',
  './x',
  '..%2fadmin',
  '%2fadmin',
  '%5cadmin',
  '\\..\\admin',
  ';/../admin',
  'callback?x=1',
  'callback?',
  'callback#frag',
  'callback?a=1#b',
  'caf\u00e9',
  'caf%C3%A9',
  '%0d%0aSet-Cookie:x',
  '\r\nx',
  ' callback',
  'call back',
  'callback%20',
  '%00',
  'x/%2e%2e/%2e%2e/admin',
  'x?next=https://evil.net',
)

/**
 * A redirect_uri near a prefix: the prefix itself in another spelling (scheme and host
 * case, default port, missing slashes, userinfo) followed by a path trick; or a URL made
 * up from scratch.
 */
export function redirectUriFor(prefix: string): Arb<string> {
  let arbitrary = redirectUris.get(prefix)
  if (arbitrary === undefined) {
    arbitrary = makeRedirectUriFor(prefix)
    redirectUris.set(prefix, arbitrary)
  }
  return arbitrary
}

const redirectUris = new Map<string, Arb<string>>()

function makeRedirectUriFor(prefix: string): Arb<string> {
  const url = new URL(prefix)
  const path = url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`
  const host = url.host
  const schemes = fc.constantFrom('https://', 'HTTPS://', 'http://', 'https:', 'https:/', 'https:///', 'https:\\\\', '//', 'javascript://', 'https://user:pw@', 'https://@')
  const hosts = fc.oneof(fc.constant(host), fc.constant(host.toUpperCase()), HOST_TRICKS.map((t) => host + t), fc.constantFrom('evil.net', `evil.net@${host}`, `${host}.`, `${host}:443`))
  const paths = fc.oneof(
    fc.constant(path),
    fc.constant(url.pathname),
    fc.constant(path.toUpperCase()),
    fc.constant(path.replace(/\/$/, '')),
    fc.constantFrom('/', '', '/elsewhere/'),
    percentEncodings(path),
  )
  return fc.oneof(
    { weight: 10, arbitrary: fc.tuple(schemes, hosts, paths, PATH_TRICKS).map(([s, h, p, t]) => `${s}${h}${p}${t}`) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom(`${prefix}`, `${prefix}/`, `${prefix}callback`), PATH_TRICKS).map(([p, t]) => p + t) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...PREFIXES), fc.webPath(), fc.webQueryParameters(), fc.webFragments()).map(([p, wp, q, f]) => `${p}${wp}${q === '' ? '' : `?${q}`}${f === '' ? '' : `#${f}`}`) },
    { weight: 1, arbitrary: fc.webUrl({ withQueryParameters: true, withFragments: true }) },
    { weight: 1, arbitrary: fc.constant(prefix).chain(withInjected) },
    { weight: 1, arbitrary: anyText },
  )
}

export const redirectUri: Arb<string> = fc.constantFrom(...PREFIXES).chain(redirectUriFor)

// ---------------------------------------------------------------- proxies and peers

/** Socket peers: trusted proxies, private but untrusted hosts, public clients, odd spellings. */
export const peer: Arb<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('10.0.0.7', '127.0.0.1', '::ffff:10.1.2.3') },
  { weight: 3, arbitrary: fc.constantFrom('203.0.113.5', '198.51.100.20', '2001:db8::5', '192.168.1.20', '172.16.0.9', '::1', 'fd00::1') },
  { weight: 1, arbitrary: fc.oneof(fc.ipV4(), fc.ipV6()) },
  { weight: 1, arbitrary: fc.constantFrom('', 'unknown', '::ffff:', '10.0.0.7%eth0') },
)

const IP_IN_HEADER = fc.oneof(
  fc.constantFrom('203.0.113.9', '10.0.0.8', '127.0.0.1', '2001:db8::9', '[2001:db8::9]:443', '203.0.113.9:4711', 'unknown', '_hidden', '', ' ', '::ffff:203.0.113.9'),
  fc.ipV4(),
  fc.ipV6(),
  anyText,
)

const PROTO = fc.oneof(fc.constantFrom('https', 'http', 'HTTPS', 'Https', 'https, http', 'http, https', 'wss', ''), anyText)

const FORWARDED = fc.oneof(
  fc.array(
    fc
      .tuple(IP_IN_HEADER, PROTO, fc.boolean())
      .map(([ip, proto, quoted]) => `for=${quoted || ip.includes(':') ? JSON.stringify(ip.includes(':') && !ip.startsWith('[') ? `[${ip}]` : ip) : ip};proto=${proto}`),
    { minLength: 1, maxLength: 4 },
  ).map((elements) => elements.join(', ')),
  fc.constantFrom('for=', 'for="unterminated', ';;', 'for=1.2.3.4;for=5.6.7.8', 'by=10.0.0.1', 'for=203.0.113.9;proto=https, for'),
  anyText,
)

/** One to four proxy header lines, believable or not. */
export const someProxyHeaders: Arb<Lines> = fc.array(
  fc.oneof(
    fc.tuple(fc.constantFrom('X-Forwarded-For', 'x-forwarded-for'), fc.array(IP_IN_HEADER, { minLength: 1, maxLength: 5 }).map((l) => l.join(', '))),
    fc.tuple(fc.constantFrom('X-Forwarded-Proto', 'x-forwarded-proto'), PROTO),
    fc.tuple(fc.constant('Forwarded'), FORWARDED),
    fc.tuple(fc.constantFrom('X-Real-IP', 'X-Forwarded-Host', 'Via'), IP_IN_HEADER),
  ),
  { minLength: 1, maxLength: 4 },
)

/** Proxy headers, believable or not, in any number. */
export const proxyHeaders: Arb<Lines> = fc.oneof({ weight: 1, arbitrary: fc.constant<Lines>([]) }, { weight: 1, arbitrary: someProxyHeaders })

// ---------------------------------------------------------------- cookies and forms

const COOKIE_VALUES = fc.oneof(
  fc.constantFrom(KNOWN.sessions.ada, KNOWN.sessions.expired, KNOWN.csrf, ''),
  fc.constantFrom(KNOWN.sessions.ada, KNOWN.csrf).chain(withInjected),
  anyText,
)

const COOKIE_PAIR = fc.oneof(
  fc.tuple(fc.constantFrom('__Host-odg-session', '__Host-odg-csrf', '__host-odg-session', 'odg-session', ' __Host-odg-csrf'), COOKIE_VALUES).map(([n, v]) => `${n}=${v}`),
  anyText,
)

/** Cookie lines: the gate's session and CSRF cookies, right, stale, twice, or mangled. */
export const cookieHeaders: Arb<Lines> = fc.oneof(
  { weight: 2, arbitrary: fc.constant([]) },
  { weight: 3, arbitrary: fc.constant([['Cookie', `__Host-odg-session=${KNOWN.sessions.ada}; __Host-odg-csrf=${KNOWN.csrf}`]]) },
  { weight: 3, arbitrary: fc.array(fc.array(COOKIE_PAIR, { minLength: 1, maxLength: 3 }).map((pairs): [string, string] => ['Cookie', pairs.join('; ')]), { minLength: 1, maxLength: 2 }) },
)

const FETCH_SITE = fc.oneof(
  { weight: 3, arbitrary: fc.constant([]) },
  { weight: 2, arbitrary: fc.constantFrom('same-origin', 'none', 'same-site', 'cross-site', 'SAME-ORIGIN', '').map((v): Array<[string, string]> => [['Sec-Fetch-Site', v]]) },
)

/** A form value: right, wrong, or hostile. */
function formValue(right: readonly string[]): Arb<string> {
  return fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...right) }, { weight: 1, arbitrary: anyText })
}

const FORM_FIELDS: Record<string, Arb<string>> = {
  csrf_token: formValue([KNOWN.csrf, KNOWN.csrf.slice(1), '']),
  action: formValue(['login', 'approve', 'deny', 'logout', 'Approve', '']),
  username: formValue([KNOWN.users.ada.username, 'ADA', 'nobody', KNOWN.users.sso.username, KNOWN.apiKeys.live.keyId]),
  password: formValue([KNOWN.users.ada.password, 'wrong-password-123', '']),
}

const AUTHORIZE_QUERY_FIELDS: Record<string, Arb<string>> = {
  client_id: formValue([...APP_TOKENS, 'unknownButPlausible0001', '']),
  response_type: formValue(['code', 'token', 'code id_token', 'CODE', '']),
  redirect_uri: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(KNOWN.redirect, `${KNOWN.prefixes.oauth}cb`, `${KNOWN.prefixes.root}/cb`) }, { weight: 2, arbitrary: redirectUri }),
  state: formValue(['xyz', 'a&b=c#d', '%41', '']),
  code_challenge: formValue(['E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', 'short', '']),
  code_challenge_method: formValue(['S256', 'plain', 's256', '']),
  scope: formValue(['read', '']),
}

const TOKEN_FIELDS: Record<string, Arb<string>> = {
  grant_type: formValue(['authorization_code', 'client_credentials', 'password', 'refresh_token', '']),
  code: formValue([...Object.values(KNOWN.codes), '']),
  redirect_uri: formValue([KNOWN.redirect, `${KNOWN.prefixes.root}/cb`, `${KNOWN.redirect}&x`, '']),
  client_id: formValue([...APP_TOKENS, 'unknownButPlausible0001', '']),
  client_secret: formValue([...Object.values(KNOWN.apps).map((a) => a.secret), 'wrong-client-secret-000', '']),
  code_verifier: formValue([KNOWN.verifier, `${KNOWN.verifier}x`, 'short', '']),
  token: formValue([...Object.values(KNOWN.tokens), 'unknown-token-value-0000000000000000000000', '']),
  token_type_hint: formValue(['access_token', 'refresh_token', '']),
}

/** Parameters a request of one kind carries when its client gets everything right. */
type Scenario = Readonly<Record<string, string>>

/**
 * A parameter list from a field table, near a scenario: each field mostly as the
 * scenario has it, sometimes absent, another value, or repeated; now and then a
 * `__proto__`, `constructor` or made-up name besides; in a shuffled order.
 */
function paramList(fields: Record<string, Arb<string>>, scenarios: readonly Scenario[] = [{}]): Arb<Lines> {
  const one = (name: string, value: Arb<string>, right: string | undefined): Arb<Lines> => {
    const single = (v: string): Lines => [[name, v]]
    const choices: Array<fc.WeightedArbitrary<Lines>> = [
      { weight: 2, arbitrary: fc.constant([]) },
      { weight: 2, arbitrary: value.map(single) },
      { weight: 1, arbitrary: fc.array(value.map((v): readonly [string, string] => [name, v]), { minLength: 2, maxLength: 3 }) },
    ]
    if (right !== undefined) choices.push({ weight: 24, arbitrary: fc.constant(single(right)) })
    return fc.oneof(...choices)
  }
  const extras = fc.oneof(
    { weight: 6, arbitrary: fc.constant<Lines>([]) },
    {
      weight: 1,
      arbitrary: fc.array(fc.oneof(fc.tuple(fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', 'prototype'), anyText), fc.tuple(anyText, anyText)), {
        minLength: 1,
        maxLength: 2,
      }),
    },
  )
  const entries = Object.entries(fields)
  return fc.oneof(
    ...scenarios.map((scenario) =>
      fc.tuple(fc.tuple(...entries.map(([n, v]) => one(n, v, scenario[n]))), extras, fc.nat(), fc.nat()).map(([lists, extra, a, b]) => shuffle([...lists.flat(), ...extra], a, b)),
    ),
  )
}

/** A cheap, shrinkable reordering: rotate, then swap two. */
function shuffle<T>(list: T[], a: number, b: number): T[] {
  if (list.length < 2) return list
  const r = a % list.length
  const out = [...list.slice(r), ...list.slice(0, r)]
  const i = b % out.length
  ;[out[0], out[i]] = [out[i] as T, out[0] as T]
  return out
}

const S256_CHALLENGE = createHash('sha256').update(KNOWN.verifier).digest('base64url')
const OAUTH = KNOWN.apps.oauth
const ROOT = KNOWN.apps.root

const AUTHORIZE_SCENARIOS: readonly Scenario[] = [
  { client_id: OAUTH.appToken, response_type: 'code', redirect_uri: KNOWN.redirect, state: 'xyz' },
  { client_id: OAUTH.appToken, response_type: 'code', redirect_uri: KNOWN.redirect, state: 'xyz', code_challenge: S256_CHALLENGE, code_challenge_method: 'S256' },
  { client_id: ROOT.appToken, response_type: 'code', redirect_uri: `${KNOWN.prefixes.root}/cb?x=1`, code_challenge: S256_CHALLENGE, code_challenge_method: 'S256' },
]

const FORM_SCENARIOS: readonly Scenario[] = [
  { csrf_token: KNOWN.csrf, action: 'login', username: KNOWN.users.ada.username, password: KNOWN.users.ada.password },
  { csrf_token: KNOWN.csrf, action: 'login', username: 'nobody', password: 'wrong-password-123' },
  { csrf_token: KNOWN.csrf, action: 'approve' },
  { csrf_token: KNOWN.csrf, action: 'deny' },
  { csrf_token: KNOWN.csrf, action: 'logout' },
]

const TOKEN_SCENARIOS: readonly Scenario[] = [
  { grant_type: 'authorization_code', code: KNOWN.codes.live, redirect_uri: KNOWN.redirect, client_id: OAUTH.appToken, client_secret: OAUTH.secret },
  { grant_type: 'authorization_code', code: KNOWN.codes.pkce, redirect_uri: KNOWN.redirect, client_id: OAUTH.appToken, client_secret: OAUTH.secret, code_verifier: KNOWN.verifier },
  { grant_type: 'authorization_code', code: KNOWN.codes.root, redirect_uri: `${KNOWN.prefixes.root}/cb`, client_id: ROOT.appToken, client_secret: ROOT.secret },
  { grant_type: 'authorization_code', code: KNOWN.codes.used, redirect_uri: KNOWN.redirect, client_id: OAUTH.appToken, client_secret: OAUTH.secret },
  { grant_type: 'authorization_code', code: KNOWN.codes.gone, redirect_uri: KNOWN.redirect, client_id: OAUTH.appToken, client_secret: OAUTH.secret },
]

const REVOKE_SCENARIOS: readonly Scenario[] = [
  { token: KNOWN.tokens.live, token_type_hint: 'access_token', client_id: OAUTH.appToken, client_secret: OAUTH.secret },
  { token: KNOWN.tokens.live, client_id: ROOT.appToken, client_secret: ROOT.secret },
]

function formEncode(pairs: ReadonlyArray<readonly [string, string]>): Arb<string> {
  if (pairs.length === 0) return fc.constant('')
  return fc.tuple(...pairs.map(([n, v]) => fc.tuple(fc.oneof({ weight: 6, arbitrary: fc.constant(n) }, { weight: 1, arbitrary: percentEncodings(n) }).map(encodeSpecials), fc.constant(encodeURIComponent(wellFormed(v)).replace(/%20/g, '+'))))).map((encoded) => encoded.map(([n, v]) => `${n}=${v}`).join('&'))
}

/** Keep `&`, `=`, `#` and `+` inside a name from splitting it. */
function encodeSpecials(name: string): string {
  return wellFormed(name).replace(/[&=#+ ]/g, (c) => encodeURIComponent(c))
}

/** A JSON value in the wrong type: numbers, booleans, null, arrays, nested objects. */
const WRONG_TYPE: Arb<unknown> = fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 2 }), fc.dictionary(fc.string({ maxLength: 3 }), fc.string(), { maxKeys: 2 }), fc.array(fc.integer(), { maxLength: 2 }))

/** A JSON body: the parameters as strings, some in the wrong type, `__proto__` keys, duplicate keys in the text. */
function jsonBody(pairs: ReadonlyArray<readonly [string, string]>): Arb<string> {
  return fc.array(fc.oneof({ weight: 30, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: WRONG_TYPE }), { minLength: pairs.length, maxLength: pairs.length }).map((wrong) => {
    // Written by hand, not JSON.stringify: a repeated key must stay repeated, as a hostile client sends it.
    const members = pairs.map(([n, v], i) => `${JSON.stringify(n)}:${JSON.stringify(wrong[i] === undefined ? v : wrong[i])}`)
    return `{${members.join(',')}}`
  })
}

const CONTENT_TYPES = {
  form: fc.constantFrom('application/x-www-form-urlencoded', 'application/x-www-form-urlencoded; charset=utf-8', 'APPLICATION/X-WWW-FORM-URLENCODED'),
  json: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'Application/JSON'),
  other: fc.constantFrom('text/plain', 'multipart/form-data; boundary=x', 'application/json-patch+json', 'application/x-www-form-urlencoded-x', ''),
}

/** A body carrying `pairs`: form, JSON, wrong type, oversized, unparseable, or parsed by a framework. */
function bodyFor(pairs: ReadonlyArray<readonly [string, string]>): Arb<{ contentType: string | undefined; body: HostileBody | undefined }> {
  const text = (type: Arb<string>, content: Arb<string>) => fc.tuple(type, content).map(([contentType, t]) => ({ contentType, body: { kind: 'text' as const, text: t } }))
  return fc.oneof(
    { weight: 5, arbitrary: text(CONTENT_TYPES.form, formEncode(pairs)) },
    { weight: 4, arbitrary: text(CONTENT_TYPES.json, jsonBody(pairs)) },
    { weight: 1, arbitrary: text(CONTENT_TYPES.other, formEncode(pairs)) },
    { weight: 1, arbitrary: text(CONTENT_TYPES.json, fc.oneof(fc.constantFrom('', '[]', '"code"', '1', 'null', '{', '{"a":', '{"__proto__":{"grant_type":"authorization_code"}}', '[{"code":"x"}]'), fc.json())) },
    { weight: 1, arbitrary: fc.tuple(fc.oneof(CONTENT_TYPES.form, CONTENT_TYPES.json), fc.integer({ min: 16_300, max: 17_000 })).map(([contentType, n]) => ({ contentType, body: { kind: 'text' as const, text: `code=${'x'.repeat(n)}` } })) },
    { weight: 1, arbitrary: fc.constant({ contentType: undefined, body: undefined }) },
    { weight: 2, arbitrary: parsedBody(pairs).map((value) => ({ contentType: 'application/json', body: { kind: 'parsed' as const, value } })) },
  )
}

/** What a framework's parser could hand over: an object (extended parsers nest), an array, a string, null, a Buffer. */
function parsedBody(pairs: ReadonlyArray<readonly [string, string]>): Arb<unknown> {
  const asObject = fc.array(fc.oneof({ weight: 30, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: WRONG_TYPE }), { minLength: pairs.length, maxLength: pairs.length }).map((wrong) => {
    const object: Record<string, unknown> = {}
    pairs.forEach(([n, v], i) => {
      const value = wrong[i] === undefined ? v : wrong[i]
      const existing = Object.prototype.hasOwnProperty.call(object, n) ? object[n] : undefined
      // A repeated name becomes an array, as querystring and qs make it.
      Object.defineProperty(object, n, { value: existing === undefined ? value : [existing, value].flat(), enumerable: true, configurable: true, writable: true })
    })
    return object
  })
  return fc.oneof(
    { weight: 6, arbitrary: asObject },
    { weight: 1, arbitrary: fc.oneof(fc.constant(null), fc.constant(undefined), fc.string(), fc.integer(), fc.array(fc.string()), fc.constant(Buffer.from('code=x')), fc.constant(Object.create(null) as unknown)) },
    { weight: 1, arbitrary: fc.anything({ maxDepth: 2 }) },
  )
}

// ---------------------------------------------------------------- requests

const DATA_PATHS = ['/resource/abcd-1234.json', '/private/abcd-1234.json', '/api/v3/views/abcd-1234/query.json', '/api/users/current.json', '/users/current.json', '/users/current.xml']
const OAUTH_PATHS = ['/oauth/authorize', '/oauth/access_token', '/oauth/revoke', '/.well-known/oauth-authorization-server']
/** Near misses of the gate's own paths: they are someone else's routes. */
const PATH_VARIANTS = ['/oauth/authorize/', '//oauth/authorize', '/OAUTH/authorize', '/oauth/%61uthorize', '/oauth/access_token;x', '/users/current.json/', '/', '*', '/oauth/../oauth/authorize']

const METHODS = fc.oneof({ weight: 6, arbitrary: fc.constantFrom('GET', 'POST') }, { weight: 1, arbitrary: fc.constantFrom('HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PATCH') })

function query(pairs: readonly string[]): string {
  return pairs.length === 0 ? '' : `?${pairs.join('&')}`
}

/** Queries of tens of thousands of parameters: nothing may take long over them. */
const HUGE_QUERIES: Arb<string[]> = fc.constantFrom(
  ['$$app_token=a&'.repeat(20_000)],
  ['app_token=&'.repeat(20_000)],
  ['x=1&'.repeat(50_000)],
  ['%'.repeat(100_000)],
  [`$$app_token=${'%41'.repeat(30_000)}`],
)

/** The transport around a request: peer, TLS, proxy headers. */
const TRANSPORT = fc.record({
  peer,
  tls: fc.oneof({ weight: 6, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  proxy: fc.oneof({ weight: 2, arbitrary: fc.constant<Lines>([]) }, { weight: 1, arbitrary: proxyHeaders }),
})

/** A request to the data API: credentials, app tokens, proxy headers. */
const dataRequest: Arb<HostileRequest> = fc
  .record({
    method: METHODS,
    path: fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...DATA_PATHS) }, { weight: 1, arbitrary: fc.constantFrom(...PATH_VARIANTS) }),
    query: fc.tuple(appTokenQuery, fc.oneof({ weight: 30, arbitrary: fc.array(fc.constantFrom('$limit=5', '$where=a%3D1', 'x', '=', '&', '%zz', '%E9'), { maxLength: 2 }) }, { weight: 1, arbitrary: HUGE_QUERIES })),
    auth: fc.oneof({ weight: 1, arbitrary: fc.constant<Lines>([]) }, { weight: 2, arbitrary: authorizationHeaders }),
    apps: fc.oneof({ weight: 1, arbitrary: fc.constant<Lines>([]) }, { weight: 2, arbitrary: appTokenHeaders }),
    cookies: fc.oneof({ weight: 4, arbitrary: fc.constant<Lines>([]) }, { weight: 1, arbitrary: cookieHeaders }),
    transport: TRANSPORT,
  })
  .map(({ method, path, query: [tokens, other], auth, apps, cookies, transport }) => ({
    method,
    target: path + query([...tokens, ...other]),
    headers: [...auth, ...apps, ...cookies, ...transport.proxy],
    body: undefined,
    peer: transport.peer,
    tls: transport.tls,
  }))

/** The authorize endpoint: GET shows pages, POST carries the login and consent forms. */
const authorizeRequest: Arb<HostileRequest> = fc
  .record({
    method: fc.oneof({ weight: 8, arbitrary: fc.constantFrom('GET', 'POST') }, { weight: 1, arbitrary: fc.constantFrom('PUT', 'HEAD') }),
    params: paramList(AUTHORIZE_QUERY_FIELDS, AUTHORIZE_SCENARIOS),
    form: paramList(FORM_FIELDS, FORM_SCENARIOS),
    cookies: cookieHeaders,
    fetchSite: FETCH_SITE,
    auth: fc.oneof({ weight: 4, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: authorizationHeaders }),
    transport: TRANSPORT,
  })
  .chain(({ method, params, form, cookies, fetchSite, auth, transport }) =>
    fc.tuple(formEncode(params), method === 'POST' ? bodyFor(form) : fc.constant({ contentType: undefined, body: undefined })).map(([q, { contentType, body }]): HostileRequest => ({
      method,
      target: `/oauth/authorize${q === '' ? '' : `?${q}`}`,
      headers: [...cookies, ...fetchSite, ...auth, ...(contentType === undefined ? [] : [['Content-Type', contentType] as [string, string]]), ...transport.proxy],
      body,
      peer: transport.peer,
      tls: transport.tls,
    })),
  )

/** The client's credentials as `Authorization: Basic`, form-encoded first as RFC 6749 §2.3.1 says (or not). */
const CLIENT_BASIC: Arb<Lines> = fc.oneof(
  { weight: 3, arbitrary: fc.constant([]) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(TOKEN_FIELDS.client_id!, TOKEN_FIELDS.client_secret!, fc.boolean(), fc.constantFrom('Basic ', 'basic ', 'Basic  '))
      .map(([id, secret, encode, scheme]): Array<[string, string]> => {
        const part = (s: string) => (encode ? encodeURIComponent(wellFormed(s)) : s)
        return [['Authorization', `${scheme}${Buffer.from(`${part(id)}:${part(secret)}`).toString('base64')}`]]
      }),
  },
  { weight: 1, arbitrary: authorizationHeaders },
)

/** The client's own credentials moved into `Authorization: Basic`, form-encoded as RFC 6749 §2.3.1 says, or not. */
function basicFrom(params: Lines, encode: boolean, scheme: string): { basic: Lines; rest: Lines } {
  const id = params.find(([n]) => n === 'client_id')?.[1] ?? ''
  const secret = params.find(([n]) => n === 'client_secret')?.[1] ?? ''
  const part = (v: string) => (encode ? encodeURIComponent(wellFormed(v)) : v)
  return {
    basic: [['Authorization', `${scheme}${Buffer.from(`${part(id)}:${part(secret)}`).toString('base64')}`]],
    rest: params.filter(([n]) => n !== 'client_id' && n !== 'client_secret'),
  }
}

/** The token and revocation endpoints: parameters in the query, a form body, a JSON body, or Basic. */
const tokenRequest: Arb<HostileRequest> = fc
  .record({
    method: fc.oneof({ weight: 12, arbitrary: fc.constant('POST') }, { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT') }),
    endpoint: fc.oneof(
      { weight: 2, arbitrary: fc.tuple(fc.constant<string>('/oauth/access_token'), paramList(TOKEN_FIELDS, TOKEN_SCENARIOS)) },
      { weight: 1, arbitrary: fc.tuple(fc.constant<string>('/oauth/revoke'), paramList(TOKEN_FIELDS, REVOKE_SCENARIOS)) },
      // The other endpoint's parameters.
      { weight: 1, arbitrary: fc.tuple(fc.constantFrom<string>('/oauth/access_token', '/oauth/revoke'), paramList(TOKEN_FIELDS, [...TOKEN_SCENARIOS, ...REVOKE_SCENARIOS])) },
    ) as Arb<readonly [string, Lines]>,
    placement: fc.constantFrom('body', 'body', 'body', 'body', 'query', 'split'),
    clientAuth: fc.constantFrom('params', 'params', 'params', 'basic', 'basic', 'random'),
    encodeBasic: fc.boolean(),
    basicScheme: fc.oneof({ weight: 8, arbitrary: fc.constant('Basic ') }, { weight: 1, arbitrary: fc.constantFrom('basic ', 'Basic  ', 'Basic\t') }),
    randomBasic: CLIENT_BASIC,
    split: fc.nat({ max: 6 }),
    apps: fc.oneof({ weight: 6, arbitrary: fc.constant<Lines>([]) }, { weight: 1, arbitrary: appTokenHeaders }),
    transport: TRANSPORT,
  })
  .chain(({ method, endpoint: [path, params], placement, clientAuth, encodeBasic, basicScheme, randomBasic, split, apps, transport }) => {
    const moved = clientAuth === 'basic' ? basicFrom(params, encodeBasic, basicScheme) : { basic: clientAuth === 'random' ? randomBasic : [], rest: params }
    const inQuery = placement === 'query' ? moved.rest : placement === 'split' ? moved.rest.slice(0, split) : []
    const inBody = placement === 'query' ? [] : placement === 'split' ? moved.rest.slice(split) : moved.rest
    return fc.tuple(formEncode(inQuery), bodyFor(inBody)).map(([qs, { contentType, body }]): HostileRequest => ({
      method,
      target: `${path}${qs === '' ? '' : `?${qs}`}`,
      headers: [...moved.basic, ...apps, ...(contentType === undefined ? [] : [['Content-Type', contentType] as const]), ...transport.proxy],
      body,
      peer: transport.peer,
      tls: transport.tls,
    }))
  })

/** Anything else: the metadata, odd methods and paths, every header family at once. */
const otherRequest: Arb<HostileRequest> = fc
  .record({
    method: METHODS,
    path: fc.oneof(fc.constantFrom(...OAUTH_PATHS, ...PATH_VARIANTS), fc.webPath()),
    query: fc.oneof(fc.constant(''), fc.webQueryParameters().map((q) => (q === '' ? '' : `?${q}`))),
    auth: authorizationHeaders,
    apps: appTokenHeaders,
    cookies: cookieHeaders,
    host: fc.oneof(fc.constant([]), fc.constantFrom('gate.example', 'gate.example:8443', 'evil"host', '[::1]', '', 'a b').map((h): Array<[string, string]> => [['Host', h]])),
    transport: TRANSPORT,
  })
  .map(({ method, path, query: q, auth, apps, cookies, host, transport }) => ({
    method,
    target: path + q,
    headers: [...host, ...auth, ...apps, ...cookies, ...transport.proxy],
    body: undefined,
    peer: transport.peer,
    tls: transport.tls,
  }))

const SELF_SERVICE_PATHS = [
  '/api/api_keys',
  `/api/api_keys/${KNOWN.apiKeys.live.keyId}`,
  `/api/api_keys/${KNOWN.apiKeys.revoked.keyId}`,
  '/api/api_keys/fuzzkeynotthere2345678abc',
  '/api/api_keys/%zz',
  '/api/api_keys/a/b',
  '/api/oauth/grants',
  `/api/oauth/grants/${KNOWN.apps.oauth.appToken}`,
  `/api/oauth/grants/${KNOWN.apps.plain.appToken}`,
  '/api/oauth/grants/%E0%A4',
]

const SELF_SERVICE_QUERY = fc.array(
  fc.oneof(
    fc.constantFrom('limit=2', 'limit=0', 'limit=-1', 'limit=1e3', 'limit=99999', 'sortBy=name', 'sortBy=createdAt', 'sortBy=nope', 'sortOrder=desc', 'sortOrder=sideways'),
    fc.constantFrom('includeDeleted=true', 'includeDeleted=yes', 'seek=', `seek=${KNOWN.apiKeys.live.keyId}`, 'nameSearch=et', 'limit=2&limit=3'),
  ),
  { maxLength: 3 },
)

const KEY_NAME_BODY: Arb<{ contentType: string | undefined; body: HostileBody | undefined }> = fc.oneof(
  { weight: 4, arbitrary: fc.oneof(fc.constantFrom('nightly etl', '', '  ', 'x'.repeat(201)), anyText).chain((name) => bodyFor([['keyName', name]])) },
  { weight: 1, arbitrary: bodyFor([]) },
  { weight: 1, arbitrary: bodyFor([['keyName', 'a'], ['keyName', 'b']]) },
)

const GRANTS_FORM_SCENARIOS: readonly Scenario[] = [
  { csrf_token: KNOWN.csrf, action: 'revoke', app_token: KNOWN.apps.oauth.appToken },
  { csrf_token: KNOWN.csrf, action: 'login', username: KNOWN.users.ada.username, password: KNOWN.users.ada.password },
  { csrf_token: KNOWN.csrf, action: 'logout' },
]

const GRANTS_FORM_FIELDS: Record<string, Arb<string>> = { ...FORM_FIELDS, action: formValue(['revoke', 'login', 'logout', '']), app_token: formValue([...APP_TOKENS, '']) }

/** Who a self-service request comes from: credentials, a session with or without its CSRF header, nobody. */
const SELF_SERVICE_CALLER: Arb<Lines> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<Lines>([['Cookie', `__Host-odg-session=${KNOWN.sessions.ada}; __Host-odg-csrf=${KNOWN.csrf}`], ['X-CSRF-Token', KNOWN.csrf]]) },
  { weight: 1, arbitrary: fc.constant<Lines>([['Cookie', `__Host-odg-session=${KNOWN.sessions.ada}; __Host-odg-csrf=${KNOWN.csrf}`]]) },
  { weight: 1, arbitrary: fc.tuple(cookieHeaders, fc.oneof(fc.constant<Lines>([]), fc.constantFrom(KNOWN.csrf, '', KNOWN.sessions.ada).map((v): Lines => [['X-CSRF-Token', v]]))).map(([c, t]) => [...c, ...t]) },
  { weight: 2, arbitrary: fc.constantFrom(`Basic ${Buffer.from(`ada:${KNOWN.users.ada.password}`).toString('base64')}`, `Basic ${Buffer.from(`${KNOWN.apiKeys.live.keyId}:${KNOWN.apiKeys.live.secret}`).toString('base64')}`, `OAuth ${KNOWN.tokens.live}`).map((v): Lines => [['Authorization', v]]) },
  { weight: 1, arbitrary: authorizationHeaders },
)

/** The API key endpoints, connected apps and their page: the user's own access, managed over a session or credentials. */
const selfServiceRequest: Arb<HostileRequest> = fc
  .record({
    method: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('GET', 'POST', 'DELETE') }, { weight: 1, arbitrary: fc.constantFrom('HEAD', 'PUT', 'PATCH') }),
    page: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    path: fc.constantFrom(...SELF_SERVICE_PATHS),
    query: SELF_SERVICE_QUERY,
    caller: SELF_SERVICE_CALLER,
    fetchSite: FETCH_SITE,
    apps: fc.oneof({ weight: 4, arbitrary: fc.constant<Lines>([]) }, { weight: 1, arbitrary: appTokenHeaders }),
    keyBody: KEY_NAME_BODY,
    form: paramList(GRANTS_FORM_FIELDS, GRANTS_FORM_SCENARIOS),
    transport: TRANSPORT,
  })
  .chain(({ method, page, path, query: q, caller, fetchSite, apps, keyBody, form, transport }) =>
    (page && method === 'POST' ? bodyFor(form) : fc.constant(keyBody)).map(({ contentType, body }): HostileRequest => ({
      method,
      target: `${page ? '/oauth/grants' : path}${query(q)}`,
      headers: [...caller, ...fetchSite, ...apps, ...(contentType === undefined || method !== 'POST' ? [] : [['Content-Type', contentType] as const]), ...transport.proxy],
      body: method === 'POST' ? body : undefined,
      peer: transport.peer,
      tls: transport.tls,
    })),
  )

/**
 * A request to the data routes that the gate mostly lets through: a real app token (or
 * none), real credentials (or none), now and then a proxy header. For comparing what each
 * adapter hands the application as `req.gate`.
 */
export const passableDataRequest: Arb<HostileRequest> = fc
  .record({
    route: fc.constantFrom<readonly [string, string]>(['GET', '/resource/abcd-1234.json'], ['GET', '/private/abcd-1234.json'], ['POST', '/api/v3/views/abcd-1234/query.json']),
    app: fc.oneof(fc.constant<Lines>([]), fc.constantFrom(...APP_TOKENS).map((t): Lines => [['X-App-Token', t]])),
    inQuery: fc.boolean(),
    auth: fc.oneof(
      fc.constant<Lines>([]),
      fc
        .constantFrom(`Basic ${Buffer.from(`ada:${KNOWN.users.ada.password}`).toString('base64')}`, `Basic ${Buffer.from(`${KNOWN.apiKeys.live.keyId}:${KNOWN.apiKeys.live.secret}`).toString('base64')}`, `OAuth ${KNOWN.tokens.live}`, `Bearer ${KNOWN.tokens.live}`)
        .map((v): Lines => [['Authorization', v]]),
    ),
    proxy: fc.oneof({ weight: 3, arbitrary: fc.constant<Lines>([]) }, { weight: 1, arbitrary: someProxyHeaders }),
    tls: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  })
  .map(({ route: [method, path], app, inQuery, auth, proxy, tls }): HostileRequest => {
    const token = app[0]?.[1]
    return {
      method,
      target: inQuery && token !== undefined ? `${path}?$$app_token=${token}` : path,
      headers: [...(inQuery ? [] : app), ...auth, ...proxy],
      body: undefined,
      peer: '203.0.113.5',
      tls,
    }
  })

/** Any hostile request, weighted towards the surfaces that decide the most. */
export const hostileRequest: Arb<HostileRequest> = fc.oneof(
  { weight: 5, arbitrary: dataRequest },
  { weight: 3, arbitrary: authorizeRequest },
  { weight: 4, arbitrary: tokenRequest },
  { weight: 2, arbitrary: selfServiceRequest },
  { weight: 1, arbitrary: otherRequest },
)

/** Which trusted proxies exist, for the checks. */
export { TRUSTED_PROXIES }

// ---------------------------------------------------------------- text no store can hold

/** Values the hostile characters are put into: each field's right value, mostly. */
const CARRIERS = [
  KNOWN.users.ada.username,
  KNOWN.users.ada.password,
  KNOWN.apps.oauth.appToken,
  KNOWN.apps.oauth.secret,
  KNOWN.apiKeys.live.keyId,
  KNOWN.redirect,
  KNOWN.codes.live,
  KNOWN.verifier,
  KNOWN.csrf,
  KNOWN.tokens.live,
  'etl',
  'login',
  'authorization_code',
  '',
]

/**
 * Text no store can hold, or longer than any field: a NUL or an unpaired surrogate
 * somewhere in a right value (or alone, or many), or a value hundreds to thousands of
 * characters long. On PostgreSQL a NUL in text is refused by the server.
 */
export const unstorableValue: Arb<string> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(fc.constantFrom(...CARRIERS), fc.nat(), fc.constantFrom('\u0000', '\u0000\u0000', '\ud800', '\udfff', '\udc00\ud800', '\u0000\ud83d'))
      .map(([s, i, c]) => s.slice(0, i % (s.length + 1)) + c + s.slice(i % (s.length + 1))),
  },
  { weight: 1, arbitrary: fc.constantFrom('\u0000', '\ud800', '\u0000'.repeat(300)) },
  { weight: 2, arbitrary: fc.tuple(fc.integer({ min: 101, max: 3000 }), fc.constantFrom('a', 'é', '\u{1F600}', '%', 'x\u0000')).map(([n, c]) => c.repeat(Math.ceil(n / c.length)).slice(0, n)) },
)

/** How a body carries its fields: a form (a lone surrogate cannot: it travels as U+FFFD), JSON (it can, escaped), or a framework's parsed object. */
const BODY_KIND = fc.constantFrom('form', 'json', 'json', 'parsed')

function hostileBody(kind: string, fields: Record<string, string>): { contentType: string | undefined; body: HostileBody } {
  if (kind === 'parsed') return { contentType: 'application/json', body: { kind: 'parsed', value: fields } }
  if (kind === 'form') return { contentType: 'application/x-www-form-urlencoded', body: { kind: 'text', text: new URLSearchParams(Object.entries(fields).map(([n, v]) => [n, wellFormed(v)])).toString() } }
  // JSON.stringify escapes a lone surrogate (`"\ud800"`): JSON.parse gives it back.
  return { contentType: 'application/json', body: { kind: 'text', text: JSON.stringify(fields) } }
}

function queryOf(fields: Record<string, string>): string {
  return Object.entries(fields)
    .map(([n, v]) => `${encodeURIComponent(n)}=${encodeURIComponent(wellFormed(v))}`)
    .join('&')
}

const ADA_BASIC: readonly [string, string] = ['Authorization', `Basic ${Buffer.from(`${KNOWN.users.ada.username}:${KNOWN.users.ada.password}`).toString('base64')}`]
const SESSION_AND_CSRF: readonly [string, string] = ['Cookie', `__Host-odg-session=${KNOWN.sessions.ada}; __Host-odg-csrf=${KNOWN.csrf}`]
const CSRF_ONLY: readonly [string, string] = ['Cookie', `__Host-odg-csrf=${KNOWN.csrf}`]

function request(method: string, target: string, headers: Lines, body?: { contentType: string | undefined; body: HostileBody }): HostileRequest {
  const type = body?.contentType === undefined ? [] : [['Content-Type', body.contentType] as const]
  return { method, target, headers: [...headers, ...type], body: body?.body, peer: '203.0.113.5', tls: true }
}

/** `fields` with `name` set to `value`. */
function put(fields: Record<string, string>, name: string, value: string): Record<string, string> {
  return { ...fields, [name]: value }
}

const AUTHORIZE_LINK = { client_id: KNOWN.apps.oauth.appToken, response_type: 'code', redirect_uri: KNOWN.redirect, state: 'st' }
const TOKEN_BODY = { grant_type: 'authorization_code', code: KNOWN.codes.live, redirect_uri: KNOWN.redirect, client_id: KNOWN.apps.oauth.appToken, client_secret: KNOWN.apps.oauth.secret }

/**
 * A request that is right in every field but one, which holds text no store can hold:
 * every field a client fills in (the authorize link and its sign-in form, the
 * connected-apps page's forms, the token and revocation parameters in a query, a form, JSON
 * or a parsed body, Basic credentials, app tokens in the header and both query names, the
 * API key list's parameters, a new key's name, key ids and app tokens in paths, cookies).
 */
export const unstorableRequest: Arb<HostileRequest> = fc.tuple(unstorableValue, BODY_KIND, fc.nat({ max: 99 })).chain(([v, kind, pick]) =>
  fc.constantFrom<HostileRequest>(
    // The authorize link, signed in, and its sign-in and consent forms.
    ...['client_id', 'response_type', 'redirect_uri', 'state', 'code_challenge', 'code_challenge_method', 'scope'].map((name) => request('GET', `/oauth/authorize?${queryOf(put(AUTHORIZE_LINK, name, v))}`, [SESSION_AND_CSRF])),
    ...['csrf_token', 'action', 'username', 'password'].map((name) =>
      request('POST', `/oauth/authorize?${queryOf(AUTHORIZE_LINK)}`, [CSRF_ONLY], hostileBody(kind, put({ csrf_token: KNOWN.csrf, action: 'login', username: KNOWN.users.ada.username, password: KNOWN.users.ada.password }, name, v))),
    ),
    // The connected-apps page: sign in, revoke.
    ...['csrf_token', 'action', 'username', 'password'].map((name) =>
      request('POST', '/oauth/grants', [CSRF_ONLY], hostileBody(kind, put({ csrf_token: KNOWN.csrf, action: 'login', username: KNOWN.users.ada.username, password: KNOWN.users.ada.password }, name, v))),
    ),
    request('POST', '/oauth/grants', [SESSION_AND_CSRF], hostileBody(kind, { csrf_token: KNOWN.csrf, action: 'revoke', app_token: v })),
    // The token and revocation endpoints, parameters in the body or the query.
    ...[...Object.keys(TOKEN_BODY), 'code_verifier'].map((name) => request('POST', '/oauth/access_token', [], hostileBody(kind, put(TOKEN_BODY, name, v)))),
    ...[...Object.keys(TOKEN_BODY), 'code_verifier'].map((name) => request('POST', `/oauth/access_token?${queryOf(put(TOKEN_BODY, name, v))}`, [])),
    ...['token', 'client_id', 'client_secret'].map((name) =>
      request('POST', '/oauth/revoke', [], hostileBody(kind, put({ token: 'unknown-token-value-0000000000000000000000', client_id: KNOWN.apps.oauth.appToken, client_secret: KNOWN.apps.oauth.secret }, name, v))),
    ),
    request('POST', '/oauth/access_token', [['Authorization', `Basic ${Buffer.from(`${encodeURIComponent(wellFormed(v))}:${encodeURIComponent(KNOWN.apps.oauth.secret)}`).toString('base64')}`]], hostileBody(kind, { grant_type: 'authorization_code', code: KNOWN.codes.live, redirect_uri: KNOWN.redirect })),
    // Basic credentials, app tokens, the session cookie.
    request('GET', '/api/users/current.json', [['Authorization', `Basic ${Buffer.from(`${v}:${KNOWN.users.ada.password}`).toString('base64')}`]]),
    request('GET', '/api/users/current.json', [['Authorization', `Basic ${Buffer.from(`${KNOWN.users.ada.username}:${v}`).toString('base64')}`]]),
    request('GET', '/resource/abcd-1234.json', [['X-App-Token', v]]),
    request('GET', `/resource/abcd-1234.json?$$app_token=${encodeURIComponent(wellFormed(v))}`, []),
    request('GET', `/resource/abcd-1234.json?app_token=${encodeURIComponent(wellFormed(v))}`, []),
    request('GET', '/api/users/current.json', [['Cookie', `__Host-odg-session=${v}`]]),
    // The API key endpoints: list parameters, a new key's name, a key id; connected apps by app token.
    ...['nameSearch', 'seek', 'limit', 'sortBy', 'sortOrder', 'includeDeleted'].map((name) => request('GET', `/api/api_keys?${queryOf({ [name]: v })}`, [ADA_BASIC])),
    request('POST', '/api/api_keys', [ADA_BASIC], hostileBody(kind, { keyName: v })),
    request('POST', '/api/api_keys', [SESSION_AND_CSRF, ['X-CSRF-Token', KNOWN.csrf]], hostileBody(kind, { keyName: `${v} ${pick}` })),
    request(pick % 2 === 0 ? 'GET' : 'DELETE', `/api/api_keys/${encodeURIComponent(wellFormed(v))}`, [ADA_BASIC]),
    request('DELETE', `/api/oauth/grants/${encodeURIComponent(wellFormed(v))}`, [ADA_BASIC]),
  ),
)
