/**
 * One request on its way through the pipeline's steps (./decide.ts), and then its
 * {@link Decision}: made once per request by the gate, filled in by the steps as they learn
 * more, and, once the gate has its answer, settled and read by usage, the metrics, the
 * traces, the log and the request-id header, each once.
 */
import type { Authentication } from './authenticate.js'
import type { GateOutcome } from './context.js'
import type { Route } from './routes.js'
import type { ThrottlePass } from './throttle.js'
import type { TokenLookup } from './authenticate.js'
import type { Credentials } from '../http/authorization-header.js'
import type { ClientInfo } from '../http/proxy.js'
import type { GateRequest } from '../http/request.js'
import type { AuthMethod } from '../rules/auth-methods.js'
import { PlatformError } from '../errors.js'
import { outcomeOf, type Decision, type DecisionOutcome, type DecisionThrottle } from '../rules/decision.js'
import type { ApplicationRecord } from '../store/store.js'

/** What an unplaced client reads as until the client step ran (a failure before it: the gate's own answer). */
const NO_NAMES: readonly string[] = Object.freeze([])
const NO_CLIENT: ClientInfo = Object.freeze({ ip: '', secure: false, requestId: undefined })

export class RequestState implements Decision {
  readonly request: GateRequest
  readonly requestId: string | undefined
  /** Who sent it and how: set by the first step. */
  client: ClientInfo = NO_CLIENT
  /** The endpoint the gate answers, or `undefined`: the host's handler. */
  route: Route | undefined = undefined
  /**
   * The application the request counts against: the app token's, then, for an access token
   * that decides its own budget, its application's (or `null`, the anonymous pool).
   */
  application: ApplicationRecord | null = null
  /** The application the app token named, whatever an access token decides later. */
  sent: ApplicationRecord | null = null
  /** The credentials to verify (none over plain http: a token sent in clear was revoked, and the request goes on without it). */
  credentials: Credentials | undefined = undefined
  /** An access token's hash, once the budget step computed it. */
  tokenHash: string | undefined = undefined
  /** The access token decides the request's budget (`throttle.oauthTokenBudget`), and its record has not been read yet. */
  budgetFromToken = false
  /** The records read for verification so far (a field absent: not read). */
  read: TokenLookup | undefined = undefined
  /** An access token travelled in clear, and the gate revoked what was live of it. */
  revokedInsecureToken = false
  /** The rate step was decided from this process's lease (`throttle.local`): the throttle step takes none. */
  leased = false
  /** The throttle's verdict on a request it let through. */
  pass: ThrottlePass | null = null
  authentication: Authentication | null = null
  unknownAppToken = false
  /** Names of the shadow limits that would have refused it (set by the throttle step). */
  shadowed: readonly string[] = NO_NAMES
  // ---- the decision, settled once the gate has its answer ----
  status: number | null = null
  outcome: DecisionOutcome = 'allowed'
  error: unknown = undefined
  suspended = false

  constructor(request: GateRequest, requestId: string | undefined) {
    this.request = request
    this.requestId = requestId
  }

  get appToken(): string | null {
    return this.application === null ? null : this.application.appToken
  }

  get auth(): AuthMethod {
    return this.authentication === null ? 'none' : this.authentication.method
  }

  get throttle(): DecisionThrottle | null {
    return this.pass === null ? null : this.pass.info
  }

  /** The gate's answer, and what failed when the answer is a failure's (a 5xx's cause is kept for the log and traces). */
  settle(outcome: GateOutcome, error: unknown): void {
    this.status = outcome.type === 'next' ? null : outcome.response.status
    this.outcome = outcomeOf(this.status)
    if (this.outcome === 'error') this.error = error
    else if (this.outcome === 'refused' && error instanceof PlatformError && error.code === 'application_suspended') this.suspended = true
  }
}
