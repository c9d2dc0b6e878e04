/**
 * The runner of the pipeline's steps (./decide.ts lists them, in order). A step looks at the
 * request's state and either answers (a {@link GateOutcome}), goes on (`undefined`), or
 * throws a refusal; a step that has to wait on the store returns a promise of either.
 *
 * The runner keeps a request that needs no promise free of one: steps run in a plain loop
 * while they answer synchronously (the in-memory store), and a promise is waited on only
 * from the step that made it. The bench in bench/ measures this path.
 */
import type { GateOutcome } from './context.js'
import type { RequestState } from './request-state.js'
import { isPromiseLike } from '../util/awaitable.js'
import type { Awaitable } from '../store/store.js'

/** One step of the pipeline. */
export type Step = (state: RequestState) => Awaitable<GateOutcome | undefined> | undefined

/**
 * Runs `steps` on `state` from `from` until one answers.
 * @throws what a step throws; the promise rejects with what a step rejects with
 */
export function runSteps(steps: readonly Step[], state: RequestState, from = 0): Awaitable<GateOutcome> {
  for (let i = from; i < steps.length; i++) {
    const result = (steps[i] as Step)(state)
    if (result === undefined) continue
    if (!isPromiseLike(result)) return result
    const next = i + 1
    return Promise.resolve(result).then((settled) => settled ?? runSteps(steps, state, next))
  }
  throw new Error('open-data-gate: no step of the pipeline answered the request')
}
