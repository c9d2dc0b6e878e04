/**
 * Wraps a store so that every call either answers or fails with a {@link StoreError}:
 * a thrown error, a rejected promise and a promise still pending after the timeout all
 * become one. A store that answers synchronously (MemoryStore) pays no timer and no
 * promise. Every outcome is told to the store's {@link StoreHealth}, which also decides
 * whether a call is tried at all while the store is down.
 *
 * Except an error about the data of the call rather than the store: a string argument no
 * store can hold (refused here, before the store sees it), or the store's own refusal of a
 * value (PostgreSQL SQLSTATE classes 22 and 23, a Redis script failing on its arguments).
 * The store answered, so that is a {@link StoreDataError} and counts as an answer: one bad
 * value must not make the store look down for everyone (a NUL in a sign-in form once did).
 */
import { performance } from 'node:perf_hooks'
import { isPromiseLike } from '../util/awaitable.js'
import { StoreDataError, StoreError } from '../errors.js'
import { missingMethod, SLICE_METHODS } from './slices.js'
import { unstorableCharacter } from '../rules/storable.js'
import type { StoreHealth } from './store-health.js'
import type { Awaitable, GateStore } from './store.js'

type Method = { [K in keyof GateStore]-?: NonNullable<GateStore[K]> extends (...args: never[]) => unknown ? K : never }[keyof GateStore]

/** The contract's data methods (not `attach` and `close`, which the gate calls itself), slice by slice. */
export const STORE_METHODS = [
  ...SLICE_METHODS.applications,
  ...SLICE_METHODS.users,
  ...SLICE_METHODS.apiKeys,
  ...SLICE_METHODS.oauth,
  ...SLICE_METHODS.rates,
] as const satisfies readonly Method[]

/** Methods a store may leave out; the gate says so when it needs one the store lacks. */
export const OPTIONAL_STORE_METHODS = ['listUsers', 'getUserBySkeleton', 'addUsage', 'getUsage', 'topUsage', 'lookupRequest', 'consumeLimits'] as const satisfies readonly Method[]

// Adding a method to GateStore without guarding it fails to compile here.
type Unguarded = Exclude<Method, (typeof STORE_METHODS)[number] | (typeof OPTIONAL_STORE_METHODS)[number] | 'attach' | 'close'>
const everyMethodGuarded: Unguarded extends never ? true : Unguarded = true
void everyMethodGuarded

const UNAVAILABLE = new Error('the store is down and another call is finding out whether it is back')
const TIMED_OUT = 'store call timed out'

/** Why a guarded call failed, as the store's metrics name it. */
export type StoreErrorType = 'timeout' | 'unavailable' | 'failure'

/** One call of a store method, as the guard makes it (no contract method takes more than four arguments). */
export type StoreCall = (a: unknown, b: unknown, c: unknown, d: unknown) => Awaitable<unknown>

/**
 * What watches the guarded calls (the store's timings and traces, src/telemetry): it wraps
 * each method's call once, when the store is guarded, so a gate without one runs the call as it was.
 */
export interface StoreCallObserver {
  wrap(operation: string, call: StoreCall): StoreCall
}

/** Why a guarded call failed, for the store's metrics; `undefined` for a call the store answered (a {@link StoreDataError} too). */
export function storeFailureType(error: unknown): StoreErrorType | undefined {
  if (!(error instanceof StoreError)) return error instanceof StoreDataError ? undefined : 'failure'
  if (error.cause === UNAVAILABLE) return 'unavailable'
  return error.cause instanceof Error && error.cause.message.startsWith(TIMED_OUT) ? 'timeout' : 'failure'
}

/**
 * `store` with a timeout and one error type on every data method it has. Every method runs
 * bound to the real store, so a store may keep its state in private fields. A required
 * method of a slice the store lacks (a store of a few slices) becomes one that throws a
 * `TypeError` saying so: `createGate` made sure no feature that is on needs it.
 */
