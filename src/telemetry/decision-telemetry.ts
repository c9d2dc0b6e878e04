/**
 * The metrics and trace of the gate's decisions (`Gate.handle`). The gate asks
 * {@link DecisionTelemetry.active} first: with no meter and no subscriber it decides as it
 * always did, and this module costs that one test. Both read the request's one
 * {@link Decision} record (src/rules/decision.ts), once.
 */
import { performance } from 'node:perf_hooks'
import type { GateRequest } from '../http/request.js'
import type { Decision } from '../rules/decision.js'
import type { StoreRole } from '../store/store-health.js'
import { GateMetrics, type MeterLike, type StoreKind, type StoreMetrics } from './metrics.js'
import { handleChannels, traced, tracedRequest, type HandleMessage } from './tracing.js'

/** One decision being measured and traced: {@link DecisionTelemetry.begin}. */
export interface DecisionWatch {
  /** The decision went on asynchronously: the trace's synchronous part ends here. */
  left(): void
  /** The decision is made: recorded, and its trace ended (`late`: after {@link left}). */
  decided(decision: Decision, late: boolean): void
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

  /** Starts watching the decision on `request`: its trace's `start`, and the clock. */
  begin(request: GateRequest, requestId: string | undefined): DecisionWatch {
    const channels = traced(handleChannels) ? handleChannels : undefined
    const message: HandleMessage | undefined = channels === undefined ? undefined : { request: tracedRequest(request), requestId: requestId ?? null }
    if (message !== undefined) channels?.start.publish(message)
    const started = performance.now()
    const metrics = this.#metrics
    return {
      left: () => {
        if (message !== undefined) channels?.end.publish(message)
      },
      decided: (decision, late) => {
        const policy = decision.appToken === null ? 'anonymous' : 'application'
        metrics?.decided(decision.outcome, policy, decision.auth, (performance.now() - started) / 1000)
        if (message === undefined) return
        message.decision = { status: decision.status, outcome: decision.outcome, policy, auth: decision.auth }
        if (decision.outcome === 'error' && decision.error !== undefined) {
          message.error = decision.error
          channels?.error.publish(message)
        }
        if (!late) channels?.end.publish(message)
        else {
          channels?.asyncStart.publish(message)
          channels?.asyncEnd.publish(message)
        }
      },
    }
  }
}
