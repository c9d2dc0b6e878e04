/**
 * The embedded store: everything in this process. Records live in maps; rate keys live
 * in a bounded LRU (lru-cache) whose bound is an option, and each one expires when its
 * throttling state has fully drained.
 *
 * Right for one process, tests and the demo. Several instances behind a load balancer
 * each count on their own here: give them a shared store instead.
 */
import { LRUCache } from 'lru-cache'
import { gcraStep, type RateResult } from '../gcra.js'
import type { ApplicationPatch, ApplicationRecord, GateStore, StoreEventSink } from './store.js'

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * How many rate keys (applications, anonymous clients, login names) are tracked at
   * once. When full, the least recently seen key is dropped and the gate emits
   * `rateKeyEvicted`. Default 100 000 (about 10 MB).
   */
  maxRateKeys?: number
  /** The clock, in epoch milliseconds. Default `Date.now`. */
  clock?: () => number
}

/**
 * The in-memory {@link GateStore}, and the gate's default.
 * @example
 * const gate = createGate({ store: new MemoryStore({ maxRateKeys: 50_000 }) })
 */
export class MemoryStore implements GateStore {
  readonly #applications = new Map<string, ApplicationRecord>()
  readonly #rates: LRUCache<string, number>
  readonly #clock: () => number
  #sink: StoreEventSink | undefined

  constructor(options: MemoryStoreOptions = {}) {
    const maxRateKeys = options.maxRateKeys ?? 100_000
    if (!Number.isSafeInteger(maxRateKeys) || maxRateKeys < 1) {
      throw new TypeError(`open-data-gate: MemoryStore maxRateKeys must be a positive integer, got ${String(maxRateKeys)}`)
    }
    this.#clock = options.clock ?? Date.now
    this.#rates = new LRUCache<string, number>({
      max: maxRateKeys,
      dispose: (tat, key, reason) => {
        // Only a key dropped while it still held state is news; a drained one cost nothing.
        if (reason === 'evict' && tat > this.#clock() * 1000) this.#sink?.rateKeyEvicted(key)
      },
    })
  }

  attach(sink: StoreEventSink): void {
    this.#sink = sink
  }

  insertApplication(record: ApplicationRecord): void {
    if (this.#applications.has(record.appToken)) throw new Error(`an application with this app token exists`)
    this.#applications.set(record.appToken, record)
  }

  getApplication(appToken: string): ApplicationRecord | undefined {
    return this.#applications.get(appToken)
  }

  listApplications(): ApplicationRecord[] {
    return [...this.#applications.values()]
  }

  updateApplication(appToken: string, patch: ApplicationPatch): ApplicationRecord | undefined {
    const current = this.#applications.get(appToken)
    if (current === undefined) return undefined
    const next = { ...current, ...patch }
    this.#applications.set(appToken, next)
    return next
  }

  deleteApplication(appToken: string): boolean {
    return this.#applications.delete(appToken)
  }

  consumeRate(key: string, limit: number, windowMs: number, cost: number): RateResult {
    const step = gcraStep(this.#rates.get(key), this.#clock() * 1000, limit, windowMs, cost)
    if (step.tat !== undefined) this.#rates.set(key, step.tat, { ttl: step.ttlMs })
    return step
  }

  resetRate(key: string): void {
    this.#rates.delete(key)
  }
}
