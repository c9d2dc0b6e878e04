/**
 * Step 4, the application token: the application the request names (docs/platform-rules.md
 * "Application tokens"), or none. A token nobody registered is a 403 with the platform's own
 * body and never gets a budget; it is counted as one number in usage.
 */
import { extractAppToken } from '../app-token.js'
import type { ApplicationCache } from '../application-cache.js'
import type { Step } from '../run-steps.js'
import type { RequestState } from '../request-state.js'
import { PlatformError } from '../../errors.js'
import type { Emit } from '../../events.js'
import { isPlausibleAppToken } from '../../rules/credential-shapes.js'
import type { ApplicationRecord } from '../../store/store.js'
import { isPromiseLike } from '../../util/awaitable.js'

const INVALID_APP_TOKEN = 'Invalid app_token specified'

export function appTokenStep(legacyAppTokenParam: boolean, applications: ApplicationCache, emit: Emit): Step {
  const refuse = (state: RequestState, token: string): never => {
    state.unknownAppToken = true
    emit('invalidAppToken', { tokenPrefix: token.slice(0, 6), ip: state.client.ip, requestId: state.requestId })
    throw new PlatformError('permission_denied', INVALID_APP_TOKEN)
  }
  const found = (state: RequestState, token: string, record: ApplicationRecord | undefined): undefined => {
    if (record === undefined) return refuse(state, token)
    state.application = record
    state.sent = record
    return undefined
  }
  return (state) => {
    const token = extractAppToken(state.request, legacyAppTokenParam)
    if (token === undefined) return undefined
    if (!isPlausibleAppToken(token)) return refuse(state, token)
    // Spelled out rather than andThen(...): no closure is made when the store answers at once.
    const record = applications.get(token)
    if (!isPromiseLike(record)) return found(state, token, record)
    return Promise.resolve(record).then((settled) => found(state, token, settled))
  }
}
