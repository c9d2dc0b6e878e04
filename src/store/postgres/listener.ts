/**
 * Changes to applications, heard from every instance: one connection of the pool holds a
 * `LISTEN` on the schema's channel while a gate is attached, and hands each notification
 * to every attached sink. A broken or refused connection is reported and tried again,
 * backing off up to 30 s.
 */
import pg from 'pg'
import type { StoreEventSink } from '../store.js'
import type { PostgresPool, PostgresPoolClient } from './pool.js'

/** The channel the store's writes notify on, one per schema. */
export function changeChannel(schema: string): string {
  return `open_data_gate:${schema}`
}

export class ApplicationChangeListener {
  readonly #pool: PostgresPool
  readonly #channel: string
  readonly #onError: (error: unknown) => void
  readonly #sinks = new Set<StoreEventSink>()
  #listener: PostgresPoolClient | undefined
  #retry: NodeJS.Timeout | undefined
  /** While the listening connection is being set up. */
  #listening: Promise<void> | undefined
  #delayMs = 0
  #closed = false

  constructor(pool: PostgresPool, channel: string, onError: (error: unknown) => void) {
    this.#pool = pool
    this.#channel = channel
    this.#onError = onError
  }

  /** Starts listening with the first sink; every sink gets every change. */
  attach(sink: StoreEventSink): void {
    this.#sinks.add(sink)
    if (this.#sinks.size === 1) this.#listen()
  }

  #listen(): void {
    if (this.#closed || this.#listener !== undefined) return
    this.#listening = this.#pool.connect().then(
      async (client) => {
        if (this.#closed) {
          client.release()
          return
        }
        this.#listener = client
        client.on('error', (error) => this.#failed(client, error))
        client.on('notification', (message) => {
          if (message.channel !== this.#channel || message.payload === undefined) return
          for (const sink of this.#sinks) sink.applicationChanged(message.payload)
        })
        try {
          await client.query({ text: `LISTEN ${pg.escapeIdentifier(this.#channel)}` })
          this.#delayMs = 0
        } catch (error) {
          this.#failed(client, error)
        }
      },
      (error: unknown) => this.#failed(undefined, error),
    )
    void this.#listening.finally(() => {
      this.#listening = undefined
    })
  }

  /** Lets the listening connection finish subscribing first, so this instance hears its own change. */
  async beforeWrite(): Promise<void> {
    if (this.#listening !== undefined) await this.#listening
  }

  /** The listening connection broke (or never came): report it and try again, backing off up to 30 s. */
  #failed(client: PostgresPoolClient | undefined, error: unknown): void {
    if (client !== undefined) {
      if (this.#listener !== client) return
      this.#listener = undefined
      client.removeAllListeners('notification')
      client.release(error instanceof Error ? error : true)
    }
    if (this.#closed) return
    this.#onError(error)
    this.#delayMs = Math.min(30_000, Math.max(500, this.#delayMs * 2))
    this.#retry = setTimeout(() => {
      this.#retry = undefined
      this.#listen()
    }, this.#delayMs)
    this.#retry.unref()
  }

  /** Stops listening: the connection is destroyed rather than returned, since a pooled connection must not stay subscribed. */
  close(): void {
    this.#closed = true
    clearTimeout(this.#retry)
    const listener = this.#listener
    this.#listener = undefined
    if (listener !== undefined) {
      listener.removeAllListeners('notification')
      listener.release(true)
    }
  }
}
