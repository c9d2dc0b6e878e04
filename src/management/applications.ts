/**
 * Registered applications: `gate.applications`. Registration issues the app token
 * (public, sent as `X-App-Token` and as OAuth `client_id`) and the secret token (sent
 * only as OAuth `client_secret`, stored only as a hash, shown once).
 *
 * @see docs/platform-rules.md "Resources and their fields", "OAuth 2.0" step 1
 */
import { PlatformError, retryAfterSeconds, ThrottledError } from '../errors.js'
import { noSuchUser } from './users.js'
import { checkApplicationName } from './application-names.js'
import type { RatePolicyOptions } from '../config/options.js'
import { registrationsRateKey } from '../limits/rate-keys.js'
import type { RateSpender } from '../limits/gcra.js'
import { optionsObject } from '../util/validate.js'
import { randomToken, sha256 } from '../secrets/tokens.js'
import { DEFAULT_SECRET_GRACE_MS } from '../config/defaults.js'
import { applicationSecretMatches, noSuchApplication, rotateSecret, rotationGrace, type RotateSecretOptions } from './secret-rotation.js'
import { checkImportedAppToken, checkImportedSecret, checkLimit, checkOwnerId } from './application-fields.js'
import { checkCallbackPrefix } from './callback-prefix.js'
import { checkPlan } from './application-plans.js'
import type { ApplicationRecord, GateStore } from '../store/store.js'
import { hasSlice } from '../store/slices.js'
import type { Emit } from '../events.js'
import type { NearLimit, NearLimitReader } from '../usage/near-limit-state.js'
import { checkSuspensionReason, resumeApplication, suspendApplication, suspensionOf, type ApplicationSuspension, type SuspendApplicationOptions } from './application-suspension.js'

/** An application as the gate shows it: everything but the secrets' hashes. */
export interface Application {
  readonly appToken: string
  readonly name: string
  readonly callbackPrefix: string | null
  /** This application's own throttle limit, or `null` for the configured one. */
  readonly limit: number | null
  /** The user who registered it themselves, or `null` for an application an operator registered. */
  readonly ownerId: string | null
  /** Until when the secret token before the last rotation is accepted (epoch ms; a past time once its grace is over), or `null` when there is none. */
  readonly previousSecretExpiresAt: number | null
  /** Why and since when an operator suspended it ({@link Applications.suspend}), or `null` while it is active. */
  readonly suspended: ApplicationSuspension | null
  /** The plan an operator put it on ({@link Applications.update}), or `null` for the configured default plan. */
  readonly plan: string | null
  readonly createdAt: number
  readonly updatedAt: number
}

/** What {@link Applications.register} takes. */
export interface RegisterApplication {
  name: string
  /** Absolute https URL every OAuth `redirect_uri` must start with. Omit for an app that never uses OAuth. */
  callbackPrefix?: string | null
  /** A per-application throttle limit (requests per the application window). */
  limit?: number | null
  /** The plan it is on: a configured plan's name, or `null` (the default) for the configured default plan. */
  plan?: string | null
  /**
   * The user who owns it: listed by `list({ ownerId })` and managed by that user on the
   * self-service endpoints. Default `null`: an operator's application, which no user
   * manages. Registering for a user here skips the user's cap and budget; see {@link Applications.registerOwn}.
   */
  ownerId?: string | null
  /**
   * Import: keep an app token the application already uses (moving from another portal).
   * 1 to 128 letters, digits, `-` or `_`, not taken. Default: a new random token.
   */
  appToken?: string
  /**
   * Import: keep the application's existing secret token (it is stored hashed, like a new
   * one). At least 16 characters, no spaces or control characters. Default: a new random secret.
   */
  secretToken?: string
}

/** What {@link Applications.update} can change. `null` clears an optional field. */
export interface UpdateApplication {
  name?: string
  callbackPrefix?: string | null
  limit?: number | null
  /**
   * The plan it is on: the name of a plan the gate's configuration has, or `null` for the
   * configured default plan.
   */
  plan?: string | null
}

/** The credentials of a new application: the only time the secret token is visible. */
export interface RegisteredApplication {
  readonly appToken: string
  readonly secretToken: string
  readonly application: Application
}

