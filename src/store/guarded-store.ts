/**
 * Wraps a store so that every call either answers or fails with a {@link StoreError}:
 * a thrown error, a rejected promise and a promise still pending after the timeout all
 * become one. A store that answers synchronously (MemoryStore) pays no timer and no
 * promise. Every outcome is told to the store's {@link StoreHealth}, which also decides
 * whether a call is tried at all while the store is down.
 */
import { isPromiseLike } from '../awaitable.js'
import { StoreError } from '../errors.js'
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
export const OPTIONAL_STORE_METHODS = ['listUsers', 'getUserBySkeleton'] as const satisfies readonly Method[]

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
      if (!health.admit()) {
        health.refused()
        throw new StoreError(name, UNAVAILABLE)
      }
      let result: Awaitable<unknown>
      try {
        result = method.call(store, a, b, c, d)
      } catch (error) {
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
        health.failed(operation, error, Date.now() - started)
        reject(new StoreError(operation, error))
      },
    )
  })
}
