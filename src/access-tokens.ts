/**
 * OAuth access tokens: `gate.tokens`. A token is 256 random bits, handed out once and
 * stored as its SHA-256, so a leaked store yields no usable token.
 *
 * @see spec "OAuth 2.0" 5-7
 */
import { randomToken, sha256 } from './secrets.js'
import type { AccessTokenRecord, GateStore } from './store/store.js'

/** What {@link AccessTokens.issue} takes. */
export interface IssueAccessToken {
  userId: string
  /** The application the token acts for (its `client_id`). */
  appToken: string
  /** Lifetime; defaults to the gate's `oauth.accessTokenTtlMs`. */
  ttlMs?: number
  /** The hash of the authorization code it comes from, so that a replayed code can revoke it. */
  codeHash?: string | null
}

/** A token just issued: the only time it is visible. */
export interface IssuedAccessToken {
  readonly accessToken: string
  /** Seconds until it expires, as the token response's `expires_in`. */
  readonly expiresIn: number
  readonly record: AccessTokenRecord
}

/** `gate.tokens`: issue and revoke access tokens. */
export class AccessTokens {
  readonly #store: GateStore
  readonly #defaultTtlMs: number

  constructor(store: GateStore, defaultTtlMs: number) {
    this.#store = store
    this.#defaultTtlMs = defaultTtlMs
  }

  /**
   * Issues a token for a user and an application. The OAuth token endpoint uses this;
   * a host can too, for its own first-party tools. A token issued without a code records
   * (or refreshes) the user's grant to the application, so it shows in connected apps; one
   * issued from a code was granted on the consent page.
   */
  async issue(input: IssueAccessToken): Promise<IssuedAccessToken> {
    const accessToken = randomToken(32)
    const ttlMs = input.ttlMs ?? this.#defaultTtlMs
    const now = Date.now()
    if ((input.codeHash ?? null) === null) await this.#store.recordGrant(input.userId, input.appToken, now)
    const record: AccessTokenRecord = {
      tokenHash: sha256(accessToken),
      userId: input.userId,
      appToken: input.appToken,
      codeHash: input.codeHash ?? null,
      createdAt: now,
      expiresAt: now + ttlMs,
      revokedAt: null,
    }
    await this.#store.insertAccessToken(record)
    return { accessToken, expiresIn: Math.floor(ttlMs / 1000), record }
  }

  /** Revokes one token, everywhere at once. @returns `false` when it was unknown or already revoked */
  async revoke(accessToken: string): Promise<boolean> {
    return this.#store.revokeAccessToken(sha256(accessToken), Date.now())
  }

  /** Revokes every token of a user. @returns how many */
  async revokeAllForUser(userId: string): Promise<number> {
    return this.#store.revokeAccessTokens({ userId }, Date.now())
  }

  /** Revokes every token issued to an application. @returns how many */
  async revokeAllForApplication(appToken: string): Promise<number> {
    return this.#store.revokeAccessTokens({ appToken }, Date.now())
  }
}
