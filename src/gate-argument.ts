/**
 * The check every adapter makes when it is mounted (`expressGate(gate)`, `koaGate`,
 * `nodeGate` and the guards): it was given a gate. Without it a wrong argument mounts
 * quietly and then answers every request with a 500 ("Cannot read properties of undefined
 * (reading 'errorResponse')"). The adapters only translate, so the wording lives here.
 */
import type { Gate } from './gate.js'
import { GATE_OPTION_NAMES } from './config/resolve.js'

/** What an adapter calls on a gate. */
type Mountable = Pick<Gate, 'handle' | 'errorResponse' | 'guard'>

/**
 * Checks by shape, not `instanceof`: a gate from the CommonJS build mounted by an adapter
 * imported as ESM (or the other way round) is still a gate.
 * @param mount how the adapter is called, for the message: `expressGate(gate)`
 * @throws {TypeError} saying what was passed and what is wanted
 */
export function assertGate(value: unknown, mount: string): asserts value is Mountable {
  const gate = value as Partial<Record<keyof Mountable, unknown>> | null | undefined
  if (typeof gate === 'object' && gate !== null && typeof gate.handle === 'function' && typeof gate.errorResponse === 'function' && typeof gate.guard === 'function') return
  throw new TypeError(`open-data-gate: ${mount} takes the gate createGate() returns, got ${describe(value)}`)
}

function describe(value: unknown): string {
  if (value === undefined || value === null) return String(value)
  if (typeof value === 'function') return 'a function'
  if (typeof value !== 'object') return `a ${typeof value}`
  const prototype = Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null
  const className = prototype?.constructor?.name
  if (prototype !== null && prototype !== Object.prototype && typeof className === 'string' && className !== '') return `a ${className}`
  const keys = Object.keys(value)
  if (keys.length === 0) return 'an empty object'
  const shown = `${keys.slice(0, 5).join(', ')}${keys.length > 5 ? ', ...' : ''}`
  return keys.some((key) => GATE_OPTION_NAMES.includes(key))
    ? `an object with ${shown}: these are createGate options; mount the gate createGate(options) returns`
    : `an object with ${shown}`
}
