/**
 * How the command fails: each kind of failure has its exit code and a one-line message.
 *
 * - 1: refused (bad input, no such record, a rule of the gate said no)
 * - 2: usage (an unknown command or option, a missing argument, a store URL it cannot use)
 * - 3: the store did not answer
 * - 4: the store's schema is missing or older than this release (run `open-data-gate migrate`)
 */
import { GateError, StoreError } from '../errors.js'

/** Exit codes of the `open-data-gate` command. */
export const EXIT = { ok: 0, refused: 1, usage: 2, unreachable: 3, notMigrated: 4 } as const

/** The command line is wrong: exit 2, with the help hint. */
export class UsageError extends Error {
  override readonly name = 'UsageError'
}

/** The input was understood and refused, or a record does not exist: exit 1. */
export class RefusedError extends Error {
  override readonly name = 'RefusedError'
}

/** The store could not be reached: exit 3. */
export class UnreachableError extends Error {
  override readonly name = 'UnreachableError'
}

/** The store has no schema, or an older one, than this release reads: exit 4. */
export class NotMigratedError extends Error {
  override readonly name = 'NotMigratedError'
}

/**
 * PostgreSQL's answers to a query on tables that are not there: `undefined_table`
 * (relation ... does not exist) and `invalid_schema_name`.
 */
const MISSING_SCHEMA_CODES = new Set(['42P01', '3F000'])

/** Network failures a driver reports while connecting. */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', '57P03'])

/** The exit code and the one line to print for any error the command ran into. */
export function classify(error: unknown, store = 'the store'): { code: number; message: string } {
  if (error instanceof UsageError) return { code: EXIT.usage, message: `${error.message} (see open-data-gate --help)` }
  if (error instanceof RefusedError) return { code: EXIT.refused, message: error.message }
  if (error instanceof UnreachableError) return { code: EXIT.unreachable, message: error.message }
  if (error instanceof NotMigratedError) return { code: EXIT.notMigrated, message: error.message }
  if (hasCode(error, MISSING_SCHEMA_CODES)) {
    return { code: EXIT.notMigrated, message: `${store} has no open-data-gate tables (${causeOf(error)}): run open-data-gate migrate with the same store options first` }
  }
  if (error instanceof StoreError) return { code: EXIT.unreachable, message: `${store} did not answer (${error.operation}): ${causeOf(error)}` }
  if (isConnectionError(error)) return { code: EXIT.unreachable, message: `${store} did not answer: ${causeOf(error)}` }
  // The library's own validation: a TypeError naming the field, or a GateError (conflict, not_found).
  if (error instanceof TypeError || error instanceof GateError) return { code: EXIT.refused, message: error.message.replace(/^open-data-gate: /, '') }
  return { code: EXIT.refused, message: error instanceof Error ? error.message : String(error) }
}

/** Whether an error, or one it was caused by, carries one of `codes` (a driver's error code). */
function hasCode(error: unknown, codes: ReadonlySet<string>): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && codes.has(code)) return true
  }
  return false
}

/** Whether the error is a driver failing to reach its server. */
export function isConnectionError(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true
    if (e instanceof AggregateError && e.errors.some(isConnectionError)) return true
    if (/connection terminated|timeout exceeded when trying to connect|connect ETIMEDOUT|Connection is closed/i.test(e.message)) return true
  }
  return false
}

/** The innermost message of an error chain: what the driver said. */
export function causeOf(error: unknown): string {
  let e: unknown = error
  while (e instanceof Error && e.cause instanceof Error) e = e.cause
  if (e instanceof AggregateError && e.errors[0] instanceof Error) return e.errors[0].message
  const message = e instanceof Error ? e.message : String(e)
  return message === '' && e instanceof Error ? ((e as { code?: string }).code ?? e.name) : message
}
