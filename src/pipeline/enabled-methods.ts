/**
 * HTTP Basic (passwords and API keys) and OAuth access tokens can each be turned off
 * (`basic: false`, `oauth: false`). Credentials of a method that is off are refused with 401
 * `authentication_method_disabled` rather than ignored, so that a client never takes an
 * anonymous answer for an authenticated one; and over plain http nothing of a method that
 * is off is looked up for revocation, since the gate holds nothing of it (and the store
 * may not have the slice that would).
 *
 * @see docs/reference/options.md "basic", "oauth"
 */
import { PlatformError } from '../errors.js'
import { NOTHING_SENT, type Credentials, type SentInClear } from '../http/authorization-header.js'

/** The switches of a resolved configuration this module reads. */
export interface EnabledMethods {
  readonly basic: { readonly enabled: boolean }
  readonly oauth: { readonly enabled: boolean }
}

/** @throws {PlatformError} 401 `authentication_method_disabled` when the credentials' method is off */
export function assertMethodEnabled(credentials: Credentials, methods: EnabledMethods): void {
  if (credentials.kind === 'basic' && !methods.basic.enabled) {
    throw new PlatformError('authentication_method_disabled', 'HTTP Basic authentication (passwords and API keys) is not enabled on this service')
  }
  if (credentials.kind === 'token' && !methods.oauth.enabled) {
    throw new PlatformError('authentication_method_disabled', 'OAuth access tokens are not enabled on this service')
  }
}

/** What a request sent in clear that the gate may hold: access tokens with `oauth` on, API keys with `basic` on. */
export function revocableInClear(sent: SentInClear, methods: EnabledMethods): SentInClear {
  if (sent === NOTHING_SENT || (methods.basic.enabled && methods.oauth.enabled)) return sent
  const tokens = methods.oauth.enabled ? sent.tokens : []
  const apiKeys = methods.basic.enabled ? sent.apiKeys : []
  return tokens.length === 0 && apiKeys.length === 0 ? NOTHING_SENT : { tokens, apiKeys }
}
