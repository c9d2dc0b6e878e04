// Type-checked with `types: []`, as a Bun or Deno user without @types/node would, and with
// skipLibCheck off: the Fetch and Hono adapters' declarations (and the core's they use)
// need nothing from Node, only the Fetch standard's Request and Response (lib "DOM").
import { createGate, type GateContext } from 'open-data-gate'
import { fetchClient, fetchGate, fetchGuard, runFetchGate, withGateHeaders, type FetchGateOutcome } from 'open-data-gate/fetch'

const gate = createGate()

/** What Bun hands its fetch handler beside the request (declared here, without bun-types). */
interface BunServer {
  requestIP(request: Request): { address: string } | null
}

export const bun: { fetch(request: Request, server: BunServer): Promise<Response> } = {
  fetch: fetchGate(gate, (request, context: GateContext) => Response.json({ app: context.application?.name ?? null, path: new URL(request.url).pathname }), {
    clientAddress: (request, server) => server.requestIP(request)?.address,
    https: false,
  }),
}

const privateData = fetchGuard(gate, { auth: 'required' })
const client = fetchClient(gate, { clientAddress: (_request: Request, info: { remoteAddr: { hostname: string } }) => info.remoteAddr.hostname, https: true })
export async function deno(request: Request, info: { remoteAddr: { hostname: string } }): Promise<Response> {
  const outcome: FetchGateOutcome = await runFetchGate(gate, request, client(request, info))
  if (outcome.type === 'respond') return outcome.response
  return withGateHeaders(privateData(outcome.context) ?? Response.json({ user: outcome.context.user?.username ?? null }), outcome.headers)
}
