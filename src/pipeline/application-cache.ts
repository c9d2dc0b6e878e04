/**
 * The application records a gate has looked up, kept in this process so that a request
 * with an app token costs no store read in the steady state (only its rate step).
 *
 * - A record is fresh for `applicationCacheMs`; then the next request reads it again.
 *   Concurrent misses for one token share one read.
 * - Any change to an application, made by this instance or (through the store's
 *   `applicationChanged` notification) by any other, drops the cached copy at once.
 * - A token the store does not know is never answered from memory: its request is
 *   answered by a read that left after the request came, so a token registered on any
 *   instance is served by every other from the moment `register` returned, whether or not
 *   the change message has arrived (or ever will). A made-up token costs at most one
 *   read per request: requests for it that come while a read is in flight share the next
 *   one. (Remembering it would cost nothing more exact: an instance that never heard of
 *   the registration cannot tell without asking, and a flood of made-up tokens varies
 *   them anyway.)
 * - While the store is failing, a copy up to `staleIfErrorMs` past its freshness still
 *   answers, a known token's or an unknown one's: an outage of the records store does not
 *   turn every app-token request into a 503.
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

/** A read in flight, and the read that follows it for those whose token it did not find. */
interface Read {
  readonly promise: Promise<ApplicationRecord | undefined>
  next?: Promise<ApplicationRecord | undefined>
}

export class ApplicationCache {
  readonly #store: GateStore
  readonly #freshMs: number
  readonly #staleIfErrorMs: number
  readonly #known = new LRUCache<string, Entry>({ max: 10_000 })
  /** Tokens the store did not know: kept only to answer while the store is failing. */
  readonly #unknown = new LRUCache<string, Entry>({ max: 10_000 })
  readonly #pending = new Map<string, Read>()
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
    const known = this.#known.get(appToken)
    if (known !== undefined && Date.now() - known.fetchedAt < this.#freshMs) return known.record
    const pending = this.#pending.get(appToken)
    if (pending === undefined) return this.#read(appToken)
    // That read left before this request came, perhaps before a registration of the token
    // returned elsewhere: its record may be shared, its miss may not (one next read for all).
    pending.next ??= pending.promise.then((record) => record ?? this.#read(appToken))
    return pending.next
  }

  /** Drops what this process knows of an application. */
  forget(appToken: string): void {
    this.#generation++
    this.#known.delete(appToken)
    this.#unknown.delete(appToken)
    this.#pending.delete(appToken)
  }

  /** Reads the token now, and keeps the answer; requests that come meanwhile may share it. */
  #read(appToken: string): Awaitable<ApplicationRecord | undefined> {
    const entry = this.#known.get(appToken) ?? this.#unknown.get(appToken)
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
    const promise = Promise.resolve(result)
      .then(
        (record) => {
          if (generation === this.#generation) {
            const fresh = { record, fetchedAt: Date.now() }
            if (record === undefined) this.#unknown.set(appToken, fresh)
            else {
              this.#known.set(appToken, fresh)
              this.#unknown.delete(appToken)
            }
          }
          return record
        },
        (error: unknown) => this.#staleOr(entry, error),
      )
      .finally(() => {
        if (this.#pending.get(appToken) === read) this.#pending.delete(appToken)
      })
    const read: Read = { promise }
    this.#pending.set(appToken, read)
    return promise
  }

  #staleOr(entry: Entry | undefined, error: unknown): ApplicationRecord | undefined {
    if (entry !== undefined && Date.now() - entry.fetchedAt < this.#freshMs + this.#staleIfErrorMs) return entry.record
    throw error
  }
}
