/**
 * OAuth access tokens: `gate.tokens`. A token is 256 random bits, handed out once and
 * stored as its SHA-256, so a leaked store yields no usable token.
 *
 * @see docs/platform-rules.md "OAuth 2.0" 5-7
 */
import { NotFoundError } from '../errors.js'
import { optionsObject, positiveInteger } from '../util/validate.js'
import { randomToken, sha256 } from '../secrets/tokens.js'
import type { AccessTokenRecord, GateStore } from '../store/store.js'
import { noSuchUser } from './users.js'

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
   * @throws {NotFoundError} `not_found` when there is no such user or application
   * @throws {TypeError} for a bad `ttlMs` or an unknown field
   * @example
   * const { accessToken } = await gate.tokens.issue({ userId: ada.id, appToken })
   */
  async issue(input: IssueAccessToken): Promise<IssuedAccessToken> {
    optionsObject('tokens.issue() input', input, ['userId', 'appToken', 'ttlMs', 'codeHash'])
    const ttlMs = input.ttlMs ?? this.#defaultTtlMs
    positiveInteger('tokens.issue() ttlMs', ttlMs)
    const [user, application] = await Promise.all([this.#store.getUser(input.userId), this.#store.getApplication(input.appToken)])
    if (user === undefined) throw noSuchUser(String(input.userId))
    if (application === undefined) throw new NotFoundError(`No application has the app token ${JSON.stringify(String(input.appToken).slice(0, 40))}`)
    const accessToken = randomToken(32)
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

  /**
   * Revokes every token issued to an application, for example after its secret leaked
   * (deleting the application does this too).
   * @returns how many were revoked
   */
  async revokeAllForApplication(appToken: string): Promise<number> {
    return this.#store.revokeAccessTokens({ appToken }, Date.now())
  }
}
