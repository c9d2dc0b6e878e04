/**
 * Values that may or may not be promises. A store that answers synchronously (the
 * in-memory one) lets a request through the gate without a single promise or microtask:
 * on node:http that is a measurable share of the whole request.
 */
/** A value, or a promise of it: what a store method may answer. */
export type Awaitable<T> = T | Promise<T>

export function isPromiseLike<T>(value: Awaitable<T> | PromiseLike<T>): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
}

/** `fn(value)`, now if `value` is here, later if it is a promise. */
export function andThen<T, U>(value: Awaitable<T>, fn: (value: T) => Awaitable<U>): Awaitable<U> {
  return isPromiseLike(value) ? Promise.resolve(value).then(fn) : fn(value)
}
