/**
 * Records as the gate writes them, with fresh random identifiers: every check makes its
 * own, so checks never see each other's data, and a run is safe on a server other runs
 * (or other applications) share.
 */
import { randomBytes } from 'node:crypto'
import { randomId, randomToken, sha256 } from '../secrets/tokens.js'
import type { AccessTokenRecord, ApiKeyRecord, ApplicationRecord, AuthorizationCodeRecord, SessionRecord, UserRecord } from '../store/store.js'

/** A fixed instant for records whose times do not matter. */
export const T0 = 1_700_000_000_000
/** Later times, for patches and revocations. */
export const LATER = 1_800_000_000_000
export const LATEST = 1_900_000_000_000
/** How long the short-lived records of the expiry checks live. */
export const SHORT_TTL_MS = 250

/** A fresh app token, shaped as the gate makes them. */
export const freshAppToken = (): string => randomToken(18)
/** A fresh user id, `abcd-1234` style. */
export const freshUserId = (): string => `${randomId(4)}-${randomId(4)}`
/** A fresh API key id. */
export const freshKeyId = (): string => randomId(25)
/** A fresh SHA-256 (hex), as token, code and session hashes are. */
export const freshHash = (): string => sha256(randomBytes(16).toString('hex'))
/** A fresh rate key, named so an operator can tell where it came from. */
export const freshRateKey = (): string => `odg-kit:${randomToken(12)}`

/** An application record; `overrides` replace its fields. */
export function application(appToken: string, overrides: Partial<ApplicationRecord> = {}): ApplicationRecord {
  return {
    appToken,
    name: `App ${appToken}`,
    secretHash: 'a'.repeat(64),
    callbackPrefix: 'https://app.example/cb/',
    limit: null,
    ownerId: null,
    previousSecretHash: null,
    previousSecretExpiresAt: null,
    suspendedAt: null,
    suspensionReason: null,
    plan: null,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  }
}

/** A user record with a (fake) scrypt hash; `overrides` replace its fields. */
export function user(id: string, overrides: Partial<UserRecord> = {}): UserRecord {
  return {
    id,
    username: `user-${id}`,
    usernameSkeleton: `user-${id}`,
    screenName: 'Ada',
    displayName: 'Ada Lovelace',
    email: 'ada@example.org',
    rights: ['read_private'],
    passwordHash: '$scrypt$ln=14,r=8,p=1$c2FsdA==$aGFzaA==',
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  }
}

/** An API key record, unused and not revoked; `overrides` replace its fields. */
export function apiKey(keyId: string, userId: string, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return { keyId, userId, name: 'etl job', secretHash: 'b'.repeat(64), createdAt: T0, lastUsedAt: null, revokedAt: null, ...overrides }
}

/** An access token of a fresh user and application, live for an hour; `overrides` replace its fields. */
export function accessToken(tokenHash: string, overrides: Partial<AccessTokenRecord> = {}): AccessTokenRecord {
  const now = Date.now()
  return {
    tokenHash,
    userId: freshUserId(),
    appToken: freshAppToken(),
    codeHash: null,
    createdAt: now,
    expiresAt: now + 3_600_000,
    revokedAt: null,
    ...overrides,
  }
}

/** An unused authorization code of a fresh user and application, live for a minute; `overrides` replace its fields. */
export function code(codeHash: string, overrides: Partial<AuthorizationCodeRecord> = {}): AuthorizationCodeRecord {
  const now = Date.now()
  return {
    codeHash,
    appToken: freshAppToken(),
    userId: freshUserId(),
    redirectUri: 'https://app.example/cb/?x=1',
    codeChallenge: null,
    createdAt: now,
    expiresAt: now + 60_000,
    usedAt: null,
    ...overrides,
  }
}

/** A login session of a fresh user, live for a minute; `overrides` replace its fields. */
export function session(sessionHash: string, overrides: Partial<SessionRecord> = {}): SessionRecord {
  const now = Date.now()
  return { sessionHash, userId: freshUserId(), passwordStamp: 'c'.repeat(64), createdAt: now, expiresAt: now + 60_000, ...overrides }
}
