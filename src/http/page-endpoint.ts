/**
 * What the pipeline needs of an endpoint that answers people with pages (the connected-apps
 * page): declared here, below the pipeline, so that routing to one imports no endpoint.
 */
import type { ClientInfo } from './proxy.js'
import type { GateRequest, GateResponse } from './request.js'

/** An endpoint whose every answer is a page, failures included. */
export interface PageEndpoint {
  /** Answers a request to the page. Never rejects: a failure becomes an error page. */
  handle(request: GateRequest, client: ClientInfo): Promise<GateResponse>
  /**
   * The error page for a failure found before the page ran (an untrusted proxy's claim, a
   * revocation of credentials sent in clear that failed); reports what is not a refusal on purpose.
   */
  failure(error: unknown, request: GateRequest, requestId: string | undefined): GateResponse
}
