/**
 * The events an operator must hear about even when nobody listens: a store outage (its
 * start, once, with a hint where the error gives one, and its end) and, to a logger the
 * operator gave, each 500 the gate answered (as process warnings, one a request would
 * flood stderr; the `internalError` event has them all). An operator's suspension or
 * resumption of an application gets an info line too, to a logger the operator gave (the
 * operator made the change, so no process warning), on the instance that made it: a record
 * of who was cut off, when and why. The others (`throttled`, `authenticationFailed`, ...) are the traffic's
 * normal course and stay events only.
 */
import type { ApplicationResumedEvent, ApplicationSuspendedEvent, GateEvents, InternalErrorEvent, StoreErrorEvent, StoreRecoveredEvent } from '../events.js'
import { messageOf, type GateLog } from './logger.js'
import { storeFailureHint } from './store-hints.js'

/** Writes the log line of an event, for the events that have one. */
export function logEvent<E extends keyof GateEvents>(log: GateLog, event: E, payload: Parameters<GateEvents[E]>[0]): void {
  if (event === 'storeError') storeError(log, payload as StoreErrorEvent)
  else if (event === 'storeRecovered') storeRecovered(log, payload as StoreRecoveredEvent)
  else if (event === 'internalError' && log.given) internalError(log, payload as InternalErrorEvent)
  else if (event === 'applicationSuspended' && log.given) applicationSuspended(log, payload as ApplicationSuspendedEvent)
  else if (event === 'applicationResumed' && log.given) applicationResumed(log, payload as ApplicationResumedEvent)
}

function applicationSuspended(log: GateLog, event: ApplicationSuspendedEvent): void {
  const what = event.previousReason === null ? 'suspended' : 'still suspended, with a new reason'
  log.info(`open-data-gate: application ${event.appToken} is ${what}: ${event.reason}`, {
    code: 'ODG_APPLICATION_SUSPENDED',
    appToken: event.appToken,
    reason: event.reason,
    since: event.since,
    previousReason: event.previousReason ?? undefined,
  })
}

function applicationResumed(log: GateLog, event: ApplicationResumedEvent): void {
  log.info(`open-data-gate: application ${event.appToken} is resumed, after a suspension since ${new Date(event.since).toISOString()} (${event.reason})`, {
    code: 'ODG_APPLICATION_RESUMED',
    appToken: event.appToken,
    reason: event.reason,
    since: event.since,
  })
}

const CONSEQUENCE: Record<StoreErrorEvent['outcome'], string> = {
  failed: 'requests that need it are answered 503 until it answers again',
  allowed: 'requests are let through unthrottled until it answers again (throttle.onStoreError: fail-open)',
  fallback: 'each process throttles on its own, in memory, until it answers again',
  ignored: 'a bookkeeping write (an API key\'s last use) was dropped',
}

function storeError(log: GateLog, event: StoreErrorEvent): void {
  const error = messageOf(event.error)
  const hint = storeFailureHint(event.error)
  const code = typeof event.error === 'object' && event.error !== null ? (event.error as { code?: unknown }).code : undefined
  log.warn(`open-data-gate: the store (${event.store}) failed on ${event.operation}: ${error}; ${CONSEQUENCE[event.outcome]}.`, {
    code: 'ODG_STORE_ERROR',
    store: event.store,
    operation: event.operation,
    outcome: event.outcome,
    error,
    errorCode: typeof code === 'string' ? code : undefined,
    hint,
  })
}

function storeRecovered(log: GateLog, event: StoreRecoveredEvent): void {
  log.info(`open-data-gate: the store (${event.store}) answers again, after ${event.downMs} ms and ${event.failedCalls} failed call${event.failedCalls === 1 ? '' : 's'}.`, {
    code: 'ODG_STORE_RECOVERED',
    store: event.store,
    downMs: event.downMs,
    failedCalls: event.failedCalls,
  })
}

function internalError(log: GateLog, event: InternalErrorEvent): void {
  const error = event.error instanceof Error ? `${event.error.name}: ${messageOf(event.error)}` : messageOf(event.error)
  log.error(`open-data-gate: ${event.method} ${event.path} was answered 500: ${error}`, {
    code: 'ODG_INTERNAL_ERROR',
    requestId: event.requestId,
    method: event.method,
    path: event.path,
    error,
  })
}
