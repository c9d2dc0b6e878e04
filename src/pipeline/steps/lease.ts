/**
 * Step 7a, local-first counting (`throttle.local`, src/config/local-counting.ts): the rate
 * step of an application that counts locally, answered from this process's lease of its
 * budget (../leases.ts) rather than by the store per request. In the list of steps only
 * when the option is on.
 *
 * Only the rate step is leased. The application record and its suspension were read before
 * (steps 4 and 6a); the credentials are verified after (step 8), each read from the store
 * on every request as they are without a lease: the throttle step (7) sees the rate decided
 * (`state.leased`) and reads nothing ahead, so verification reads the credential's records
 * itself. An access token that decides its own budget is read first, here, so that the
 * lease spent is its application's (and an `X-App-Token` that contradicts it is refused).
 *
 * When the store fails on a lease, the request gets the store-failure mode's verdict
 * (`Throttle.checkFailed`), without a second step.
 */
import type { RequestState } from '../request-state.js'
import type { Step } from '../run-steps.js'
import type { Throttle } from '../throttle.js'
import { passed } from './throttle.js'
import type { TokenBudgets } from './token-budget.js'
import type { Leases, LeasedRate } from '../leases.js'
import type { Awaitable } from '../../store/store.js'
import { isPromiseLike } from '../../util/awaitable.js'

export function leaseStep(throttle: Throttle, leases: Leases, tokens: TokenBudgets): Step {
  const decide = (state: RequestState): Awaitable<undefined> | undefined => {
    const application = state.application
    if (application === null) return undefined
    const plan = throttle.leased(application, state.client)
    if (plan === undefined) return undefined
    state.leased = true
    let spent: Awaitable<LeasedRate>
    try {
      spent = leases.spend(plan.key, plan.limit, plan.windowMs)
    } catch (error) {
      return passed(state, throttle.checkFailed(application, state.client, error, state))
    }
    if (!isPromiseLike(spent)) {
      state.pass = throttle.leaseVerdict(plan, state.client, spent)
      return undefined
    }
    return Promise.resolve(spent).then(
      (result) => {
        state.pass = throttle.leaseVerdict(plan, state.client, result)
        return undefined
      },
      (error: unknown) => passed(state, throttle.checkFailed(application, state.client, error, state)),
    )
  }

  return (state) => {
    const application = state.application
    if (application === null) return undefined
    if (!state.budgetFromToken) return decide(state)
    // The token decides the budget: read first (it may name another application, or none) when it would be a leased one.
    if (throttle.leased(application, state.client) === undefined) return undefined
    const read = tokens.readToken(state)
    if (!isPromiseLike(read)) return decide(state)
    return Promise.resolve(read).then(() => decide(state))
  }
}
