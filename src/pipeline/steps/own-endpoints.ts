/**
 * Step 3, the gate's own endpoints that need no application: the OAuth endpoints and the
 * pages (they authenticate clients and users themselves), and the self-service endpoints
 * (the user's own credentials, verified by ../self-service-access.ts). Every other request
 * goes on to the access checks.
 */
import type { SelfServiceAccess } from '../self-service-access.js'
import type { Step } from '../run-steps.js'
import type { GateResponse } from '../../http/request.js'
import type { GateOutcome } from '../context.js'
import { andThen } from '../../util/awaitable.js'

const respond = (response: GateResponse): GateOutcome => ({ type: 'respond', response })

export function ownEndpointStep(selfService: SelfServiceAccess): Step {
  return (state) => {
    const route = state.route
    if (route === undefined || route.stage === 'checked') return undefined
    if (route.stage === 'own') return andThen(route.endpoint.answer(state.request, state.client), respond)
    return selfService.decide(route.endpoint, state)
  }
}
