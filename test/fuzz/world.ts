/**
 * The world the hostile-input properties run in: a gate on a MemoryStore that records
 * every call that could change a record, seeded with fixed applications, users, keys,
 * tokens, codes and sessions whose secrets the properties know (so they can check that
 * none is ever echoed). A fresh world per case is cheap (the records are inserted as they
 * are, no hashing), so every case starts from the same state and a counterexample replays
 * on its own.
 */
import { createHash } from 'node:crypto'
import { createGate, MemoryStore, type Gate, type GateOptions, type GateStore } from '../../src/index.js'
import { STORE_METHODS } from '../../src/store/guarded-store.js'
import { USAGE_STORE_METHODS } from '../../src/store/usage-contract.js'
import { hashPassword } from '../../src/secrets/passwords.js'
import { sha256 } from '../../src/secrets/tokens.js'
import type { AccessTokenRecord, ApiKeyRecord, ApplicationRecord, AuthorizationCodeRecord, SessionRecord, UserRecord } from '../../src/store/store.js'

/** Which configuration a case runs against. */
export type WorldKind =
  /** Trusts a proxy range, generous budgets: requests get past the throttle to the deeper checks. */
  | 'open'
  /** Trusts no proxy, tiny budgets, PKCE required, consent remembered, the host's login page, Bearer off, the legacy parameter off, Basic challenges on. */
  | 'strict'
  /** A store that fails every call, with `onStoreError: 'fail-closed'`: the one world where a 503 is right. */
  | 'down'

export const WORLD_KINDS: readonly WorldKind[] = ['open', 'strict', 'down']

/** The known secrets, fixed so that a counterexample names them the same way every run. */
export const KNOWN = {
  apps: {
    oauth: { appToken: 'odgFuzzOAuthApp000000001', secret: 'fuzz-secret-oauth-app-4f7c21d9a8e3b6' },
    plain: { appToken: 'odgFuzzPlainApp000000002', secret: 'fuzz-secret-plain-app-9b2e6a1f0c7d33' },
    root: { appToken: 'odgFuzzRootApp0000000003', secret: 'fuzz-secret-root-app-5e8d0b3a7f1c64' },
    limited: { appToken: 'odgFuzzLimitedApp0000004', secret: 'fuzz-secret-limited-app-2c9f4e7b1a0d' },
  },
  /** Callback Prefixes: a path one, and a bare origin with a port (a tenant can register that). */
  prefixes: { oauth: 'https://transit.example/oauth/', root: 'https://cb.example:8443' },
  redirect: 'https://transit.example/oauth/callback?tab=live',
  users: {
    ada: { id: 'ad2a-fz01', username: 'ada', password: 'fuzz-password-ada-correct-horse' },
    sso: { id: 'ss2o-fz02', username: 'sso-only' },
  },
  /** A user id no record has: tokens and codes of a deleted account. */
  goneUserId: 'g2ne-fz03',
  apiKeys: {
    live: { keyId: 'fuzzkey2345678abcdefghijk', secret: 'fuzz-key-secret-live-8d1e4b7a2c5f90' },
    revoked: { keyId: 'fuzzkey9876543zyxwvutsrqp', secret: 'fuzz-key-secret-revoked-3a6d9c2f5b8e' },
  },
  tokens: {
    live: 'fuzzAccessTokenLive_0123456789abcdefghijklm',
    expired: 'fuzzAccessTokenExpired_0123456789abcdefghij',
    revoked: 'fuzzAccessTokenRevoked_0123456789abcdefghij',
    orphan: 'fuzzAccessTokenOrphan_0123456789abcdefghijk',
    fromUsedCode: 'fuzzAccessTokenFromUsedCode_0123456789abcde',
  },
  codes: {
    live: 'fuzzCodeLive_0123456789abcdefghijklmnopqrstu',
    pkce: 'fuzzCodePkce_0123456789abcdefghijklmnopqrstu',
    used: 'fuzzCodeUsed_0123456789abcdefghijklmnopqrstu',
    expired: 'fuzzCodeExpired_0123456789abcdefghijklmnopq',
    root: 'fuzzCodeRoot_0123456789abcdefghijklmnopqrstu',
    gone: 'fuzzCodeGoneUser_0123456789abcdefghijklmnop',
  },
  verifier: 'fuzz-pkce-verifier-0123456789-abcdefghijklmnopqrstuvwxyz',
  sessions: {
    ada: 'fuzzSessionAda_0123456789abcdefghijklmnopqr',
    expired: 'fuzzSessionOld_0123456789abcdefghijklmnopqr',
  },
  /** A CSRF token: not a secret (the page shows it), but a form must match its cookie. */
  csrf: 'fuzzCsrfToken_0123456789abcdefghijklmnopqrs',
} as const

