/**
 * The metrics and trace of one guarded store's calls: a wrapper around each guarded method
 * (src/store/guarded-store.ts) that times the call, counts its failure, and publishes it on
 * `open-data-gate:store`, and the store's outages as an up-down counter. With no metrics and
 * no subscriber a call costs one test more than it did.
 */
import { performance } from 'node:perf_hooks'
import type { Emit } from '../events.js'
import { storeFailureType, type StoreCall, type StoreCallObserver } from '../store/guarded-store.js'
import type { StoreRole } from '../store/store-health.js'
import type { Awaitable } from '../store/store.js'
import { isPromiseLike } from '../util/awaitable.js'
import type { StoreKind, StoreMetrics } from './metrics.js'
import { storeChannels, traced, type StoreCallMessage } from './tracing.js'

type Call = StoreCall

/** The package's stores, by their class (or a class they extend); any other store is `custom`. */
const KINDS: Readonly<Record<string, StoreKind>> = { MemoryStore: 'memory', RedisStore: 'redis', PostgresStore: 'postgres' }

/**
 * Which kind of store this is. By class name, since the core cannot import the Redis and
 * PostgreSQL stores (their drivers are optional peers) to test `instanceof`.
 */
export function storeKind(store: object): StoreKind {
  for (let proto: unknown = Object.getPrototypeOf(store); proto !== null && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    const kind = KINDS[(proto as { constructor?: { name?: string } }).constructor?.name ?? '']
    if (kind !== undefined) return kind
  }
  return 'custom'
}

export class StoreTelemetry implements StoreCallObserver {
  readonly #kind: StoreKind
  readonly #role: StoreRole
  readonly #metrics: StoreMetrics | undefined

  constructor(store: object, role: StoreRole, metrics: ((kind: StoreKind, role: StoreRole) => StoreMetrics) | undefined) {
    this.#kind = storeKind(store)
    this.#role = role
    this.#metrics = metrics?.(this.#kind, role)
  }

  /** The store's health events, told to the outage counter on their way to the gate's `emit`. */
  watchOutages(emit: Emit): Emit {
    const metrics = this.#metrics
    if (metrics === undefined) return emit
    return (event, ...args) => {
      if (event === 'storeError') metrics.outage(1)
      else if (event === 'storeRecovered') metrics.outage(-1)
      emit(event, ...args)
    }
  }

  /** `call`, timed, counted and traced when anyone listens. */
  wrap(operation: string, call: Call): Call {
    const metrics = this.#metrics
    return (a, b, c, d) => (metrics === undefined && !traced(storeChannels) ? call(a, b, c, d) : this.#observed(operation, call, a, b, c, d))
  }

  #observed(operation: string, call: Call, a: unknown, b: unknown, c: unknown, d: unknown): Awaitable<unknown> {
    const channels = traced(storeChannels) ? storeChannels : undefined
    const message: StoreCallMessage | undefined = channels === undefined ? undefined : { operation, store: this.#kind, role: this.#role }
    if (message !== undefined) channels?.start.publish(message)
    const started = performance.now()
    let result: Awaitable<unknown>
    try {
      result = call(a, b, c, d)
    } catch (error) {
      this.#settled(operation, started, error)
      if (message !== undefined) {
        message.error = error
        channels?.error.publish(message)
        channels?.end.publish(message)
      }
      throw error
    }
    if (!isPromiseLike(result)) {
      this.#settled(operation, started, undefined)
      if (message !== undefined) channels?.end.publish(message)
      return result
    }
    if (message !== undefined) channels?.end.publish(message)
    return Promise.resolve(result).then(
      (value) => {
        this.#settled(operation, started, undefined)
        if (message !== undefined) {
          channels?.asyncStart.publish(message)
          channels?.asyncEnd.publish(message)
        }
        return value
      },
      (error: unknown) => {
        this.#settled(operation, started, error)
        if (message !== undefined) {
          message.error = error
          channels?.error.publish(message)
          channels?.asyncStart.publish(message)
          channels?.asyncEnd.publish(message)
        }
        throw error
      },
    )
  }

  /** A call the store answered is timed; one that failed is counted by why. */
  #settled(operation: string, started: number, error: unknown): void {
    const metrics = this.#metrics
    if (metrics === undefined) return
    const failure = error === undefined ? undefined : storeFailureType(error)
    if (failure === undefined) metrics.answered(operation, (performance.now() - started) / 1000)
    else metrics.failed(operation, failure)
  }
}
