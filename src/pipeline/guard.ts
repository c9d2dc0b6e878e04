/**
 * Route guards, the same in every adapter: `expressGuard`, `koaGuard`, `nodeGuard` all
 * compile a rule here and ask it about `req.gate`.
 *
 * @see docs/platform-rules.md "What the service does" 3-4, "Query a view", and the view query rule under the platform's "App tokens"
 */
import { PlatformError } from '../errors.js'
import type { GateContext } from './context.js'
import { rejectUnknownKeys } from '../util/validate.js'
import type { GateLog } from '../log/logger.js'

/** What a route requires. */
export interface GuardRule {
  /**
   * `'required'`: an authenticated user (private data; anonymous → 403 `authentication_required`).
   * `'user-or-app-token'`: an authenticated user or a valid application token (the view-query rule).
   */
  auth: 'required' | 'user-or-app-token'
  /** Rights the user must all have (checked only when a user is authenticated). */
  rights?: readonly string[]
}

/**
 * A compiled rule: the error to answer with, or `undefined` to let the request through.
 * Answer the error with `gate.errorResponse(error)`: a `PlatformError` is the client's
 * (403), a plain `Error` (the gate was not mounted first) becomes a 500 and an
 * `internalError` event, and the guard says what is wrong once with a process warning
 * (`ODG_GUARD_WITHOUT_GATE`), whether or not anyone listens to the event.
 */
export type Guard = (context: GateContext | undefined) => Error | undefined

/**
 * Compiles a rule once.
 * @throws {TypeError} for an unknown rule
 */
export function compileGuard(rule: GuardRule, log?: GateLog): Guard {
  if (typeof rule !== 'object' || rule === null || (rule.auth !== 'required' && rule.auth !== 'user-or-app-token')) {
    throw new TypeError(`open-data-gate: a guard rule is { auth: 'required' | 'user-or-app-token', rights?: string[] }`)
  }
  rejectUnknownKeys('guard rule', rule, ['auth', 'rights'])
  const rights = rule.rights ?? []
  if (!Array.isArray(rights) || !rights.every((r) => typeof r === 'string')) throw new TypeError('open-data-gate: guard rights must be a list of strings')
  const userOrApp = rule.auth === 'user-or-app-token'
  let warned = false
  return (context) => {
    if (context === undefined) {
      const message = 'open-data-gate: a guard ran on a request the gate has not seen: mount expressGate/koaGate/nodeGate before the guard, on the same path'
      // A misuse of the library is the developer's to see, where developers look: once per guard.
      if (!warned) {
        warned = true
        if (log === undefined) process.emitWarning(message, { code: 'ODG_GUARD_WITHOUT_GATE' })
        else log.warn(message, { code: 'ODG_GUARD_WITHOUT_GATE' })
      }
      return new Error(message)
    }
    const user = context.user
    if (user === null) {
      if (userOrApp && context.application !== null) return undefined
      if (userOrApp) {
        return new PlatformError('authentication_required', 'This endpoint needs an authenticated user or a valid application token (X-App-Token)')
      }
      return new PlatformError(
        'authentication_required',
        context.revokedInsecureToken
          ? 'Authentication required: the access token was sent over an insecure connection and has been revoked; use https'
          : 'Authentication required to access this resource',
      )
    }
    const missing = rights.filter((r) => !user.rights.includes(r))
    if (missing.length > 0) return new PlatformError('permission_denied', `This resource needs the right${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`)
    return undefined
  }
}
