/**
 * Step 2, what travelled in clear: a credential sent over plain http is revoked before
 * anything else can refuse the request (an unknown or deleted app token, two app tokens, a
 * malformed header, the throttle, an OAuth endpoint): docs/platform-rules.md, OAuth 2.0
 * step 7. Most requests come over https, or carry nothing to revoke, and go on at once.
 */
import type { ClearTextRevocation } from '../clear-text.js'
import type { Step } from '../run-steps.js'

export function clearTextStep(clearText: ClearTextRevocation): Step {
  return (state) => {
    const client = state.client
    if (client.secure) return undefined
    const revoking = clearText.revokeSentIn(state.request, client)
    if (revoking === undefined) return undefined
    return revoking.then(
      (revoked) => {
        if (revoked > 0) state.revokedInsecureToken = true
        return undefined
      },
      (error: unknown) => {
        // A failure before an endpoint that answers in its own shape ran is answered in that shape: a page, or RFC 6749 JSON.
        const route = state.route
        if (route?.stage === 'own') return { type: 'respond' as const, response: route.endpoint.failure(error, state.request, client) }
        throw error
      },
    )
  }
}
