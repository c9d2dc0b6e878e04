/**
 * Step 9, the answer to a request that passed: the context for the host's handler with the
 * throttle's headers, or the gate's own answer after its checks (the current user). The
 * request id is added by the gate, with the decision (src/gate.ts).
 */
import { toGateUser } from '../authenticate.js'
import type { GateContext, GateOutcome } from '../context.js'
import type { RequestState } from '../request-state.js'
import type { Step } from '../run-steps.js'
import type { GateResponse } from '../../http/request.js'
import { toApplication, type Application } from '../../management/applications.js'
import type { ApplicationRecord } from '../../store/store.js'

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({})

export function answerStep(): Step {
  /** The public view of an application record, made once per record rather than per request. */
  const views = new WeakMap<ApplicationRecord, Application>()
  const publicApplication = (record: ApplicationRecord): Application => {
    let view = views.get(record)
    if (view === undefined) {
      view = Object.freeze(toApplication(record))
      views.set(record, view)
    }
    return view
  }
  return (state: RequestState): GateOutcome => {
    const authentication = state.authentication
    const token = authentication?.token ?? null
    const pass = state.pass
    const context: GateContext = {
      application: state.application === null ? null : publicApplication(state.application),
      throttle: pass === null ? null : pass.info,
      secure: state.client.secure,
      clientIp: state.client.ip,
      user: authentication === null ? null : toGateUser(authentication.user),
      auth: authentication === null ? 'none' : authentication.method,
      apiKeyId: authentication === null ? null : authentication.apiKeyId,
      accessToken: token === null ? null : { appToken: token.appToken, expiresAt: token.expiresAt },
      revokedInsecureToken: state.revokedInsecureToken,
      requestId: state.requestId ?? null,
    }
    const headers = pass === null ? NO_HEADERS : pass.headers
    const route = state.route
    if (route?.stage !== 'checked') return { type: 'next', context, headers }
    return { type: 'respond', response: withHeaders(route.endpoint.answer(state.request, context), headers) }
  }
}

/** The gate's answer, with the throttle's headers under its own. */
function withHeaders(response: GateResponse, headers: Readonly<Record<string, string>>): GateResponse {
  return { ...response, headers: { ...headers, ...response.headers } }
}
