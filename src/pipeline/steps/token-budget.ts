/**
 * Step 6, an access token's budget. With `throttle.oauthTokenBudget: 'application'` (the
 * default) an OAuth request counts against the application its token was issued to, which
 * an `X-App-Token` must not contradict; sent with an app token, it counts against that one
 * whatever the token turns out to be. Which budget a token decides is known before any
 * read when the request sent an app token, or when this process saw the token before (a
 * token's application never changes); then the store reads the token and takes the step
 * together (step 7). A token not seen before is read here first.
 */
import type { ApplicationCache } from '../application-cache.js'
import type { RequestState } from '../request-state.js'
import type { Step } from '../run-steps.js'
import { PlatformError } from '../../errors.js'
import { sha256 } from '../../secrets/tokens.js'
import { isLiveAccessToken } from '../../store/contract/oauth.js'
import type { AccessTokenRecord, ApplicationRecord, Awaitable, GateStore } from '../../store/store.js'
import { andThen, isPromiseLike } from '../../util/awaitable.js'

/** Access tokens whose application {@link TokenBudgets} remembers, at most. */
const MAX_TOKENS = 10_000

export class TokenBudgets {
  readonly #store: GateStore
  readonly #applications: ApplicationCache
  /**
   * The application of each access token seen, by token hash: a token's application never
   * changes, so this copy needs no invalidation (whether the token is live is read on every
   * request). It names the budget of a token sent without an app token before the token is read.
   * A plain map, emptied when full: cheaper per request than an LRU's reordering, and a
   * token it forgot costs one read to learn again.
   */
  readonly #tokenApps = new Map<string, string>()
  readonly #byToken: boolean

  /** @param byToken `throttle.oauthTokenBudget` is `'application'` */
  constructor(store: GateStore, applications: ApplicationCache, byToken: boolean) {
    this.#store = store
    this.#applications = applications
    this.#byToken = byToken
  }

  /** The step: plans the budget of a request with an access token. */
  readonly step: Step = (state) => {
    const credentials = state.credentials
    if (credentials?.kind !== 'token' || (state.application === null && !this.#byToken)) return undefined
    const tokenHash = sha256(credentials.token)
    state.tokenHash = tokenHash
    if (state.application !== null) {
      state.budgetFromToken = true
      return undefined
    }
    const appToken = this.#tokenApps.get(tokenHash)
    if (appToken === undefined) return this.readToken(state)
    const found = this.#applications.get(appToken)
    if (!isPromiseLike(found)) return this.#planned(state, found)
    return Promise.resolve(found).then((record) => this.#planned(state, record))
  }

  #planned(state: RequestState, application: ApplicationRecord | undefined): Awaitable<undefined> {
    if (application === undefined) return this.readToken(state)
    state.application = application
    state.budgetFromToken = true
    return undefined
  }

  /** What the store read of the token: its application is remembered. */
  learned(tokenHash: string, record: AccessTokenRecord | undefined): void {
    if (record === undefined || this.#tokenApps.has(tokenHash)) return
    if (this.#tokenApps.size >= MAX_TOKENS) this.#tokenApps.clear()
    this.#tokenApps.set(tokenHash, record.appToken)
  }

  /** Reads the token on its own, and sets the budget it decides. @throws {PlatformError} 403 `app_token_mismatch` */
  readToken(state: RequestState): Awaitable<undefined> {
    const tokenHash = state.tokenHash as string
    return andThen(this.#store.getAccessToken(tokenHash), (record) => {
      this.learned(tokenHash, record)
      return this.decided(state, record)
    })
  }

  /**
   * Sets the budget a token read decides: its application's while it is live (a store read
   * by app token, no scrypt), else the one the request came with. A token that does not
   * verify changes nothing here: verification refuses it after the throttle.
   * @throws {PlatformError} 403 `app_token_mismatch`
   */
  decided(state: RequestState, record: AccessTokenRecord | undefined): Awaitable<undefined> {
    state.read = { record }
    state.budgetFromToken = false
    const sent = state.sent
    if (!isLiveAccessToken(record, Date.now())) {
      state.application = sent
      return undefined
    }
    if (sent !== null) {
      if (sent.appToken === record.appToken) return undefined
      throw new PlatformError('app_token_mismatch', 'The X-App-Token names another application than the one the access token was issued to')
    }
    return andThen(this.#applications.get(record.appToken), (found) => {
      state.application = found ?? null
      return undefined
    })
  }
}