/** Every secret the world holds; none may ever appear in a response or an event. */
export const WORLD_SECRETS: readonly string[] = [
  ...Object.values(KNOWN.apps).map((a) => a.secret),
  KNOWN.users.ada.password,
  ...Object.values(KNOWN.apiKeys).map((k) => k.secret),
  ...Object.values(KNOWN.tokens),
  ...Object.values(KNOWN.codes),
  KNOWN.verifier,
  ...Object.values(KNOWN.sessions),
]

/** A call that changed a record (rate counters are not records). */
export interface Write {
  readonly method: string
  readonly args: readonly unknown[]
}

const WRITES = [
  'insertApplication',
  'updateApplication',
  'deleteApplication',
  'insertUser',
  'updateUser',
  'deleteUser',
  'insertApiKey',
  'updateApiKey',
  'revokeApiKey',
  'insertAccessToken',
  'revokeAccessToken',
  'revokeAccessTokens',
  'recordGrant',
  'touchGrant',
  'deleteGrant',
  'insertAuthorizationCode',
  'consumeAuthorizationCode',
  'insertSession',
  'deleteSession',
  'trimSessions',
] as const

/**
 * A real MemoryStore behind a thin front that writes down every call that could change a
 * record, can be put back to the seed between cases (a fresh MemoryStore inside, so the
 * gate in front of it, costly to build, is kept), and can be made to fail every call.
 */
export class RecordingStore {
  readonly writes: Write[] = []
  /** When set, every call fails, as an unreachable Redis would. */
  down = false
  #inner = new MemoryStore({ maxRateKeys: 1000 })

  /** Rate keys counted during the case: handing them back is all a clean case needs undone. */
  readonly #rateKeys = new Set<string>()
  #records: Seed | undefined