/** What {@link Applications.registerOwn} takes: a user's own registration. */
export interface RegisterOwnApplication {
  /** The signed-in user registering it. */
  ownerId: string
  name: string
  callbackPrefix?: string | null
}

/** What {@link Applications.list} takes. */
export interface ListApplications {
  /** Only the applications this user registered. */
  ownerId?: string
}

/** The bounds on users' own registrations and the grace of a rotated secret: the gate's `applications` options. */
export interface ApplicationRules {
  readonly maxPerUser: number
  readonly secretGraceMs: number
  /**
   * Spends one registration of the user's budget; resolves to the milliseconds to wait
   * when it is spent, or `0` when the registration may go ahead.
   */
  readonly spendRegistration: (userId: string) => Promise<number>
  /**
   * The names of the plans the gate's configuration knows: an application can be put on
   * one of them. Absent or empty: only `null` (the default plan) is accepted.
   */
  readonly plans?: ReadonlySet<string>
}

/**
 * The `spendRegistration` of {@link ApplicationRules}: one unit of the user's
 * `applications.registrations` budget (`registrations:<user id>`, GCRA on the rate store).
 * A store that fails while the throttle runs `fail-open` lets the registration through;
 * otherwise its error is thrown.
 */
export function registrationBudget(policy: RatePolicyOptions | null, throttle: RateSpender): (userId: string) => Promise<number> {
  if (policy === null) return async () => 0
  return async (userId) => {
    const spent = await throttle.consume(registrationsRateKey(userId), policy.limit, policy.windowMs, 1)
    return spent === null || spent.allowed ? 0 : Math.max(1, spent.retryAfterMs)
  }
}

const NO_RULES: ApplicationRules = { maxPerUser: 20, secretGraceMs: DEFAULT_SECRET_GRACE_MS, spendRegistration: async () => 0 }

/** The public view of a stored application. */
export function toApplication(record: ApplicationRecord): Application {
  return {
    appToken: record.appToken,
    name: record.name,
    callbackPrefix: record.callbackPrefix,
    limit: record.limit,
    ownerId: record.ownerId ?? null,
    previousSecretExpiresAt: record.previousSecretHash === null || record.previousSecretHash === undefined ? null : (record.previousSecretExpiresAt ?? null),
    suspended: suspensionOf(record),
    plan: record.plan ?? null,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  }
}

/** What `gate.applications` is made of; made by the gate. */
export interface ApplicationsParts {
  /** The guarded store. */
  readonly store: GateStore
  /** Tells the gate's per-process cache that a record changed; nothing when left out. */
  readonly changed?: (appToken: string) => void
  /** `oauth.allowLoopbackCallbacks`: also accept http loopback Callback Prefixes (off when left out). */
  readonly allowLoopback?: boolean
  /** The `applications` options, and the budget of users' registrations (the defaults, no budget, when left out). */
  readonly rules?: ApplicationRules
  /** The gate's events (`applicationSuspended`, `applicationResumed`); none when left out. */
  readonly emit?: Emit
  /** Reads which limits an application is near (`nearLimit`); `null` or left out: not shown. */
  readonly nearLimit?: NearLimitReader | null
}

/** `gate.applications`: register and manage applications. */
export class Applications {
  readonly #store: GateStore
  /** Tells the gate's per-process cache that a record changed. */
  readonly #changed: (appToken: string) => void
  readonly #allowLoopback: boolean
  readonly #rules: ApplicationRules
  readonly #emit: Emit
  readonly #nearLimit: NearLimitReader | null

  constructor(parts: ApplicationsParts) {
    this.#store = parts.store
    this.#changed = parts.changed ?? (() => {})
    this.#allowLoopback = parts.allowLoopback ?? false
    this.#rules = parts.rules ?? NO_RULES
    this.#emit = parts.emit ?? (() => {})
    this.#nearLimit = parts.nearLimit ?? null
  }

