/**
 * Wraps a store so that every call either answers or fails with a {@link StoreError}:
 * a thrown error, a rejected promise and a promise still pending after the timeout all
 * become one. A store that answers synchronously (MemoryStore) pays no timer and no
 * promise.
 */
import { isPromiseLike } from '../awaitable.js'
import { StoreError } from '../errors.js'
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
  'insertAuthorizationCode',
  'getAuthorizationCode',
  'consumeAuthorizationCode',
  'insertSession',
  'getSession',
  'deleteSession',
  'consumeRate',
  'resetRate',
] as const satisfies readonly Method[]

// Adding a method to GateStore without guarding it fails to compile here.
type Unguarded = Exclude<Method, (typeof STORE_METHODS)[number] | 'attach' | 'close'>
const everyMethodGuarded: Unguarded extends never ? true : Unguarded = true
void everyMethodGuarded

/**
 * `store` with a timeout and one error type on every data method. Every method runs
 * bound to the real store, so a store may keep its state in private fields.
 */
export function guardStore(store: GateStore, timeoutMs: number): GateStore {
  const guarded = {} as GateStore
  if (store.attach !== undefined) guarded.attach = store.attach.bind(store)
  if (store.close !== undefined) guarded.close = store.close.bind(store)
  for (const name of STORE_METHODS) {
    const method = store[name] as (a: unknown, b: unknown, c: unknown, d: unknown) => Awaitable<unknown>
    if (typeof method !== 'function') continue
    // Fixed arity (no contract method takes more than four arguments): no rest array per call.
    ;(guarded as unknown as Record<string, unknown>)[name] = (a: unknown, b: unknown, c: unknown, d: unknown) => {
      let result: Awaitable<unknown>
      try {
        result = method.call(store, a, b, c, d)
      } catch (error) {
        throw new StoreError(name, error)
      }
      return isPromiseLike(result) ? withTimeout(result, timeoutMs, name) : result
    }
  }
  return guarded
}

function withTimeout<T>(promise: PromiseLike<T>, timeoutMs: number, operation: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new StoreError(operation, new Error(`store call timed out after ${timeoutMs} ms`))), timeoutMs)
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(new StoreError(operation, error))
      },
    )
  })
}
