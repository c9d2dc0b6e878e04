/**
 * The responses the core builds: JSON, and the one place where an error becomes a
 * response. Its status comes from the table in `src/errors.ts`; its body from the shape of
 * the endpoint that failed: the platform's error body on the data API and the gate's own
 * JSON endpoints, RFC 6749 §5.2 at the OAuth token, revocation and metadata endpoints.
 * (The OAuth pages answer a person with HTML: `src/oauth/server.ts` renders those.)
 *
 * @see docs/platform-rules.md "Error bodies and status codes"
 */
import { GateError, OAuthError, PlatformError, StoreError } from '../errors.js'
import type { GateResponse } from './request.js'

const JSON_TYPE = 'application/json; charset=utf-8'

/** A JSON response. */
export function jsonResponse(status: number, value: unknown, headers?: Record<string, string>): GateResponse {
  return { status, headers: { 'content-type': JSON_TYPE, ...headers }, body: JSON.stringify(value) }
}

/**
 * Which body an endpoint answers a failure with:
 * - `platform`: `{"code","error":true,"message","data"}`; anything that is not a
 *   {@link GateError} is a 500 `internal`.
 * - `oauth`: RFC 6749 `{"error","error_description"}`; a store failure is
 *   `temporarily_unavailable`, anything that is not a {@link GateError} `server_error`.
 *
 * In both, a {@link GateError} keeps the body of its class: an {@link OAuthError} is
 * RFC 6749's, any other the platform's.
 */
export type ErrorShape = 'platform' | 'oauth'

/**
 * The response for any failure, in the shape the endpoint answers with. The cause of an
 * unexpected error never reaches the wire (reporting it is the caller's: see `src/gate.ts`).
 */
export function errorResponse(error: unknown, shape: ErrorShape): GateResponse {
  if (shape === 'oauth' && error instanceof StoreError) {
    return oauthErrorResponse(new OAuthError('temporarily_unavailable', 'The service is temporarily unavailable, please retry', { headers: error.headers ?? {} }))
  }
  if (error instanceof OAuthError) return oauthErrorResponse(error)
  if (error instanceof GateError) return platformErrorResponse(error)
  if (shape === 'oauth') return oauthErrorResponse(new OAuthError('server_error', 'Internal server error'))
  return platformErrorResponse(new PlatformError('internal', 'Internal server error'))
}

/**
 * The platform's error response: `{"code","error":true,"message","data"}` plus the same
 * code and message in `X-Error-Code` and `X-Error-Message`.
 */
function platformErrorResponse(error: GateError): GateResponse {
  const body = error.data === undefined ? { code: error.code, error: true, message: error.message } : { code: error.code, error: true, message: error.message, data: error.data }
  return {
    status: error.status,
    headers: {
      'content-type': JSON_TYPE,
      'cache-control': 'no-store',
      'x-error-code': error.code,
      'x-error-message': headerSafe(error.message),
      ...error.headers,
    },
    body: JSON.stringify(body),
  }
}

/** An RFC 6749 §5.2 error response: `{"error","error_description"}`, never cached. */
function oauthErrorResponse(error: OAuthError): GateResponse {
  return {
    status: error.status,
    headers: { 'content-type': JSON_TYPE, 'cache-control': 'no-store', pragma: 'no-cache', ...error.headers },
    body: JSON.stringify({ error: error.code, error_description: error.message }),
  }
}

/** Keeps a message usable as a header value: printable ASCII only. */
function headerSafe(message: string): string {
  return message.replace(/[^\x20-\x7e]/g, '?')
}
