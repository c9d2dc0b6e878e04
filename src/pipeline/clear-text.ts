/**
 * Credentials that travelled over plain http are revoked at once, in the store, so that
 * every instance refuses them from then on: whoever watched the wire has them now. This
 * runs before anything else can refuse the request (an unknown app token, a malformed
 * header, the throttle, an OAuth endpoint), whatever form they came in.
 *
 * Access tokens, and API keys with their right secret; never a password (the user changes
 * it). A wrong secret revokes nothing, or anyone could revoke anyone's key by its id.
 *
 * @see docs/platform-rules.md "OAuth 2.0" 7; docs/request-lifecycle.md step 4
 */
import { credentialsSentIn, NOTHING_SENT, type SentInClear } from '../http/authorization-header.js'
import { revocableInClear, type EnabledMethods } from './enabled-methods.js'
import type { GateRequest } from '../http/request.js'
import type { ClientInfo } from '../http/proxy.js'
import type { Emit } from '../events.js'
import { revokeApiKey } from '../management/api-keys.js'
import { API_KEY_ID } from '../rules/credential-shapes.js'
import { secretMatches, sha256 } from '../secrets/tokens.js'
import type { GateStore } from '../store/store.js'

/** What the revocation of credentials sent in clear is made of. */
export interface ClearTextRevocationParts {
  /** The guarded store. */
  readonly store: GateStore
  /** How long a revoked API key is kept (`deletedKeyRetentionMs`). */
  readonly deletedKeyRetentionMs: number
  /** Which methods are on: nothing of a method that is off is looked up (the store may not hold it). */
  readonly methods: EnabledMethods
  readonly emit: Emit
}

export class ClearTextRevocation {
  readonly #store: GateStore
  readonly #deletedKeyRetentionMs: number
  /** Which methods are on: nothing of a method that is off is looked up (the store may not hold it). */
  readonly #methods: EnabledMethods
  readonly #emit: Emit

  constructor(parts: ClearTextRevocationParts) {
    this.#store = parts.store
    this.#deletedKeyRetentionMs = parts.deletedKeyRetentionMs
    this.#methods = parts.methods
    this.#emit = parts.emit
  }

  /**
   * Revokes whatever credentials a request over an insecure connection carried: any
   * `Authorization` header, malformed or not, the query, a parsed body (see
   * `credentialsSentIn`).
   * @returns how many live access tokens this revoked, or `undefined` (no promise made)
   * when the request carried none
   */
  revokeSentIn(request: GateRequest, client: ClientInfo): Promise<number> | undefined {
    const sent = revocableInClear(credentialsSentIn(request, request.parsedBody?.()), this.#methods)
    return sent === NOTHING_SENT ? undefined : this.revokeSent(sent, client)
  }

  /**
   * Access tokens arrived over an insecure connection (at the token endpoints, too): revoke
   * them.
   * @returns how many live tokens this revoked
   */
  async revokeTokens(tokens: readonly string[], client: ClientInfo): Promise<number> {
    let revoked = 0
    for (const token of tokens) {
      const tokenHash = sha256(token)
      const record = await this.#store.getAccessToken(tokenHash)
      if (record !== undefined && (await this.#store.revokeAccessToken(tokenHash, Date.now()))) {
        revoked++
        this.#emit('tokenRevoked', { reason: 'insecure-transport', userId: record.userId, appToken: record.appToken, ip: client.ip, requestId: client.requestId })
      }
    }
    return revoked
  }

  /**
   * Each access token is revoked, and each API key whose right secret is among those seen
   * with its id. An API key secret is a SHA-256 and a constant-time compare (no scrypt, so
   * nothing for the hash queue to schedule), only ids shaped like a key are read, and the
   * candidates are bounded per request.
   * @returns how many live access tokens this revoked
   */
  async revokeSent(sent: SentInClear, client: ClientInfo): Promise<number> {
    const revoked = sent.tokens.length === 0 ? 0 : await this.revokeTokens(sent.tokens, client)
    for (const { keyId, secrets } of sent.apiKeys) await this.#revokeApiKey(keyId, secrets, client)
    return revoked
  }

  async #revokeApiKey(keyId: string, secrets: readonly string[], client: ClientInfo): Promise<void> {
    if (!API_KEY_ID.test(keyId)) return
    const record = await this.#store.getApiKey(keyId)
    if (record === undefined || record.revokedAt !== null) return
    // Every secret is compared, so the time taken does not say which one matched.
    let matches = false
    for (const secret of secrets) if (secretMatches(secret, record.secretHash)) matches = true
    if (!matches) return
    const updated = await revokeApiKey(this.#store, record.keyId, this.#deletedKeyRetentionMs)
    if (updated !== undefined) this.#emit('apiKeyRevoked', { reason: 'insecure-transport', keyId: record.keyId, userId: record.userId, ip: client.ip, requestId: client.requestId })
  }
}
