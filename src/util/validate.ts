/**
 * The checks every options object goes through, shared by the gate's own options
 * (config/resolve.ts) and the services and stores that take options of their own
 * (`MemoryStore`, `gate.applications`, `gate.users`, ...). Each failure is a `TypeError`
 * that names the option, so a misconfiguration fails at construction, loudly.
 *
 * This module imports no store and no service, so any of them can import it without a cycle.
 */
import { nearestName } from './did-you-mean.js'

/** The names of an options type, checked complete by the compiler: a new option cannot be forgotten here. */
export function optionNames<T>(names: Record<keyof T, true>): readonly string[] {
  return Object.keys(names)
}

/**
 * `value` if it is a plain options object with only `known` keys.
 * @throws {TypeError} naming the option, or the unknown key and the nearest valid one
 */
export function optionsObject<T extends object>(name: string, value: T, known: readonly string[]): T {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError(`open-data-gate: ${name} must be an object`)
  rejectUnknownKeys(name, value, known)
  return value
}

/**
 * Refuses keys an options object does not know, so a misspelt option fails loudly instead
 * of leaving a default in place (`{ anonymous: { limt: 5 } }` would otherwise run with
 * the default limit).
 * @param name where the object sits (`throttle.anonymous`), or `''` for the top level
 * @throws {TypeError} naming the unknown key and the nearest valid one
 */
export function rejectUnknownKeys(name: string, value: object, known: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue
    const path = name === '' ? key : `${name}.${key}`
    const nearest = nearestName(key, known)
    const hint = nearest === undefined ? `valid names are ${known.map((k) => `\`${k}\``).join(', ')}` : `did you mean \`${nearest}\`?`
    throw new TypeError(`open-data-gate: unknown option \`${path}\`; ${hint}`)
  }
}

/** @throws {TypeError} unless `value` is a positive safe integer. */
export function positiveInteger(name: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(`open-data-gate: ${name} must be a positive integer, got ${JSON.stringify(value)}`)
  }
}

/**
 * The grace of a rotated secret: 0 (retire the old secret now) up to `max` ms.
 * @throws {TypeError} naming the option and the bounds
 */
export function secretGrace(name: string, value: unknown, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > max) {
    throw new TypeError(`open-data-gate: ${name} must be a whole number of milliseconds from 0 (retire the old secret now) to ${max}, got ${JSON.stringify(value)}`)
  }
  return value
}

/**
 * `value`, or `fallback` when it is left out.
 * @throws {TypeError} unless it is a boolean
 */
export function booleanOption(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') throw new TypeError(`open-data-gate: ${name} must be true or false, got ${JSON.stringify(value)}`)
  return value
}

/** @throws {TypeError} unless every entry is an absolute path. */
export function paths(name: string, value: readonly string[] | undefined, fallback: readonly string[]): readonly string[] {
  if (value === undefined) return fallback
  if (!Array.isArray(value) || !value.every((p) => typeof p === 'string' && p.startsWith('/') && !p.includes('?'))) {
    throw new TypeError(`open-data-gate: ${name} must be a list of paths starting with "/"`)
  }
  return value
}

/** @throws {TypeError} unless `value` is an absolute path without a query or a trailing slash. */
export function singlePath(name: string, value: unknown): string {
  if (typeof value !== 'string' || !value.startsWith('/') || value.includes('?') || (value.length > 1 && value.endsWith('/'))) {
    throw new TypeError(`open-data-gate: ${name} must be a path starting with "/" (no query, no trailing "/"), got ${JSON.stringify(value)}`)
  }
  return value
}