export function guardStore<S extends Partial<GateStore>>(store: S, timeoutMs: number, health: StoreHealth, telemetry?: StoreCallObserver): S {
  const guarded = {} as Record<string, unknown>
  const timeouts = new CallTimeouts(timeoutMs, health)
  if (store.attach !== undefined) guarded.attach = store.attach.bind(store)
  if (store.close !== undefined) guarded.close = store.close.bind(store)
  for (const name of [...STORE_METHODS, ...OPTIONAL_STORE_METHODS]) {
    const method = store[name] as ((a: unknown, b: unknown, c: unknown, d: unknown) => Awaitable<unknown>) | undefined
    if (typeof method !== 'function') {
      if ((STORE_METHODS as readonly string[]).includes(name)) guarded[name] = missingMethod(name)
      continue
    }
    // Fixed arity (no contract method takes more than four arguments): no rest array per call.
    const call: StoreCall = (a, b, c, d) => {
      const unstorable = unstorableArgument(a) ?? unstorableArgument(b)
      if (unstorable !== undefined) throw new StoreDataError(name, `an argument ${unstorable}, which no store can hold`)
      if (!health.admit()) {
        health.refused()
        throw new StoreError(name, UNAVAILABLE, timeoutMs)
      }
      let result: Awaitable<unknown>
      try {
        result = method.call(store, a, b, c, d)
      } catch (error) {
        if (isDataError(error)) {
          health.succeeded()
          throw dataError(name, error)
        }
        health.failed(name, error)
        throw new StoreError(name, error, timeoutMs)
      }
      if (isPromiseLike(result)) return timeouts.watch(result, name)
      if (health.down) health.succeeded()
      return result
    }
    // Timed and traced (src/telemetry) by a wrapper of its own, so a gate without telemetry runs the call as it was.
    guarded[name] = telemetry === undefined ? call : telemetry.wrap(name, call)
  }
  return guarded as S
}

/** A store call in flight, in its guard's queue of deadlines. */
interface Call {
  readonly operation: string
  /** performance.now() when it was made. */
  readonly started: number
  /** When it times out, on the guard's loop clock ({@link CallTimeouts}). */
  readonly deadline: number
  readonly reject: (error: unknown) => void
  settled: boolean
  next: Call | undefined
}

/**
 * The timeouts of one guard's calls, on one timer: every call waits the same `timeoutMs`,
 * so the calls in flight are already in deadline order, and a queue with a single timer
 * armed for its oldest call replaces a timer per call.
 *
 * A timeout is decided only after the event loop has had its turn. When the timer fires
 * late, the loop was blocked (a long synchronous task in the host, a starved CPU): a reply
 * that arrived meanwhile is still unread, or the command was not even sent (ioredis sends
 * pipelined commands from a `setImmediate`). So the time the timer is late by does not
 * count, and the calls get as much again (at most `timeoutMs`) to be heard once the loop
 * is free: the guard's loop clock is set back by both. And the calls still due are failed
 * from a `setImmediate`, after the poll phase has read every reply already there. A call
 * never waits longer than three times `timeoutMs` (plus the loop's own delays), and a
 * store that answers nothing is still declared down.
 */
class CallTimeouts {
  readonly #timeoutMs: number
  readonly #health: StoreHealth
  /** Late by more than this, the timer saw a blocked loop rather than timer jitter. */
  readonly #stallMs: number
  #head: Call | undefined
  #tail: Call | undefined
  #timer: ReturnType<typeof setTimeout> | undefined
  /** The timer fired and its decision waits for the loop's turn. */
  #expiring = false
  /** performance.now() at which the armed timer was due. */
  #due = 0
  /** How far the loop clock is behind performance.now(): the blocked time found, and the grace given for it. */
  #stalled = 0

  constructor(timeoutMs: number, health: StoreHealth) {
    this.#timeoutMs = timeoutMs
    this.#health = health
    this.#stallMs = Math.max(10, timeoutMs / 10)
  }

