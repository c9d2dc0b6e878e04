/**
 * The OAuth slice: what the authorization server keeps. Access tokens, authorization
 * codes, the sessions of the gate's own sign-in page, and grants (a user's consent to an
 * application: connected apps). Needed by the OAuth server (`oauth`) and connected apps
 * (`connectedApps`).
 */
import type { Awaitable, StoreLifecycle } from './lifecycle.js'

/** An OAuth access token. */
export interface AccessTokenRecord {
  /** SHA-256 (hex) of the token: the token itself is never stored. */
  readonly tokenHash: string
  readonly userId: string
  /** The application the token was issued to (its `client_id`). */
  readonly appToken: string
  /** SHA-256 of the authorization code it was issued from, if any: a replayed code revokes it. */
  readonly codeHash: string | null
  readonly createdAt: number
  readonly expiresAt: number
  readonly revokedAt: number | null
}

/**
 * Whether an access token is live at `now`: present, not revoked, not expired. The one
 * rule the gate, the stores and the conformance kit apply to every token they read.
 */
export function isLiveAccessToken(token: AccessTokenRecord | undefined, now: number): token is AccessTokenRecord {
  return token !== undefined && token.revokedAt === null && token.expiresAt > now
}

/** An OAuth authorization code, bound to everything the token request must match. */
export interface AuthorizationCodeRecord {
  /** SHA-256 (hex) of the code. */
  readonly codeHash: string
  /** The application it was issued to. */
  readonly appToken: string
  readonly userId: string
  /** The redirect_uri of the authorize request, exactly as sent. */
  readonly redirectUri: string
  /** The PKCE S256 challenge, or `null` when the request had none. */
  readonly codeChallenge: string | null
  readonly createdAt: number
  readonly expiresAt: number
  /** When it was exchanged; set once, by {@link OAuthStore.consumeAuthorizationCode}. */
  readonly usedAt: number | null
}

/** A browser session of the gate's own login page. */
export interface SessionRecord {
  /** SHA-256 (hex) of the session cookie's value. */
  readonly sessionHash: string
  readonly userId: string
  /** SHA-256 of the user's password hash at sign-in: a password change ends the session. */
  readonly passwordStamp: string
  readonly createdAt: number
  readonly expiresAt: number
}

/**
 * Which access tokens {@link OAuthStore.revokeAccessTokens} revokes: all of one user, of one
 * application, of one code, or one user's tokens for one application (a "connected app").
 */
export type AccessTokenFilter =
  | { readonly userId: string; readonly appToken?: undefined }
  | { readonly appToken: string; readonly userId?: undefined }
  | { readonly userId: string; readonly appToken: string }
  | { readonly codeHash: string }

/**
 * A user's consent to an application: what "connected apps" lists. Created when the user
 * approves on the consent page (or a token is issued with `gate.tokens.issue`); deleting
 * it makes the next authorize ask for consent again.
 */
export interface GrantRecord {
  readonly userId: string
  readonly appToken: string
  readonly firstAuthorizedAt: number
  /** The latest approval, token issue or (at most daily) token use. */
  readonly lastUsedAt: number
}

/** The OAuth slice of the contract: access tokens, grants, authorization codes and sign-in sessions. */
export interface OAuthStore extends StoreLifecycle {
  /** @throws when a token with the same hash exists */
  insertAccessToken(record: AccessTokenRecord): Awaitable<void>
  /** Looks a token up by its hash. Called on every OAuth-authenticated request. May drop expired tokens. */
  getAccessToken(tokenHash: string): Awaitable<AccessTokenRecord | undefined>
  /**
   * Atomically marks one token revoked at `at`.
   * @returns `true` when this call revoked it, `false` when it was unknown or already revoked
   */
  revokeAccessToken(tokenHash: string, at: number): Awaitable<boolean>
  /**
   * Atomically revokes every active token of a user, an application, a user for one
   * application, or an authorization code: when the call returns, none of them works, and
   * of concurrent calls each token is counted by exactly one.
   * @returns how many tokens this call revoked
   */
  revokeAccessTokens(filter: AccessTokenFilter, at: number): Awaitable<number>
  /** A user's live tokens (not revoked, not expired), ordered by `createdAt`, oldest first (not insertion order). */
  listAccessTokens(userId: string): Awaitable<AccessTokenRecord[]>

  /**
   * Atomically records a user's consent to an application at `at`: creates the grant with
   * `firstAuthorizedAt` and `lastUsedAt` both `at`, or, when it exists, sets
   * `lastUsedAt` to the later of the two (never moves it back).
   */
  recordGrant(userId: string, appToken: string, at: number): Awaitable<void>
  /**
   * Atomically notes a use of an existing grant: sets its `lastUsedAt` to the later of the
   * two, and does nothing when there is no grant. Never creates one: a grant deleted before
   * or while this runs (the user revoked the application) stays deleted. A read followed by
   * a write is not enough; it must be one step (one statement, script or critical section).
   */
  touchGrant(userId: string, appToken: string, at: number): Awaitable<void>
  getGrant(userId: string, appToken: string): Awaitable<GrantRecord | undefined>
  /** A user's grants, ordered by `firstAuthorizedAt`, oldest first (not the order they were recorded in). */
  listGrants(userId: string): Awaitable<GrantRecord[]>
  /** Forgets a grant; `false` when there was none. */
  deleteGrant(userId: string, appToken: string): Awaitable<boolean>

  /** @throws when a code with the same hash exists */
  insertAuthorizationCode(record: AuthorizationCodeRecord): Awaitable<void>
  /** The code with this hash, used or not (a used one is how a replay is recognised). May drop expired codes. */
  getAuthorizationCode(codeHash: string): Awaitable<AuthorizationCodeRecord | undefined>
  /**
   * Atomically marks a code used at `at`, if it is not yet: a compare-and-set. Of any
   * number of concurrent calls for one code, exactly one returns `true`.
   */
  consumeAuthorizationCode(codeHash: string, at: number): Awaitable<boolean>

  insertSession(record: SessionRecord): Awaitable<void>
  /** The session, or `undefined` once it has expired (`expiresAt` ≤ now); may drop expired sessions. */
  getSession(sessionHash: string): Awaitable<SessionRecord | undefined>
  deleteSession(sessionHash: string): Awaitable<boolean>
  /**
   * Atomically deletes all but the newest `keep` sessions of a user (newest by
   * `createdAt`, ties by `sessionHash`): the gate caps live sign-ins per user.
   * @returns how many sessions this call deleted
   */
  trimSessions(userId: string, keep: number): Awaitable<number>
}
