/**
 * The metrics of the usage flush (src/usage/usage.ts): what waits for the store after a
 * failed write, observed when the reader collects, and the batches given up, counted from
 * the `usageDropped` event on its way to the gate's `emit`. Both exist from the gate's
 * start (at 0), so that an alert needs no `absent()` for a gate that never failed.
 */
import type { Emit } from '../events.js'
import type { CounterLike, MeterLike, ObservableResultLike } from './metrics.js'

/** What the usage flush has waiting for the store: batches kept after a failed write, and their rows. */
export interface UsageBacklog {
  readonly batches: number
  readonly rows: number
}

/** Whatever knows its flush backlog: a gate's `usage`. */
export interface UsageBacklogSource {
  readonly backlog: UsageBacklog
}

/**
 * The gates whose backlog a meter reports, by meter. One pair of callbacks per meter, adding
 * up its gates, so that two gates on one provider report their sum rather than over each
 * other; on `globalThis` for the ESM and CommonJS builds loaded in one process (as the
 * decision counts, src/telemetry/metrics.ts). Weakly held: a gate that is gone is dropped.
 */
const backlogSources = ((globalThis as Record<symbol, WeakMap<MeterLike, Set<WeakRef<UsageBacklogSource>>> | undefined>)[Symbol.for('open-data-gate.usage-backlogs')] ??= new WeakMap())

function backlogSourcesOf(meter: MeterLike): Set<WeakRef<UsageBacklogSource>> {
  const known = backlogSources.get(meter)
  if (known !== undefined) return known
  const sources = new Set<WeakRef<UsageBacklogSource>>()
  backlogSources.set(meter, sources)
  const total = (field: keyof UsageBacklog) => (result: ObservableResultLike) => {
    let sum = 0
    for (const ref of sources) {
      const source = ref.deref()
      if (source === undefined) sources.delete(ref)
      else sum += source.backlog[field]
    }
    result.observe(sum)
  }
  meter
    .createObservableUpDownCounter('open_data_gate.usage.backlog.batches', {
      description: 'Usage batches waiting for the store: kept after a failed or timed-out write, sent again with the next flush.',
      unit: '{batch}',
    })
    .addCallback(total('batches'))
  meter
    .createObservableUpDownCounter('open_data_gate.usage.backlog.rows', {
      description: 'The rows (application, bucket) of the usage batches waiting for the store.',
      unit: '{row}',
    })
    .addCallback(total('rows'))
  return sources
}

export class UsageTelemetry {
  readonly #meter: MeterLike | undefined
  readonly #dropped: CounterLike | undefined
  readonly #nearLimit: CounterLike | undefined
  /** The attributes of each threshold, made once. */
  readonly #thresholds = new Map<number, Readonly<Record<string, string>>>()

  constructor(meter: MeterLike | undefined) {
    this.#meter = meter
    this.#dropped = meter?.createCounter('open_data_gate.usage.dropped', {
      description: 'Usage batches given up: past usage.maxPendingFlushes, too old to send again, or left unwritten at close().',
      unit: '{batch}',
    })
    this.#dropped?.add(0)
    this.#nearLimit = meter?.createCounter('open_data_gate.near_limit', {
      description: 'Applications reported near their limit (the nearLimit event), by the share of the limit crossed: once per threshold per window across the instances sharing the store.',
      unit: '{alert}',
    })
  }

  /** The usage events, counted on their way to the gate's `emit`: dropped batches, and near-limit alerts by threshold. */
  watchDrops(emit: Emit): Emit {
    const dropped = this.#dropped
    const nearLimit = this.#nearLimit
    if (dropped === undefined || nearLimit === undefined) return emit
    return (event, ...args) => {
      if (event === 'usageDropped') dropped.add((args[0] as { flushes: number }).flushes)
      else if (event === 'nearLimit') nearLimit.add(1, this.#attributes((args[0] as { threshold: number }).threshold))
      emit(event, ...args)
    }
  }

  #attributes(threshold: number): Readonly<Record<string, string>> {
    let attributes = this.#thresholds.get(threshold)
    if (attributes === undefined) {
      attributes = Object.freeze({ 'open_data_gate.threshold': String(threshold) })
      this.#thresholds.set(threshold, attributes)
    }
    return attributes
  }

  /** Reports `source`'s backlog whenever the reader collects, for as long as it lives. */
  observe(source: UsageBacklogSource): void {
    if (this.#meter !== undefined) backlogSourcesOf(this.#meter).add(new WeakRef(source))
  }
}
