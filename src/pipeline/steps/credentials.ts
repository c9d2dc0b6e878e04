/**
 * Step 5, credentials checked for transport and form, before the throttle: cheap, and a
 * request they refuse spends no budget. Basic over plain http is refused (its secret was
 * revoked by step 2 when it was an API key's; a password cannot be: the user changes it);
 * an access token over plain http was revoked by step 2, and the request goes on without it.
 */
import type { EnabledMethods } from '../enabled-methods.js'
import { assertMethodEnabled } from '../enabled-methods.js'
import type { Step } from '../run-steps.js'
import { readCredentials } from '../../http/authorization-header.js'
import { PlatformError } from '../../errors.js'

/** The options this step reads. */
export type CredentialsStepConfig = EnabledMethods & {
  readonly basic: { readonly requireAppToken: boolean }
  readonly oauth: { readonly acceptBearer: boolean }
}

export function credentialsStep(config: CredentialsStepConfig): Step {
  return (state) => {
    const credentials = readCredentials(state.request, config.oauth.acceptBearer)
    if (credentials === undefined) return undefined
    assertMethodEnabled(credentials, config)
    if (!state.client.secure) {
      if (credentials.kind === 'basic') throw new PlatformError('https_required', 'Authenticated requests must use https: credentials sent over an insecure connection are denied')
      state.revokedInsecureToken = true
      return undefined
    }
    if (credentials.kind === 'basic' && state.application === null && config.basic.requireAppToken) {
      throw new PlatformError('app_token_required', 'Requests authenticated with HTTP Basic must include an application token in the X-App-Token header')
    }
    state.credentials = credentials
    return undefined
  }
}
