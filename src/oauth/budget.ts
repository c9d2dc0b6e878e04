/**
 * The OAuth budget (`oauth.throttle`): the posts to the sign-in, consent and connected-apps
 * forms, and to the token and revocation endpoints, counted under `oauth:<address>`, or
 * `oauth-client:<app token>` once a client has authenticated (a busy backend must not be
 * throttled by its neighbours on a shared address).
 */
import { retryAfterSeconds, ThrottledError } from '../errors.js'
import type { Emit } from '../events.js'
import type { ResolvedConfig } from '../config/options.js'
import type { ClientInfo } from '../http/proxy.js'
import { oauthAddressRateKey, oauthClientRateKey } from '../limits/rate-keys.js'
import type { Throttle } from '../pipeline/throttle.js'

/** What the OAuth budget is made of. */
export interface OAuthBudgetParts {
  /** `oauth.throttle`: the budget; `null` when off. */
  readonly policy: ResolvedConfig['oauth']['throttle']
  /** Counts the posts on the rate store. */
  readonly throttle: Throttle
  /** Tells `throttled` (policy `oauth`). */
  readonly emit: Emit
}

/** Counts posts against the OAuth budget of an address or of an authenticated client. */
export class OAuthBudget {
  readonly #policy: ResolvedConfig['oauth']['throttle']
  readonly #throttle: Throttle
  readonly #emit: Emit

  constructor(parts: OAuthBudgetParts) {
    this.#policy = parts.policy
    this.#throttle = parts.throttle
    this.#emit = parts.emit
  }

  /** Whether the client's address is known to be over its budget (no store call). */
  isAddressBlocked(client: ClientInfo): boolean {
    return this.#throttle.isBlocked(oauthAddressRateKey(client.ip))
  }

  /**
   * One post against the budget of the client that authenticated, or of the address when none did.
   * @throws {ThrottledError} when it is spent
   */
  spend(appToken: string | undefined, client: ClientInfo): Promise<void> {
    return appToken === undefined ? this.#spend(oauthAddressRateKey(client.ip), client, undefined) : this.#spend(oauthClientRateKey(appToken), client, appToken)
  }

  async #spend(key: string, client: ClientInfo, appToken: string | undefined): Promise<void> {
    const policy = this.#policy
    if (policy === null) return
    const result = await this.#throttle.consume(key, policy.limit, policy.windowMs, 1)
    if (result === null || result.allowed) return
    const retryAfter = retryAfterSeconds(result.retryAfterMs)
    this.#emit('throttled', { policy: 'oauth', appToken, ip: client.ip, requestId: client.requestId, retryAfterMs: result.retryAfterMs })
    throw new ThrottledError(`Too many requests to the sign-in and token endpoints; retry in ${retryAfter} seconds`, result.retryAfterMs)
  }
}
