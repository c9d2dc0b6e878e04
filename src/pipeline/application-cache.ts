/**
 * The application records a gate has looked up, kept in this process so that a request
 * with an app token costs no store read in the steady state (only its rate step).
 *
 * - A record is fresh for `applicationCacheMs`; then the next request reads it again.
 *   Concurrent misses for one token share one read.
 * - Any change to an application, made by this instance or (through the store's
 *   `applicationChanged` notification) by any other, drops the cached copy at once.
 * - An unknown token is remembered too (in a separate, bounded cache), so a flood of
 *   made-up tokens does not cost a store read each.
 * - While the store is failing, a copy up to `staleIfErrorMs` past its freshness still
 *   answers: an outage of the records store does not turn every app-token request into a 503.
 *
 * A store that answers synchronously (MemoryStore) is already local: it is read directly
 * and nothing is cached.
 */
import { LRUCache } from 'lru-cache'
import { isPromiseLike } from '../util/awaitable.js'
import type { ApplicationRecord, Awaitable, GateStore } from '../store/store.js'

interface Entry {
  readonly record: ApplicationRecord | undefined
  readonly fetchedAt: number
}

export class ApplicationCache {
  readonly #store: GateStore
  readonly #freshMs: number
  readonly #staleIfErrorMs: number
  readonly #known = new LRUCache<string, Entry>({ max: 10_000 })
  readonly #unknown = new LRUCache<string, Entry>({ max: 10_000 })
  readonly #pending = new Map<string, Promise<ApplicationRecord | undefined>>()
  /** Bumped by every change: a read that started before a change must not cache what it got. */
  #generation = 0
  /** The store answered a read synchronously: it is local, and is read directly from then on. */
  #synchronous = false

  constructor(store: GateStore, freshMs: number, staleIfErrorMs: number) {
    this.#store = store
    this.#freshMs = freshMs
    this.#staleIfErrorMs = staleIfErrorMs
  }

  get(appToken: string): Awaitable<ApplicationRecord | undefined> {
    if (this.#synchronous || this.#freshMs === 0) return this.#store.getApplication(appToken)
    const entry = this.#known.get(appToken) ?? this.#unknown.get(appToken)
    if (entry !== undefined && Date.now() - entry.fetchedAt < this.#freshMs) return entry.record
    const pending = this.#pending.get(appToken)
    if (pending !== undefined) return pending
    let result: Awaitable<ApplicationRecord | undefined>
    try {
      result = this.#store.getApplication(appToken)
    } catch (error) {
      return this.#staleOr(entry, error)
    }
    if (!isPromiseLike(result)) {
      this.#synchronous = true
      return result
    }
    const generation = this.#generation
    const read = Promise.resolve(result)
      .then(
        (record) => {
          if (generation === this.#generation) {
            const fresh = { record, fetchedAt: Date.now() }
            if (record === undefined) this.#unknown.set(appToken, fresh)
            else this.#known.set(appToken, fresh)
          }
          return record
        },
        (error: unknown) => this.#staleOr(entry, error),
      )
      .finally(() => {
        if (this.#pending.get(appToken) === read) this.#pending.delete(appToken)
      })
    this.#pending.set(appToken, read)
    return read
  }

  /** Drops what this process knows of an application. */
  forget(appToken: string): void {
    this.#generation++
    this.#known.delete(appToken)
    this.#unknown.delete(appToken)
    this.#pending.delete(appToken)
  }

  #staleOr(entry: Entry | undefined, error: unknown): ApplicationRecord | undefined {
    if (entry !== undefined && Date.now() - entry.fetchedAt < this.#freshMs + this.#staleIfErrorMs) return entry.record
    throw error
  }
}
