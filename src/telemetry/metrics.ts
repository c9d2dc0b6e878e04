/**
 * The gate's metrics, recorded through the OpenTelemetry metrics API (docs/guides/telemetry.md
 * has the table). The gate does not depend on `@opentelemetry/api`: it records into a meter
 * it is given (`metrics.meterProvider`) or the one the API's global provider gives, and the
 * types here are the few members of the API it calls, so that an SDK's `MeterProvider` fits
 * them and a user without OpenTelemetry compiles without it.
 *
 * Names and units follow the OpenTelemetry semantic conventions: names under the library's
 * own namespace (`open_data_gate.`), durations in seconds (`s`), counts in curly-brace
 * annotations (`{request}`), attributes namespaced too, except the conventions' own
 * `error.type`. The conventions say nothing of rate limiting; ASP.NET Core's
 * `aspnetcore.rate_limiting.*` (a counter of requests by result and policy, in `{request}`)
 * is the one stable precedent, and the decision counter follows it.
 *
 * Every attribute has a handful of values: no app token, user, key or address is ever one
 * (per-application numbers are usage tracking's, docs/guides/usage.md).
 */
import manifest from '../../package.json' with { type: 'json' }
import type { AuthMethod } from '../rules/auth-methods.js'
import type { StoreErrorType } from '../store/guarded-store.js'
import { optionsObject, optionNames } from '../util/validate.js'

/** Attributes as the gate records them: a few names, each with a few string values. */
export type MetricAttributes = Readonly<Record<string, string>>

/** The options of an instrument the gate creates (a subset of the API's `MetricOptions`). */
export interface InstrumentOptions {
  readonly description?: string
  readonly unit?: string
  readonly advice?: { readonly explicitBucketBoundaries?: number[] }
}

/** A counter or up-down counter, as the OpenTelemetry API's `Counter` and `UpDownCounter`. */
export interface CounterLike {
  add(value: number, attributes?: MetricAttributes): void
}

/** A histogram, as the OpenTelemetry API's `Histogram`. */
export interface HistogramLike {
  record(value: number, attributes?: MetricAttributes): void
}

/** What an observable instrument's callback is handed, as the API's `ObservableResult`. */
export interface ObservableResultLike {
  observe(value: number, attributes?: MetricAttributes): void
}

/** An observable counter or up-down counter, as the OpenTelemetry API's `ObservableCounter` and `ObservableUpDownCounter`. */
export interface ObservableLike {
  addCallback(callback: (result: ObservableResultLike) => void): void
}

/** The members of the OpenTelemetry API's `Meter` the gate calls. */
export interface MeterLike {
  createCounter(name: string, options?: InstrumentOptions): CounterLike
  createUpDownCounter(name: string, options?: InstrumentOptions): CounterLike
  createHistogram(name: string, options?: InstrumentOptions): HistogramLike
  createObservableCounter(name: string, options?: InstrumentOptions): ObservableLike
  createObservableUpDownCounter(name: string, options?: InstrumentOptions): ObservableLike
}

/**
 * An OpenTelemetry `MeterProvider`: the SDK's (`@opentelemetry/sdk-metrics`), or
 * `metrics.getMeterProvider()` of `@opentelemetry/api`.
 */
export interface MeterProviderLike {
  getMeter(name: string, version?: string): MeterLike
}

/** The gate's `metrics` option. */
export interface MetricsOptions {
  /**
   * The provider to record into. Default: the global one of `@opentelemetry/api`, read when
   * the gate is created (start the SDK first); nothing is recorded when the API is not
   * installed or no SDK registered a provider.
   */
  meterProvider?: MeterProviderLike
}

// How a request ended, and the budget it counted against, as the decision counter tells them.
import type { DecisionOutcome, DecisionPolicy } from '../rules/decision.js'
export type { DecisionOutcome, DecisionPolicy } from '../rules/decision.js'

/** The store behind a guard: one of the package's, or the user's own. */
export type StoreKind = 'memory' | 'redis' | 'postgres' | 'custom'

/** Why a store call failed: `error.type` on the store error counter. */

/** The meter's instrumentation scope: the package, at its version. */
export const METER_NAME = 'open-data-gate'

