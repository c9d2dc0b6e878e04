/**
 * The metrics and trace of the gate's decisions (`Gate.handle`). The gate asks
 * {@link DecisionTelemetry.active} first: with no meter and no subscriber it decides as it
 * always did, and this module costs that one test.
 */
import { performance } from 'node:perf_hooks'
import type { GateRequest } from '../http/request.js'
import type { AuthMethod } from '../rules/auth-methods.js'
import type { GateOutcome } from '../pipeline/context.js'
import type { StoreRole } from '../store/store-health.js'
import type { Awaitable } from '../store/store.js'
import { isPromiseLike } from '../util/awaitable.js'
import { GateMetrics, type DecisionOutcome, type DecisionPolicy, type MeterLike, type StoreKind, type StoreMetrics } from './metrics.js'
import { handleChannels, traced, tracedRequest, type HandleMessage } from './tracing.js'

/**
 * What the pipeline learned about a request, for its metrics and trace. The pipeline
 * (src/pipeline/decide.ts) points `state` at its own state of the request once it has one
 * (the OAuth endpoints do not: they count as anonymous, unauthenticated).
 */
export interface DecisionFacts {
  state: { readonly application: object | null; readonly auth: AuthMethod } | undefined
}

/** The gate's decision, run by `Gate.handle`: the pipeline's, with failures turned into answers. */
export interface Decider {
  decide(request: GateRequest, requestId: string | undefined, facts: DecisionFacts | undefined): Awaitable<GateOutcome>
  refuse(error: unknown, request: GateRequest, requestId: string | undefined): GateOutcome
}

export class DecisionTelemetry {
  readonly #metrics: GateMetrics | undefined

  constructor(meter: MeterLike | undefined) {
    this.#metrics = meter === undefined ? undefined : new GateMetrics(meter)
  }

  /** Whether a decision is to be measured or traced. */
  get active(): boolean {
    return this.#metrics !== undefined || traced(handleChannels)
  }

  /** For a store's telemetry: its instruments, or `undefined` without metrics. */
  get storeMetrics(): ((kind: StoreKind, role: StoreRole) => StoreMetrics) | undefined {
    const metrics = this.#metrics
    return metrics === undefined ? undefined : (kind, role) => metrics.forStore(kind, role)
  }

  /** `decider`'s outcome for `request`, measured and traced. Never throws, as `Gate.handle`. */
  handle(request: GateRequest, requestId: string | undefined, decider: Decider): Awaitable<GateOutcome> {
    const channels = traced(handleChannels) ? handleChannels : undefined
    const message: HandleMessage | undefined = channels === undefined ? undefined : { request: tracedRequest(request), requestId: requestId ?? null }
    if (message !== undefined) channels?.start.publish(message)
    const started = performance.now()
    const facts: DecisionFacts = { state: undefined }
    let outcome: Awaitable<GateOutcome>
    try {
      outcome = decider.decide(request, requestId, facts)
    } catch (error) {
      const refusal = decider.refuse(error, request, requestId)
      this.#decided(message, refusal, facts, started, error)
      if (message !== undefined) channels?.end.publish(message)
      return refusal
    }
    if (!isPromiseLike(outcome)) {
      this.#decided(message, outcome, facts, started, undefined)
      if (message !== undefined) channels?.end.publish(message)
      return outcome
    }
    if (message !== undefined) channels?.end.publish(message)
    return Promise.resolve(outcome).then(
      (settled) => {
        this.#decided(message, settled, facts, started, undefined)
        if (message !== undefined) {
          channels?.asyncStart.publish(message)
          channels?.asyncEnd.publish(message)
        }
        return settled
      },
      (error: unknown) => {
        const refusal = decider.refuse(error, request, requestId)
        this.#decided(message, refusal, facts, started, error)
        if (message !== undefined) {
          channels?.asyncStart.publish(message)
          channels?.asyncEnd.publish(message)
        }
        return refusal
      },
    )
  }

  /** Records the decision, and on the message publishes `error` for a failure answered with a 5xx. */
  #decided(message: HandleMessage | undefined, outcome: GateOutcome, facts: DecisionFacts, started: number, error: unknown): void {
    const state = facts.state
    const policy: DecisionPolicy = state === undefined || state.application === null ? 'anonymous' : 'application'
    const status = outcome.type === 'next' ? null : outcome.response.status
    const result = outcomeOf(status)
    const auth = outcome.type === 'next' ? outcome.context.auth : (state?.auth ?? 'none')
    this.#metrics?.decided(result, policy, auth, (performance.now() - started) / 1000)
    if (message === undefined) return
    message.decision = { status, outcome: result, policy, auth }
    if (result === 'error' && error !== undefined) {
      message.error = error
      handleChannels?.error.publish(message)
    }
  }
}

/**
 * `allowed` for a request let through (`null`) or answered by the gate's own endpoints
 * without an error; `throttled` for a 429; `error` for a 5xx (the store down, a failure);
 * `refused` for any other 4xx.
 */
function outcomeOf(status: number | null): DecisionOutcome {
  if (status === null) return 'allowed'
  return status === 429 ? 'throttled' : status >= 500 ? 'error' : status >= 400 ? 'refused' : 'allowed'
}