  constructor() {
    const self = this as unknown as Record<string, (...args: unknown[]) => unknown>
    // Usage too, so that the generated requests are counted as every request is.
    for (const name of [...STORE_METHODS, ...USAGE_STORE_METHODS]) {
      const recorded = (WRITES as readonly string[]).includes(name)
      const rate = name === 'consumeRate'
      self[name] = (...args: unknown[]) => {
        if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:6379')
        if (rate) this.#rateKeys.add(args[0] as string)
        const inner = this.#inner as unknown as Record<string, (...a: unknown[]) => unknown>
        const result = inner[name]!.apply(this.#inner, args)
        // A write that found nothing to change (false, 0, no record) changed nothing: not recorded.
        if (recorded && result !== false && result !== 0 && !(name.startsWith('update') && result === undefined)) this.writes.push({ method: name, args })
        return result
      }
    }
  }

  /**
   * Back to exactly the seed's records with no rate counted, nothing recorded: the rate
   * keys the case counted are reset, and a case that wrote a record gets a new store.
   */
  reset(records: Seed): void {
    if (this.#records === records && this.writes.length === 0) {
      for (const key of this.#rateKeys) this.#inner.resetRate(key)
      this.#rateKeys.clear()
      return
    }
    const inner = new MemoryStore({ maxRateKeys: 1000 })
    for (const r of records.applications) inner.insertApplication(r)
    for (const r of records.users) inner.insertUser(r)
    for (const r of records.apiKeys) inner.insertApiKey(r)
    for (const r of records.tokens) inner.insertAccessToken(r)
    for (const r of records.codes) inner.insertAuthorizationCode(r)
    for (const r of records.sessions) inner.insertSession(r)
    for (const [userId, appToken] of records.grants) inner.recordGrant(userId, appToken, EARLIER)
    this.#inner = inner
    this.#records = records
    this.#rateKeys.clear()
    this.writes.length = 0
  }
}

interface Seed {
  readonly applications: readonly ApplicationRecord[]
  readonly users: readonly UserRecord[]
  readonly apiKeys: readonly ApiKeyRecord[]
  readonly tokens: readonly AccessTokenRecord[]
  readonly codes: readonly AuthorizationCodeRecord[]
  readonly sessions: readonly SessionRecord[]
  /** Users' consents, as `[userId, appToken]`. */
  readonly grants: ReadonlyArray<readonly [string, string]>
}

const LATER = Date.UTC(2100, 0, 1)
const EARLIER = Date.UTC(2000, 0, 1)
const SCRYPT = { logN: 10, blockSize: 8, parallelization: 1 }

let seed: Promise<Seed> | undefined

/** The records, made once per process (the password hash is the only slow part). */
export function worldSeed(): Promise<Seed> {
  seed ??= makeSeed()
  return seed
}

async function makeSeed(): Promise<Seed> {
  const now = Date.now()
  const app = (a: { appToken: string; secret: string }, name: string, callbackPrefix: string | null, limit: number | null = null): ApplicationRecord => ({
    appToken: a.appToken,
    name,
    secretHash: sha256(a.secret),
    callbackPrefix,
    limit,
    ownerId: null,
    previousSecretHash: null,
    previousSecretExpiresAt: null,
    suspendedAt: null,
    suspensionReason: null,
    plan: null,
    createdAt: now,
    updatedAt: now,
  })
  const passwordHash = await hashPassword(KNOWN.users.ada.password, SCRYPT)
  const user = (u: { id: string; username: string }, hash: string | null): UserRecord => ({
    id: u.id,
    username: u.username,
    screenName: u.username,
    displayName: `${u.username} <display> "name"`,
    email: `${u.username}@example.org`,
    rights: ['read'],
    passwordHash: hash,
    createdAt: now,
    updatedAt: now,
  })
  const token = (value: string, userId: string, fields: Partial<AccessTokenRecord> = {}): AccessTokenRecord => ({
    tokenHash: sha256(value),
    userId,
    appToken: KNOWN.apps.oauth.appToken,
    codeHash: null,
    createdAt: now,
    expiresAt: LATER,
    revokedAt: null,
    ...fields,
  })
  const code = (value: string, fields: Partial<AuthorizationCodeRecord> = {}): AuthorizationCodeRecord => ({
    codeHash: sha256(value),
    appToken: KNOWN.apps.oauth.appToken,
    userId: KNOWN.users.ada.id,
    redirectUri: KNOWN.redirect,
    codeChallenge: null,
    createdAt: now,
    expiresAt: LATER,
    usedAt: null,
    ...fields,
  })
  const ada = KNOWN.users.ada.id
  return {
    applications: [
      app(KNOWN.apps.oauth, 'Transit <dashboard>', KNOWN.prefixes.oauth),
      app(KNOWN.apps.plain, 'Plain & simple', null),
      app(KNOWN.apps.root, 'Root "prefix"', KNOWN.prefixes.root),
      app(KNOWN.apps.limited, 'Limited', null, 1),
    ],
    users: [user(KNOWN.users.ada, passwordHash), user(KNOWN.users.sso, null)],
    apiKeys: [
      { keyId: KNOWN.apiKeys.live.keyId, userId: ada, name: 'etl', secretHash: sha256(KNOWN.apiKeys.live.secret), createdAt: now, lastUsedAt: null, revokedAt: null },
      { keyId: KNOWN.apiKeys.revoked.keyId, userId: ada, name: 'old', secretHash: sha256(KNOWN.apiKeys.revoked.secret), createdAt: now, lastUsedAt: null, revokedAt: EARLIER },
    ],
    tokens: [
      token(KNOWN.tokens.live, ada),
      token(KNOWN.tokens.expired, ada, { expiresAt: EARLIER }),
      token(KNOWN.tokens.revoked, ada, { revokedAt: EARLIER }),
      token(KNOWN.tokens.orphan, KNOWN.goneUserId),
      token(KNOWN.tokens.fromUsedCode, ada, { codeHash: sha256(KNOWN.codes.used) }),
    ],
    codes: [
      code(KNOWN.codes.live),
      code(KNOWN.codes.pkce, { codeChallenge: createHash('sha256').update(KNOWN.verifier).digest('base64url') }),
      code(KNOWN.codes.used, { usedAt: now }),
      code(KNOWN.codes.expired, { expiresAt: EARLIER }),
      code(KNOWN.codes.root, { appToken: KNOWN.apps.root.appToken, redirectUri: `${KNOWN.prefixes.root}/cb` }),
      code(KNOWN.codes.gone, { userId: KNOWN.goneUserId }),
    ],
    sessions: [
      { sessionHash: sha256(KNOWN.sessions.ada), userId: ada, passwordStamp: sha256(passwordHash), createdAt: now, expiresAt: LATER },
      { sessionHash: sha256(KNOWN.sessions.expired), userId: ada, passwordStamp: sha256(passwordHash), createdAt: EARLIER, expiresAt: EARLIER + 1 },
    ],
    // Ada approved both OAuth applications: their codes and tokens are live.
    grants: [
      [ada, KNOWN.apps.oauth.appToken],
      [ada, KNOWN.apps.root.appToken],
    ],
  }
}

/** The host's own login page in the strict world: signed-out users are sent there. */
export const LOGIN_URL = '/login'

/** The addresses the worlds trust as proxies. */
export const TRUSTED_PROXIES = ['10.0.0.0/8', '127.0.0.1']

function options(kind: WorldKind): GateOptions {
  const huge = { limit: 1_000_000_000, windowMs: 3_600_000 }
  switch (kind) {
    case 'open':
      return {
        trustProxy: TRUSTED_PROXIES,
        throttle: { application: huge, anonymous: huge, legacyHeaders: true },
        oauth: { throttle: huge },
      }
    case 'strict':
      return {
        throttle: { application: { limit: 2, windowMs: 60_000 }, anonymous: { limit: 2, windowMs: 60_000, scope: 'shared' } },
        basic: { failures: { limit: 2, windowMs: 60_000 }, challenge: true },
        oauth: { throttle: { limit: 2, windowMs: 60_000 }, clientFailures: { limit: 1, windowMs: 60_000 }, requirePkce: true, acceptBearer: false, rememberConsent: true, loginUrl: LOGIN_URL },
        legacyAppTokenParam: false,
      }
    case 'down':
      return { trustProxy: TRUSTED_PROXIES, throttle: { onStoreError: 'fail-closed' } }
  }
}


/** One gate and its store, as a case finds them. */
export interface World {
  readonly kind: WorldKind
  readonly gate: Gate
  readonly store: RecordingStore
  /** Every event the gate emitted during the case, in order, as `[name, payload]`. */
  readonly events: Array<[string, unknown]>
}

const worlds = new Map<WorldKind, World>()

/**
 * A new gate of a kind on its own recording store (building one costs milliseconds: reuse it with {@link resetWorld}).
 * @param extra options on top of the kind's (a short `bodyTimeoutMs`, say)
 */
export async function createWorld(kind: WorldKind, extra: GateOptions = {}): Promise<World> {
  const store = new RecordingStore()
  store.reset(await worldSeed())
  const o = { ...options(kind), ...extra }
  // The store's methods are made in its constructor, one per method of the contract.
  const gate = createGate({ ...o, store: store as unknown as GateStore, basic: { scrypt: SCRYPT, ...o.basic } })
  const events: Array<[string, unknown]> = []
  // Every event, whatever its name, including any added after these tests were written.
  const emit = gate.emit.bind(gate) as (name: string, ...args: unknown[]) => boolean
  ;(gate as unknown as { emit: typeof emit }).emit = (name, ...args) => {
    events.push([name, args[0]])
    return emit(name, ...args)
  }
  return { kind, gate, store, events }
}

/**
 * Puts a world's store back to the seed's records and clears its events. The gate itself
 * is kept from case to case: what it remembers (a verified password, a warning given) is
 * what a long-running gate remembers.
 */
export async function resetWorld(world: World): Promise<World> {
  const records = await worldSeed()
  world.store.down = false
  world.store.reset(records)
  world.store.down = world.kind === 'down'
  world.events.length = 0
  return world
}

/**
 * A gate of the `open` kind on a real store (PostgreSQL), seeded once with the same
 * records, with `onStoreError: 'fail-closed'` so that any call the store refuses shows as
 * a 503. The records change from case to case (a key created, a code used), so writes are
 * not checked here: `store.writes` stays empty.
 */
export async function createStoreWorld(store: GateStore): Promise<Omit<World, 'store'> & { readonly store: { readonly writes: readonly Write[] } }> {
  const records = await worldSeed()
  for (const r of records.applications) await store.insertApplication(r)
  for (const r of records.users) await store.insertUser(r)
  for (const r of records.apiKeys) await store.insertApiKey(r)
  for (const r of records.tokens) await store.insertAccessToken(r)
  for (const r of records.codes) await store.insertAuthorizationCode(r)
  for (const r of records.sessions) await store.insertSession(r)
  for (const [userId, appToken] of records.grants) await store.recordGrant(userId, appToken, EARLIER)
  const o = options('open')
  const gate = createGate({ ...o, store, throttle: { ...o.throttle, onStoreError: 'fail-closed' }, basic: { scrypt: SCRYPT } })
  const events: Array<[string, unknown]> = []
  const emit = gate.emit.bind(gate) as (name: string, ...args: unknown[]) => boolean
  ;(gate as unknown as { emit: typeof emit }).emit = (name, ...args) => {
    events.push([name, args[0]])
    return emit(name, ...args)
  }
  return { kind: 'open', gate, store: { writes: [] }, events }
}

/** The shared world of a kind, reset. */
export async function freshWorld(kind: WorldKind): Promise<World> {
  let world = worlds.get(kind)
  if (world === undefined) {
    world = await createWorld(kind)
    worlds.set(kind, world)
  }
  return resetWorld(world)
}