/**
 * Bucket boundaries for the gate's decision and its store calls, in seconds: a decision
 * from memory takes microseconds, a Redis round trip a fraction of a millisecond to a few,
 * a password check tens of milliseconds, and a store call times out at a second by
 * default. The SDK's default boundaries (0 to 10 000) are made for milliseconds and
 * would put every decision in its first bucket.
 */
export const DURATION_BUCKETS = [0.000_005, 0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

const OUTCOMES: Readonly<Record<DecisionOutcome, number>> = { allowed: 0, throttled: 1, refused: 2, error: 3 }
const POLICIES: Readonly<Record<DecisionPolicy, number>> = { application: 0, anonymous: 1 }
const AUTHS: Readonly<Record<AuthMethod, number>> = { none: 0, password: 1, 'api-key': 2, oauth: 3 }

/** Every combination of the decision's attributes, made once, at the index {@link decisionIndex} gives. */
const DECISION_ATTRIBUTES: readonly MetricAttributes[] = (Object.keys(OUTCOMES) as DecisionOutcome[]).flatMap((outcome) =>
  (Object.keys(POLICIES) as DecisionPolicy[]).flatMap((policy) =>
    (Object.keys(AUTHS) as AuthMethod[]).map((auth) => Object.freeze({ 'open_data_gate.outcome': outcome, 'open_data_gate.policy': policy, 'open_data_gate.auth': auth })),
  ),
)

function decisionIndex(outcome: DecisionOutcome, policy: DecisionPolicy, auth: AuthMethod): number {
  return (OUTCOMES[outcome] * 2 + POLICIES[policy]) * 4 + AUTHS[auth]
}

/**
 * The decision counts of the gates recording into one meter, by {@link decisionIndex}.
 * Counted here and reported by an observable counter when the reader collects: adding to
 * a synchronous counter costs a request microseconds in the SDK (its attributes hashed per
 * call), an increment here nothing. One table and one callback per meter, so that two
 * gates on one provider add up rather than report over each other: kept on `globalThis`,
 * as the ESM and CommonJS builds of the package may both be loaded in one process (the
 * provider gives both the same meter, and each build's own table would be reported over
 * the other's).
 */
const decisionCounts = ((globalThis as Record<symbol, WeakMap<MeterLike, number[]> | undefined>)[Symbol.for('open-data-gate.decision-counts')] ??= new WeakMap())

function decisionCountsOf(meter: MeterLike): number[] {
  const counts = decisionCounts.get(meter)
  if (counts !== undefined) return counts
  const table: number[] = DECISION_ATTRIBUTES.map(() => 0)
  decisionCounts.set(meter, table)
  meter
    .createObservableCounter('open_data_gate.requests', {
      description: 'Requests the gate decided, by outcome, the budget they counted against, and how they authenticated.',
      unit: '{request}',
    })
    .addCallback((result) => {
      for (let i = 0; i < table.length; i++) {
        const count = table[i] as number
        if (count > 0) result.observe(count, DECISION_ATTRIBUTES[i])
      }
    })
  return table
}

/** The gate's instruments, and their attribute sets made once, so that recording allocates nothing of the gate's. */
export class GateMetrics {
  readonly #requests: number[]
  readonly #decisionDuration: HistogramLike
  readonly #storeDuration: HistogramLike
  readonly #storeErrors: CounterLike
  readonly #storeUnavailable: CounterLike

  constructor(meter: MeterLike) {
    this.#requests = decisionCountsOf(meter)
    this.#decisionDuration = meter.createHistogram('open_data_gate.decision.duration', {
      description: "The gate's decision on a request, from the adapter's call until the request goes on or the answer is ready.",
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    })
    this.#storeDuration = meter.createHistogram('open_data_gate.store.operation.duration', {
      description: 'Store calls the store answered, by operation and store.',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    })
    this.#storeErrors = meter.createCounter('open_data_gate.store.errors', {
      description: 'Store calls that failed, timed out, or were not tried because the store is down.',
      unit: '{error}',
    })
    this.#storeUnavailable = meter.createUpDownCounter('open_data_gate.store.unavailable', {
      description: 'Stores the gate sees as down: 1 from the first failed call of an outage until a call succeeds again.',
      unit: '{store}',
    })
  }

  /** One decided request, and how long the decision took. */
  decided(outcome: DecisionOutcome, policy: DecisionPolicy, auth: AuthMethod, seconds: number): void {
    const index = decisionIndex(outcome, policy, auth)
    this.#requests[index] = (this.#requests[index] ?? 0) + 1
    this.#decisionDuration.record(seconds, DECISION_ATTRIBUTES[index])
  }

  /** The instruments of one store, with its attribute sets. */
  forStore(kind: StoreKind, role: string): StoreMetrics {
    return new StoreMetrics({ duration: this.#storeDuration, errors: this.#storeErrors, unavailable: this.#storeUnavailable, kind, role })
  }
}

/** The gate's store instruments, and the store whose calls they record. */
export interface StoreMetricsParts {
  /** `open_data_gate.store.operation.duration` */
  readonly duration: HistogramLike
  /** `open_data_gate.store.errors` */
  readonly errors: CounterLike
  /** `open_data_gate.store.unavailable` */
  readonly unavailable: CounterLike
  readonly kind: StoreKind
  /** The store's role: `records`, `rates` or both. */
  readonly role: string
}

/** The store instruments for one guarded store. */
export class StoreMetrics {
  readonly #duration: HistogramLike
  readonly #errors: CounterLike
  readonly #unavailable: CounterLike
  readonly #kind: StoreKind
  readonly #storeAttributes: MetricAttributes
  /** By operation: the contract has a few dozen, each made once. */
  readonly #operations = new Map<string, MetricAttributes>()
  readonly #errorAttributes = new Map<string, MetricAttributes>()

  constructor(parts: StoreMetricsParts) {
    const { kind, role } = parts
    this.#duration = parts.duration
    this.#errors = parts.errors
    this.#unavailable = parts.unavailable
    this.#kind = kind
    this.#storeAttributes = Object.freeze({ 'open_data_gate.store.kind': kind, 'open_data_gate.store.role': role })
    // The store's series exists from the start, at 0: an alert on it needs no absent().
    this.#unavailable.add(0, this.#storeAttributes)
  }

  answered(operation: string, seconds: number): void {
    let attributes = this.#operations.get(operation)
    if (attributes === undefined) {
      attributes = Object.freeze({ 'open_data_gate.store.kind': this.#kind, 'open_data_gate.store.operation': operation })
      this.#operations.set(operation, attributes)
    }
    this.#duration.record(seconds, attributes)
  }

  failed(operation: string, type: StoreErrorType): void {
    const key = `${operation} ${type}`
    let attributes = this.#errorAttributes.get(key)
    if (attributes === undefined) {
      attributes = Object.freeze({ 'open_data_gate.store.kind': this.#kind, 'open_data_gate.store.operation': operation, 'error.type': type })
      this.#errorAttributes.set(key, attributes)
    }
    this.#errors.add(1, attributes)
  }

  /** The store went down (+1) or answered again (-1). */
  outage(delta: 1 | -1): void {
    this.#unavailable.add(delta, this.#storeAttributes)
  }
}

const METRICS_OPTION_NAMES = optionNames<MetricsOptions>({ meterProvider: true })

/**
 * The `metrics` option: a provider, `'global'` (the default), or `null` (`false`).
 * @throws {TypeError} naming the option
 */
export function resolveMetrics(input: MetricsOptions | false | undefined): MeterProviderLike | 'global' | null {
  if (input === false) return null
  if (input === undefined) return 'global'
  optionsObject('metrics', input, METRICS_OPTION_NAMES)
  const provider = input.meterProvider
  if (provider === undefined) return 'global'
  if (typeof provider !== 'object' || provider === null || typeof provider.getMeter !== 'function') {
    throw new TypeError('open-data-gate: metrics.meterProvider must be an OpenTelemetry MeterProvider (an object with getMeter())')
  }
  return provider
}

/**
 * The gate's meter: the given provider's, the global one's, or none (`metrics: false`, or
 * no OpenTelemetry SDK running).
 */
export function gateMeter(provider: MeterProviderLike | 'global' | null, global: (name: string, version: string) => MeterLike | undefined): MeterLike | undefined {
  if (provider === null) return undefined
  if (provider === 'global') return global(METER_NAME, manifest.version)
  return provider.getMeter(METER_NAME, manifest.version)
}
