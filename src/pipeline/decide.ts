/**
 * The decision on one request: the pipeline's steps, in the order docs/request-lifecycle.md
 * tells them. Each step is a file of ./steps/; adding one (a policy, say) is a file and a
 * line here.
 *
 * Every step answers synchronously when the store does (the in-memory store): a request
 * that needs no promise gets none (./run-steps.ts).
 */
import type { ApplicationCache } from './application-cache.js'
import type { Authenticator } from './authenticate.js'
import type { ClearTextRevocation } from './clear-text.js'
import { Clients, type ClientConfig } from './client.js'
import type { GateOutcome } from './context.js'
import type { RequestState } from './request-state.js'
import type { RouteTable } from './routes.js'
import { runSteps, type Step } from './run-steps.js'
import type { SelfServiceAccess } from './self-service-access.js'
import type { Throttle } from './throttle.js'
import { answerStep } from './steps/answer.js'
import { appTokenStep } from './steps/app-token.js'
import { clearTextStep } from './steps/clear-text.js'
import { clientStep } from './steps/client.js'
import { credentialsStep, type CredentialsStepConfig } from './steps/credentials.js'
import { ownEndpointStep } from './steps/own-endpoints.js'
import { budgetSuspensionStep, tokenSuspensionStep } from './steps/suspension.js'
import { leaseStep } from './steps/lease.js'
import { throttleStep, type LookupRequest } from './steps/throttle.js'
import { TokenBudgets } from './steps/token-budget.js'
import { verificationStep } from './steps/verification.js'
import type { ResolvedConfig } from '../config/options.js'
import type { Emit } from '../events.js'
import type { Awaitable, GateStore } from '../store/store.js'

/** The options the decision reads. */
export type PipelineConfig = ClientConfig & CredentialsStepConfig & Pick<ResolvedConfig, 'legacyAppTokenParam' | 'oauthTokenBudget'>

/** The services a request goes through, wired by the gate. */
export interface PipelineServices {
  /** The guarded store: access tokens are read here for their budget. */
  readonly store: GateStore
  /** The store's lookup of a request's rate step and records (src/store/composed-lookup.ts when it has none of its own). */
  readonly lookupRequest: LookupRequest
  readonly applications: ApplicationCache
  readonly routes: RouteTable
  readonly throttle: Throttle
  readonly auth: Authenticator
  readonly clearText: ClearTextRevocation
  readonly selfServiceAccess: SelfServiceAccess
  readonly emit: Emit
}

/** Decides what happens to each request. */
export class Pipeline {
  readonly #steps: readonly Step[]

  constructor(config: PipelineConfig, services: PipelineServices) {
    const tokens = new TokenBudgets(services.store, services.applications, config.oauthTokenBudget === 'application')
    this.#steps = [
      clientStep(new Clients(config), services.routes),
      clearTextStep(services.clearText),
      ownEndpointStep(services.selfServiceAccess),
      appTokenStep(config.legacyAppTokenParam, services.applications, services.emit),
      credentialsStep(config),
      tokens.step,
      budgetSuspensionStep,
      ...(services.throttle.leases === null ? [] : [leaseStep(services.throttle, services.throttle.leases, tokens)]),
      throttleStep(services.throttle, services.lookupRequest, services.auth, tokens),
      verificationStep(services.auth),
      tokenSuspensionStep(services.applications),
      answerStep(),
    ]
  }

  /**
   * The outcome of a request, its state filled in on the way. May throw or reject: the gate
   * turns a failure into the data API's error response (`Gate.handle`).
   */
  decide(state: RequestState): Awaitable<GateOutcome> {
    return runSteps(this.#steps, state)
  }
}
