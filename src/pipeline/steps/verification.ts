/**
 * Step 8, credentials verified, after the throttle: username and password (scrypt, or the
 * cache of verified ones), API key, or access token, with the records step 7 read. A wrong
 * one is a 401 (src/pipeline/authenticate.ts).
 */
import type { Authenticator } from '../authenticate.js'
import type { Step } from '../run-steps.js'
import { isPromiseLike } from '../../util/awaitable.js'

export function verificationStep(auth: Authenticator): Step {
  return (state) => {
    const credentials = state.credentials
    if (credentials === undefined) return undefined
    const authentication = auth.verify(credentials, state.client, state.read)
    if (!isPromiseLike(authentication)) {
      state.authentication = authentication
      return undefined
    }
    return Promise.resolve(authentication).then((settled) => {
      state.authentication = settled
      return undefined
    })
  }
}
