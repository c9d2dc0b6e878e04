/**
 * A suspended application's requests are refused (403 `application_suspended`, the
 * operator's reason in the message), whatever credentials they carry: its app token, Basic
 * with its app token, an OAuth token issued to it (docs/guides/applications.md "Suspending
 * an application"). Nothing is deleted; resuming lets the next request through.
 *
 * Two places in the list of steps (./decide.ts), one check each:
 * - `budgetSuspensionStep`, once the application whose budget the request counts against
 *   is known (the app token's, or an access token's own): refused before the throttle, so a
 *   suspended application's flood spends no budget and costs no store call (the
 *   application is read from the gate's cache).
 * - `tokenSuspensionStep`, after verification: the budget's application again (the throttle
 *   step may have learned it only then: a token read after its lookup failed), and an access
 *   token's own application when it did not decide the budget
 *   (`throttle.oauthTokenBudget: 'anonymous'`).
 */
import type { ApplicationCache } from '../application-cache.js'
import type { Step } from '../run-steps.js'
import { assertNotSuspended } from '../../store/store.js'
import { isPromiseLike } from '../../util/awaitable.js'

export const budgetSuspensionStep: Step = (state) => {
  if (state.application !== null) assertNotSuspended(state.application)
  return undefined
}

export function tokenSuspensionStep(applications: ApplicationCache): Step {
  return (state) => {
    if (state.application !== null) assertNotSuspended(state.application)
    const token = state.authentication?.token
    if (token === undefined || token === null || token.appToken === state.application?.appToken) return undefined
    const found = applications.get(token.appToken)
    if (!isPromiseLike(found)) {
      if (found !== undefined) assertNotSuspended(found)
      return undefined
    }
    return Promise.resolve(found).then((record) => {
      if (record !== undefined) assertNotSuspended(record)
      return undefined
    })
  }
}