  /**
   * Registers an application.
   * @throws {TypeError} for a missing name, a callback prefix that is not an absolute https URL, a bad limit, an unknown field,
   *   an imported `appToken` or `secretToken` of the wrong form
   * @throws {PlatformError} `conflict` when an imported `appToken` is taken
   * @example
   * const { appToken, secretToken } = await gate.applications.register({
   *   name: 'Transit dashboard', callbackPrefix: 'https://transit.example/oauth/',
   * })
   * // Importing an application's credentials; an unset secret must stop it (undefined makes a new one):
   * if (!process.env.TRANSIT_SECRET) throw new Error('Set TRANSIT_SECRET')
   * await gate.applications.register({ name: 'Transit dashboard', appToken: 'aB3dE5fG7hJ9kL1mN3pQ5rS7t', secretToken: process.env.TRANSIT_SECRET })
   */
  async register(input: RegisterApplication): Promise<RegisteredApplication> {
    if (typeof input !== 'object' || input === null) throw new TypeError('open-data-gate: register() takes { name, callbackPrefix?, limit?, plan?, ownerId? }')
    optionsObject('register()', input, REGISTER_FIELDS)
    const secretToken = input.secretToken === undefined ? randomToken(32) : checkImportedSecret('secretToken', input.secretToken)
    const appToken = input.appToken === undefined ? randomToken(18) : checkImportedAppToken(input.appToken)
    const fields = { name: checkApplicationName(input.name), callbackPrefix: checkCallbackPrefix(input.callbackPrefix ?? null, this.#allowLoopback), limit: checkLimit(input.limit ?? null), plan: checkPlan(input.plan ?? null, this.#rules.plans) }
    const ownerId = checkOwnerId(input.ownerId ?? null)
    if (ownerId !== null && hasSlice(this.#store, 'users') && (await this.#store.getUser(ownerId)) === undefined) throw noSuchUser(ownerId)
    if (input.appToken !== undefined && (await this.#store.getApplication(appToken)) !== undefined) {
      throw new PlatformError('conflict', `An application with the app token ${appToken} exists`)
    }
    const record = newRecord(appToken, secretToken, { ...fields, ownerId })
    const result = await this.#store.insertApplication(record)
    this.#changed(record.appToken)
    if (result !== 'created') throw new TypeError(`open-data-gate: the store's insertApplication must answer 'created' to an insert without limits, got ${String(result)}`)
    return { appToken: record.appToken, secretToken, application: toApplication(record) }
  }

  /**
   * Registers an application for the signed-in user who asks for it, within the bounds of
   * the `applications` options: one registration of the user's budget
   * (`applications.registrations`, default 10 per hour) is spent, and the store refuses
   * it, in the same step as the insert, when the user has `applications.maxPerUser`
   * (default 20). What `POST /api/applications` does; a host's own developer page calls
   * this rather than {@link register}, so the same bounds hold there.
   * @throws {TypeError} for a missing name or a bad callback prefix, as {@link register}
   * @throws {NotFoundError} `not_found` when no user has the `ownerId`
   * @throws {PlatformError} `too_many_requests` (with `retry-after`) when the budget is spent,
   *   `application_limit_reached` when the user is at the cap
   * @example
   * const { appToken, secretToken } = await gate.applications.registerOwn({ ownerId: session.userId, name, callbackPrefix })
   */
  async registerOwn(input: RegisterOwnApplication): Promise<RegisteredApplication> {
    if (typeof input !== 'object' || input === null) throw new TypeError('open-data-gate: registerOwn() takes { ownerId, name, callbackPrefix? }')
    optionsObject('registerOwn()', input, ['ownerId', 'name', 'callbackPrefix'])
    const ownerId = checkOwnerId(input.ownerId)
    if (ownerId === null) throw new TypeError('open-data-gate: registerOwn() needs the ownerId of the user registering')
    const fields = { name: checkApplicationName(input.name), callbackPrefix: checkCallbackPrefix(input.callbackPrefix ?? null, this.#allowLoopback), limit: null, plan: null }
    if (hasSlice(this.#store, 'users') && (await this.#store.getUser(ownerId)) === undefined) throw noSuchUser(ownerId)
    const waitMs = await this.#rules.spendRegistration(ownerId)
    if (waitMs > 0) throw new ThrottledError(`Too many applications registered lately; retry in ${retryAfterSeconds(waitMs)} seconds`, waitMs)
    const secretToken = randomToken(32)
    const record = newRecord(randomToken(18), secretToken, { ...fields, ownerId })
    const result = await this.#store.insertApplication(record, { maxPerOwner: this.#rules.maxPerUser })
    if (result === 'owner-limit') {
      throw new PlatformError('application_limit_reached', `You have ${this.#rules.maxPerUser} applications, the most allowed; delete one first`)
    }
    if (result !== 'created') throw new TypeError(`open-data-gate: the store's insertApplication must answer 'created' or 'owner-limit', got ${String(result)}`)
    this.#changed(record.appToken)
    return { appToken: record.appToken, secretToken, application: toApplication(record) }
  }

  /** The application with this app token, or `undefined`. */
  async find(appToken: string): Promise<Application | undefined> {
    const record = await this.#store.getApplication(appToken)
    return record === undefined ? undefined : toApplication(record)
  }

  /**
   * Every application, oldest first; with `ownerId`, only that user's.
   * @example
   * const mine = await gate.applications.list({ ownerId: user.id })
   */
  async list(filter: ListApplications = {}): Promise<Application[]> {
    optionsObject('applications.list() filter', filter, ['ownerId'])
    if (filter.ownerId === undefined) return (await this.#store.listApplications()).map(toApplication)
    const ownerId = checkOwnerId(filter.ownerId)
    if (ownerId === null) throw new TypeError('open-data-gate: list({ ownerId }) needs a user id; list() lists every application')
    return (await this.#store.listApplications({ ownerId })).map(toApplication)
  }

  /**
   * Changes an application's name, callback prefix, limit or plan (every instance sees it once the store's change notice reaches it).
   * @returns the updated application
   * @throws {NotFoundError} `not_found` when no application has this token
   * @throws {TypeError} for invalid values, as {@link register}; for a `plan` that is not a
   *   plan name or null, or that no configured plan has (the message lists the known ones)
   * @example
   * await gate.applications.update(appToken, { plan: 'partner' }) // or null: back on the default plan
   */
  async update(appToken: string, changes: UpdateApplication): Promise<Application> {
    optionsObject('applications.update() changes', changes, APPLICATION_FIELDS)
    const patch: { name?: string; callbackPrefix?: string | null; limit?: number | null; plan?: string | null; updatedAt: number } = { updatedAt: Date.now() }
    if (changes.name !== undefined) patch.name = checkApplicationName(changes.name)
    if (changes.callbackPrefix !== undefined) patch.callbackPrefix = checkCallbackPrefix(changes.callbackPrefix, this.#allowLoopback)
    if (changes.limit !== undefined) patch.limit = checkLimit(changes.limit)
    if (changes.plan !== undefined) patch.plan = checkPlan(changes.plan, this.#rules.plans)
    const record = await this.#store.updateApplication(appToken, patch)
    this.#changed(appToken)
    if (record === undefined) throw noSuchApplication(appToken)
    return toApplication(record)
  }

  /**
   * Issues a new secret token. The one it replaces keeps working at the token and
   * revocation endpoints for `graceMs` (default `applications.secretGraceMs`, 1 hour; at
   * most 7 days), so a deployed client can be updated without an outage; the one before
   * it stops at once. After a leak, pass `graceMs: 0`: the old secret stops at once.
   * @returns the new secret, shown this once
   * @throws {TypeError} for a `graceMs` that is not a whole number of ms from 0 to 7 days
   * @throws {NotFoundError} `not_found` when no application has this token
   * @throws {PlatformError} `conflict` when another rotation of the same application
   *   overtook this one (its secret was never saved; the other's is the one that works)
   * @example
   * const secret = await gate.applications.rotateSecret(appToken)                  // the old one works for the grace
   * const afterLeak = await gate.applications.rotateSecret(appToken, { graceMs: 0 }) // the old one stops now
   */
  async rotateSecret(appToken: string, options: RotateSecretOptions = {}): Promise<string> {
    const graceMs = rotationGrace(options, this.#rules.secretGraceMs)
    return rotateSecret(this.#store, appToken, graceMs, this.#changed)
  }

  /**
   * Suspends an application: every request that counts against it (its app token, Basic
   * with it, its OAuth tokens) is refused 403 `application_suspended` with `reason` in the
   * message, and the authorize and token endpoints refuse it, on every instance once the
   * store's change notice reaches it. Nothing is deleted; its owner sees the state and cannot
   * lift it. Suspending a suspended application replaces the reason and keeps when it began.
   * @returns the application, suspended
   * @throws {TypeError} for a missing or bad `reason` (1 to 500 characters, as a name)
   * @throws {NotFoundError} `not_found` when no application has this token
   * @example
   * await gate.applications.suspend(appToken, { reason: 'Scraping beyond its limit; write to data@city.example' })
   */
  async suspend(appToken: string, options: SuspendApplicationOptions): Promise<Application> {
    const reason = checkSuspensionReason(options)
    return toApplication(await suspendApplication(this.#store, appToken, reason, this.#changed, this.#emit))
  }

  /**
   * Resumes a suspended application: it is served again at once, with its usage, grants,
   * tokens and secret as they were. An application that is not suspended is left as it is.
   * @returns the application, active
   * @throws {NotFoundError} `not_found` when no application has this token
   */
  async resume(appToken: string): Promise<Application> {
    return toApplication(await resumeApplication(this.#store, appToken, this.#changed, this.#emit))
  }

  /**
   * The limits the application is near now: each of its plan's limits (counted per
   * application) whose use has reached one of `nearLimit.thresholds` (80%, 90% and 100% by
   * default), closest to refusing first, with the threshold reached, the window or quota
   * period, and when the gate reported it; `[]` when it is near none. Read from the rate
   * store, so every instance gives the same answer; nothing is written or consumed.
   * What its owner sees in `GET /api/applications` and on a developer page.
   * @returns `null` when it cannot be told: with `nearLimit: false`, or while the rate store fails
   * @throws {NotFoundError} `not_found` when no application has this token
   * @example
   * for (const near of (await gate.applications.nearLimit(appToken)) ?? []) {
   *   console.log(`${near.name}: ${near.threshold * 100}% used, ${near.remaining} of ${near.limit} left`)
   * }
   */
  async nearLimit(appToken: string): Promise<NearLimit[] | null> {
    const record = await this.#store.getApplication(appToken)
    if (record === undefined) throw noSuchApplication(appToken)
    return this.nearLimitOf(toApplication(record))
  }

  /** {@link nearLimit} of an application already read. @internal */
  async nearLimitOf(application: Application): Promise<NearLimit[] | null> {
    if (this.#nearLimit === null) return null
    try {
      return await this.#nearLimit.of(application)
    } catch {
      // The store's guard has told the events and the log about the outage.
      return null
    }
  }

  /**
   * Whether `secretToken` is this application's secret, or the one before the last
   * rotation within its grace, compared in constant time.
   */
  async verifySecret(appToken: string, secretToken: string): Promise<boolean> {
    const record = await this.#store.getApplication(appToken)
    return record !== undefined && applicationSecretMatches(record, secretToken)
  }

  /**
   * Deletes an application; its token is refused and the access tokens issued to it stop working.
   * @returns `false` when there was no such application
   */
  async delete(appToken: string): Promise<boolean> {
    const deleted = await this.#store.deleteApplication(appToken)
    this.#changed(appToken)
    if (deleted && hasSlice(this.#store, 'oauth')) await this.#store.revokeAccessTokens({ appToken }, Date.now())
    return deleted
  }
}

const APPLICATION_FIELDS = ['name', 'callbackPrefix', 'limit', 'plan']
/** Registration also takes the owner, and credentials to import. */
const REGISTER_FIELDS = [...APPLICATION_FIELDS, 'ownerId', 'appToken', 'secretToken']

function newRecord(appToken: string, secretToken: string, fields: Pick<ApplicationRecord, 'name' | 'callbackPrefix' | 'limit' | 'plan' | 'ownerId'>): ApplicationRecord {
  const now = Date.now()
  return { appToken, ...fields, secretHash: sha256(secretToken), previousSecretHash: null, previousSecretExpiresAt: null, suspendedAt: null, suspensionReason: null, createdAt: now, updatedAt: now }
}