  watch<T>(promise: PromiseLike<T>, operation: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const started = performance.now()
      const call: Call = { operation, started, deadline: started - this.#stalled + this.#timeoutMs, reject, settled: false, next: undefined }
      if (this.#tail === undefined) this.#head = call
      else this.#tail.next = call
      this.#tail = call
      if (this.#timer === undefined && !this.#expiring) this.#arm(this.#timeoutMs)
      promise.then(
        (value) => {
          // A late answer still shows the store is back.
          if (call.settled) {
            if (this.#health.down) this.#health.succeeded()
            return
          }
          this.#settle(call)
          if (this.#health.down) this.#health.succeeded()
          resolve(value)
        },
        (error: unknown) => {
          if (call.settled) return
          this.#settle(call)
          if (isDataError(error)) {
            // The store answered: it is up, whatever it thought of the value.
            this.#health.succeeded()
            reject(dataError(operation, error))
            return
          }
          this.#health.failed(operation, error, performance.now() - started)
          reject(new StoreError(operation, error, this.#timeoutMs))
        },
      )
    })
  }

  #settle(call: Call): void {
    call.settled = true
    // Calls mostly finish in order: drop the finished ones at the front at once, so the
    // queue holds about the calls in flight, and the timer stops when there are none.
    while (this.#head?.settled === true) this.#head = this.#head.next
    if (this.#head === undefined) {
      this.#tail = undefined
      if (this.#timer !== undefined) {
        clearTimeout(this.#timer)
        this.#timer = undefined
      }
    }
  }

  #arm(delayMs: number): void {
    this.#due = performance.now() + delayMs
    this.#timer = setTimeout(this.#fire, delayMs)
  }

  readonly #fire = (): void => {
    this.#timer = undefined
    this.#expiring = true
    const late = performance.now() - this.#due
    if (late > this.#stallMs) this.#stalled += late + Math.min(late, this.#timeoutMs)
    // Decide after the poll phase: a reply that came in while the loop was blocked is read first.
    setImmediate(this.#expire)
  }

  readonly #expire = (): void => {
    this.#expiring = false
    const now = performance.now()
    const loopNow = now - this.#stalled
    for (let call = this.#head; call !== undefined; call = this.#head) {
      if (call.settled) {
        this.#head = call.next
        continue
      }
      // Calls are in the order they were made, so in the order of both bounds.
      const wait = Math.min(call.deadline - loopNow, call.started + 3 * this.#timeoutMs - now)
      if (wait > 0) {
        this.#arm(Math.ceil(wait))
        return
      }
      this.#head = call.next
      call.settled = true
      const cause = new Error(`${TIMED_OUT} after ${this.#timeoutMs} ms`)
      this.#health.failed(call.operation, cause, now - call.started)
      call.reject(new StoreError(call.operation, cause, this.#timeoutMs))
    }
    this.#tail = undefined
  }
}

/**
 * Why an argument (a string, or a string field of a record, patch or query, or of each step
 * of a list of steps) cannot be stored, or `undefined`. Shallow: the contract's arguments
 * are flat but for `rights`, which the users API checks itself.
 */
function unstorableArgument(value: unknown): string | undefined {
  if (typeof value === 'string') return unstorableCharacter(value)
  if (typeof value !== 'object' || value === null) return undefined
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) {
      const problem = typeof item === 'object' ? unstorableArgument(item) : undefined
      if (problem !== undefined) return problem
    }
    return undefined
  }
  for (const field in value) {
    const v = (value as Record<string, unknown>)[field]
    const problem = typeof v === 'string' ? unstorableCharacter(v) : undefined
    if (problem !== undefined) return `(${field}) ${problem}`
  }
  return undefined
}

/**
 * Whether a store's error is about the data of the call, not about the store: SQLSTATE
 * class 22 (data exception: an invalid character, a value out of range) or 23 (integrity
 * constraint violation), from `code` (node-postgres) or `sqlState` (mysql2, MariaDB); or a
 * Redis script that failed on its arguments (`ERR user_script:1: ...` in Redis 7,
 * `... @user_script:1: ...` before). Anything else (a refused connection, a timeout,
 * `LOADING`, `READONLY`, `OOM`, a closed pool) is the store failing.
 */
export function isDataError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { code, sqlState, name, message } = error as { code?: unknown; sqlState?: unknown; name?: unknown; message?: unknown }
  const state = typeof sqlState === 'string' ? sqlState : typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
  if (state !== undefined && (state.startsWith('22') || state.startsWith('23'))) return true
  return name === 'ReplyError' && typeof message === 'string' && /user_script:\d/.test(message)
}

function dataError(operation: string, error: unknown): StoreDataError {
  const detail = typeof error === 'object' && error !== null && 'message' in error ? String((error as { message: unknown }).message) : String(error)
  return new StoreDataError(operation, `the store refused the data of the call: ${detail}`, error)
}
