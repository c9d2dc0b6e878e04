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
import { isPromiseLike } from '../util/awaitable.js'
import { StoreDataError, StoreError } from '../errors.js'
import { unstorableCharacter } from './storable.js'
import type { StoreHealth } from './store-health.js'
import type { Awaitable, GateStore } from './store.js'

type Method = { [K in keyof GateStore]-?: NonNullable<GateStore[K]> extends (...args: never[]) => unknown ? K : never }[keyof GateStore]

/** The contract's data methods (not `attach` and `close`, which the gate calls itself). */
export const STORE_METHODS = [
  'insertApplication',
  'getApplication',
  'listApplications',
  'updateApplication',
  'deleteApplication',
  'insertUser',
  'getUser',
  'getUserByUsername',
  'updateUser',
  'deleteUser',
  'insertApiKey',
  'getApiKey',
  'listApiKeys',
  'updateApiKey',
  'revokeApiKey',
  'insertAccessToken',
  'getAccessToken',
  'revokeAccessToken',
  'revokeAccessTokens',
  'listAccessTokens',
  'recordGrant',
  'getGrant',
  'listGrants',
  'deleteGrant',
  'insertAuthorizationCode',
  'getAuthorizationCode',
  'consumeAuthorizationCode',
  'insertSession',
  'getSession',
  'deleteSession',
  'trimSessions',
  'consumeRate',
  'resetRate',
] as const satisfies readonly Method[]

/** Methods a store may leave out; the gate says so when it needs one the store lacks. */
export const OPTIONAL_STORE_METHODS = ['listUsers', 'getUserBySkeleton', 'addUsage', 'getUsage', 'topUsage'] as const satisfies readonly Method[]

// Adding a method to GateStore without guarding it fails to compile here.
type Unguarded = Exclude<Method, (typeof STORE_METHODS)[number] | (typeof OPTIONAL_STORE_METHODS)[number] | 'attach' | 'close'>
const everyMethodGuarded: Unguarded extends never ? true : Unguarded = true
void everyMethodGuarded

const UNAVAILABLE = new Error('the store is down and another call is finding out whether it is back')

/**
 * `store` with a timeout and one error type on every data method it has. Every method runs
 * bound to the real store, so a store may keep its state in private fields.
 */
export function guardStore<S extends Partial<GateStore>>(store: S, timeoutMs: number, health: StoreHealth): S {
  const guarded = {} as Record<string, unknown>
  if (store.attach !== undefined) guarded.attach = store.attach.bind(store)
  if (store.close !== undefined) guarded.close = store.close.bind(store)
  for (const name of [...STORE_METHODS, ...OPTIONAL_STORE_METHODS]) {
    const method = store[name] as ((a: unknown, b: unknown, c: unknown, d: unknown) => Awaitable<unknown>) | undefined
    if (typeof method !== 'function') continue
    // Fixed arity (no contract method takes more than four arguments): no rest array per call.
    guarded[name] = (a: unknown, b: unknown, c: unknown, d: unknown) => {
      const unstorable = unstorableArgument(a) ?? unstorableArgument(b)
      if (unstorable !== undefined) throw new StoreDataError(name, `an argument ${unstorable}, which no store can hold`)
      if (!health.admit()) {
        health.refused()
        throw new StoreError(name, UNAVAILABLE)
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
        throw new StoreError(name, error)
      }
      if (isPromiseLike(result)) return withTimeout(result, timeoutMs, name, health)
      if (health.down) health.succeeded()
      return result
    }
  }
  return guarded as S
}

function withTimeout<T>(promise: PromiseLike<T>, timeoutMs: number, operation: string, health: StoreHealth): Promise<T> {
  const started = Date.now()
  return new Promise<T>((resolve, reject) => {
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      const cause = new Error(`store call timed out after ${timeoutMs} ms`)
      health.failed(operation, cause, Date.now() - started)
      reject(new StoreError(operation, cause))
    }, timeoutMs)
    promise.then(
      (value) => {
        clearTimeout(timer)
        // A late answer still shows the store is back.
        if (health.down) health.succeeded()
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        if (timedOut) return
        if (isDataError(error)) {
          // The store answered: it is up, whatever it thought of the value.
          health.succeeded()
          reject(dataError(operation, error))
          return
        }
        health.failed(operation, error, Date.now() - started)
        reject(new StoreError(operation, error))
      },
    )
  })
}

/**
 * Why an argument (a string, or a string field of a record, patch or query) cannot be
 * stored, or `undefined`. Shallow: the contract's arguments are flat but for `rights`,
 * which the users API checks itself.
 */
function unstorableArgument(value: unknown): string | undefined {
  if (typeof value === 'string') return unstorableCharacter(value)
  if (typeof value !== 'object' || value === null) return undefined
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
