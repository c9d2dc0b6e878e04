/**
 * Step 1, the client: its address and whether its connection is https (from the socket,
 * or a trusted proxy), and the endpoint its path names. A request whose safety the gate
 * cannot judge (a proxy nobody trusted vouching for https) is refused here, in the shape of
 * the endpoint it was for.
 */
import type { Clients } from '../client.js'
import type { RouteTable } from '../routes.js'
import type { Step } from '../run-steps.js'
import { pathOf } from '../../http/request.js'

export function clientStep(clients: Clients, routes: RouteTable): Step {
  return (state) => {
    const request = state.request
    const client = clients.resolve(request, state.requestId)
    state.client = client
    const route = routes.find(pathOf(request.url))
    state.route = route
    const refusal = clients.untrustedProxyRefusal(request, client, route)
    if (refusal === undefined) return undefined
    if (route?.stage === 'own') return { type: 'respond', response: route.endpoint.failure(refusal, request, client) }
    throw refusal
  }
}
