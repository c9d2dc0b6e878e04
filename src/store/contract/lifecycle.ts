/**
 * What every slice of the storage contract shares: the `Awaitable` answer, and the two
 * optional lifecycle methods through which the gate wires a store's notifications and
 * releases it.
 */

import type { Awaitable } from '../../util/awaitable.js'

export type { Awaitable }

/** Notifications a store gives the gate (wired by {@link StoreLifecycle.attach}). */
export interface StoreEventSink {
  /** A rate key was dropped to make room, before its window ran out: its client starts afresh. */
  rateKeyEvicted(key: string): void
  /**
   * An application was inserted, updated or deleted, by this instance or any other: the
   * gate drops its cached copy. A store shared by several processes calls it for changes
   * made anywhere (Redis pub/sub, PostgreSQL `LISTEN`/`NOTIFY`); a store only this process
   * sees calls it for its own changes, or not at all (the gate forgets its own writes).
   */
  applicationChanged(appToken: string): void
}

/** The optional methods any store, whole or of a few slices, may have. */
export interface StoreLifecycle {
  /** Called once by the gate with the sink for the store's notifications. */
  attach?(sink: StoreEventSink): void
  /** Releases connections and timers. */
  close?(): Awaitable<void>
}
