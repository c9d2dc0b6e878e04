/**
 * Traces through `node:diagnostics_channel`'s `TracingChannel`, the convention undici and
 * Fastify follow: an OpenTelemetry instrumentation or an APM agent subscribes by name and
 * the gate depends on neither. Two channels:
 *
 * - `open-data-gate:handle`, around the gate's decision on a request
 *   (`tracing:open-data-gate:handle:start`, `:end`, `:asyncStart`, `:asyncEnd`, `:error`),
 *   with a {@link HandleMessage};
 * - `open-data-gate:store`, around each call to the store, with a {@link StoreCallMessage}.
 *
 * The events come as `tracingChannel.tracePromise` and `traceSync` publish them: `start`,
 * then `end` when the call returns; for a call that returned a promise, `asyncStart` and
 * `asyncEnd` once it settled; `error` before `end` (or `asyncStart`) when it failed. A
 * message is made only while a channel has subscribers.
 *
 * @see https://nodejs.org/api/diagnostics_channel.html#class-tracingchannel
 */
import diagnosticsChannel from 'node:diagnostics_channel'
import type { AuthMethod } from '../rules/auth-methods.js'
import type { GateRequest, HeaderValue } from '../http/request.js'
import type { DecisionOutcome, DecisionPolicy, StoreKind } from './metrics.js'

/** The channel around the gate's decision: `tracing:open-data-gate:handle:start` and the rest. */
export const HANDLE_CHANNEL = 'open-data-gate:handle'
/** The channel around store calls: `tracing:open-data-gate:store:start` and the rest. */
export const STORE_CHANNEL = 'open-data-gate:store'

/** What the gate decided, on a {@link HandleMessage} from `end` (synchronous decisions) or `asyncStart` on. */
export interface GateDecision {
  /** The status of the gate's own answer, or `null` when the request goes on to the host's handler. */
  readonly status: number | null
  readonly outcome: DecisionOutcome
  readonly policy: DecisionPolicy
  readonly auth: AuthMethod
}

/**
 * The message of `open-data-gate:handle`. The request is a copy made for the trace: the
 * path without its query, and the headers by name, the value only of those on a short list
 * (`TRACED_HEADERS`: `host`, `user-agent`, `content-type`, `x-app-token`, the proxy
 * and `sec-fetch-*` headers, ...), every other value `[redacted]` (credentials, cookies and
 * CSRF tokens never reach a subscriber, whatever header carries them; the app token does,
 * as it is no secret).
 */
export interface HandleMessage {
  readonly request: {
    readonly method: string
    readonly path: string
    readonly headers: Readonly<Record<string, HeaderValue>>
  }
  /** The request's id (`X-Request-Id`, docs/guides/operating.md), `null` with `requestId: false`. */
  readonly requestId: string | null
  /** Set once the decision is made. */
  decision?: GateDecision
  /** On `error`: what failed, when the gate answered a 5xx for it (refusals are decisions, not errors). */
  error?: unknown
}

/** The message of `open-data-gate:store`: one call to the store. */
export interface StoreCallMessage {
  /** The store contract's method: `getApplication`, `consumeRate`, ... */
  readonly operation: string
  readonly store: StoreKind
  /** `records`, `rates`, or `records+rates`: which store of the gate. */
  readonly role: string
  /** On `error`: the `StoreError` the call failed with. */
  error?: unknown
}

/** The five channels of a `TracingChannel`, by their role (the object Node's `tracingChannel()` returns). */
export interface Channels<M> {
  readonly start: { readonly hasSubscribers: boolean; publish(message: M): void }
  readonly end: { readonly hasSubscribers: boolean; publish(message: M): void }
  readonly asyncStart: { readonly hasSubscribers: boolean; publish(message: M): void }
  readonly asyncEnd: { readonly hasSubscribers: boolean; publish(message: M): void }
  readonly error: { readonly hasSubscribers: boolean; publish(message: M): void }
}

/** A runtime without `tracingChannel` (before Node 19.9, some other runtimes) traces nothing. */
function tracing<M>(name: string): Channels<M> | undefined {
  return typeof diagnosticsChannel.tracingChannel === 'function' ? (diagnosticsChannel.tracingChannel(name) as unknown as Channels<M>) : undefined
}

export const handleChannels = tracing<HandleMessage>(HANDLE_CHANNEL)
export const storeChannels = tracing<StoreCallMessage>(STORE_CHANNEL)

/**
 * Whether anyone listens on any of the channels: checked per call, as a subscriber may come
 * at any time. (`TracingChannel#hasSubscribers` is the same test, from Node 20.13 on.)
 */
export function traced(channels: Channels<never> | Channels<HandleMessage> | Channels<StoreCallMessage> | undefined): boolean {
  return (
    channels !== undefined &&
    (channels.start.hasSubscribers || channels.end.hasSubscribers || channels.asyncStart.hasSubscribers || channels.asyncEnd.hasSubscribers || channels.error.hasSubscribers)
  )
}

const REDACTED = '[redacted]'
/**
 * The headers a trace carries as sent: the ones that describe a request without holding a
 * credential. Every other header a request has is carried by name with its value
 * `[redacted]`, whatever it is called: a host's own credential header (`x-api-key`), the
 * CSRF header (the value of the CSRF cookie), a session cookie under any name.
 */
const TRACED_HEADERS: ReadonlySet<string> = new Set([
  'accept',
  'accept-encoding',
  'accept-language',
  'content-length',
  'content-type',
  'forwarded',
  'host',
  'origin',
  'sec-fetch-dest',
  'sec-fetch-mode',
  'sec-fetch-site',
  'traceparent',
  'tracestate',
  'user-agent',
  'x-app-token',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-request-id',
])

/** The request as a trace shows it: no query, and only the values of `TRACED_HEADERS`. */
export function tracedRequest(request: GateRequest): HandleMessage['request'] {
  const headers: Record<string, HeaderValue> = {}
  for (const name in request.headers) {
    const value = request.headers[name]
    if (value !== undefined) headers[name] = TRACED_HEADERS.has(name) ? value : REDACTED
  }
  const q = request.url.indexOf('?')
  return { method: request.method, path: q === -1 ? request.url : request.url.slice(0, q), headers }
}
