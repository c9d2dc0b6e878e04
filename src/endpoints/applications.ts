/**
 * The self-service application endpoints, for the signed-in user's own applications:
 * `GET`/`POST /api/applications`, `GET`/`PATCH`/`DELETE /api/applications/{appToken}`,
 * `POST /api/applications/{appToken}/secret` and
 * `GET /api/applications/{appToken}/usage`. Who the user is, and whether the credentials
 * may manage the account at all (only the password or a session, with the CSRF header for
 * a change), is decided before (`self-service.ts`).
 *
 * Another user's application, and an operator's, is answered exactly as one that does not
 * exist (404 `not_found`): the endpoints never confirm that an app token is registered to
 * someone else.
 *
 * @see docs/guides/applications.md
 */
import type { Applications, Application } from '../management/applications.js'
import { isPlausibleAppToken } from '../rules/credential-shapes.js'
import type { GateUser } from '../pipeline/authenticate.js'
import { PlatformError } from '../errors.js'
import type { GateRequest, GateResponse } from '../http/request.js'
import { jsonResponse } from '../http/responses.js'
import { bodyParams, Params, queryParams } from '../http/params.js'
import { MAX_SECRET_GRACE_MS } from '../config/defaults.js'
import type { GateUsage, UsageSeries } from '../usage/usage.js'
import type { NearLimit } from '../usage/near-limit-state.js'
import { GRANULARITY_MS, type UsageGranularity } from '../store/usage-contract.js'
import { bodyError } from './api-keys.js'
import { usageReadCost } from './self-service-budget.js'

const BODY_LIMIT = 16 * 1024
const FIELDS = ['name', 'callbackPrefix']
const USAGE_PARAMS = ['granularity', 'from', 'to']
/**
 * How many buckets one usage read may span: a day and an hour by the minute, 62 days by the
 * hour, four years by the day. What one read costs the store grows with it.
 */
export const MAX_READ_BUCKETS = 1500
/** Spends `cost` units of the user's budget, and gives the `RateLimit` headers for the answer. */
export type SpendBudget = (cost: number) => Promise<Record<string, string>>
/** Personal data, different for every credential: never cached by anyone but the client. */
const PRIVATE = { 'cache-control': 'private, no-store', vary: 'Authorization, Cookie' }

/** An application as these endpoints show it to its owner. */
export interface ApplicationJson {
  readonly appToken: string
  readonly name: string
  readonly callbackPrefix: string | null
  /** Its own throttle limit (set by an operator), or `null` for the configured one. */
  readonly limit: number | null
  /** ISO 8601. */
  readonly createdAt: string
  readonly updatedAt: string
  /** ISO 8601: until when the secret token before the last rotation still works; `null` when none does. */
  readonly previousSecretExpiresAt: string | null
  /**
   * Whether an operator suspended it: the reason and when it began (ISO 8601), or `null`
   * while it is active. Its owner sees it and cannot change it.
   */
  readonly suspended: { readonly reason: string; readonly since: string } | null
  /** The plan an operator put it on, or `null` for the configured default plan. Its owner sees it and cannot change it. */
  readonly plan: string | null
  /**
   * The limits it is near now (`gate.applications.nearLimit`), closest to refusing first;
   * `[]` when none; `null` when it cannot be told (`nearLimit: false`, or the rate store
   * failing). Read-only: its owner sees it and cannot change it.
   */
  readonly nearLimit: readonly NearLimitJson[] | null
  /** Only in the answers to a registration and a rotation: the one time it is shown. */
  readonly secretToken?: string
}

/** A limit an application is near, as these endpoints show it: a {@link NearLimit} with ISO 8601 times. */
export interface NearLimitJson {
  /** The limit's name, as `RateLimit-Policy` names it. */
  readonly name: string
  /** The highest threshold reached: 0.8 for 80%, 1 when none is left. */
  readonly threshold: number
  readonly limit: number
  readonly remaining: number
  /** The rolling window in ms, or the quota period's length. */
  readonly windowMs: number
  /** A quota's current period, ISO 8601; `null` for a rolling window. */
  readonly period: { readonly start: string; readonly end: string } | null
  readonly shadow: boolean
  /** ISO 8601: when the gate reported the threshold in this window, or `null`. */
  readonly since: string | null
}

function nearLimitJson(near: readonly NearLimit[] | null): NearLimitJson[] | null {
  if (near === null) return null
  const iso = (ms: number) => new Date(ms).toISOString()
  return near.map((limit) => ({ ...limit, period: limit.period === null ? null : { start: iso(limit.period.start), end: iso(limit.period.end) }, since: limit.since === null ? null : iso(limit.since) }))
}

/** The JSON of an application; `secretToken` only when given. */
export function applicationJson(application: Application, nearLimit: readonly NearLimit[] | null, secretToken?: string, now = Date.now()): ApplicationJson {
  const grace = application.previousSecretExpiresAt
  return {
    appToken: application.appToken,
    name: application.name,
    callbackPrefix: application.callbackPrefix,
    limit: application.limit,
    createdAt: new Date(application.createdAt).toISOString(),
    updatedAt: new Date(application.updatedAt).toISOString(),
    previousSecretExpiresAt: grace !== null && grace > now ? new Date(grace).toISOString() : null,
    suspended: application.suspended === null ? null : { reason: application.suspended.reason, since: new Date(application.suspended.since).toISOString() },
    plan: application.plan,
    nearLimit: nearLimitJson(nearLimit),
    ...(secretToken === undefined ? {} : { secretToken }),
  }
}

/** The endpoints' work, once the user is known and allowed. */
export class ApplicationEndpoints {
  readonly #applications: Applications
  readonly #usage: GateUsage
  readonly #bodyTimeoutMs: number

  constructor(applications: Applications, usage: GateUsage, bodyTimeoutMs: number) {
    this.#applications = applications
    this.#usage = usage
    this.#bodyTimeoutMs = bodyTimeoutMs
  }

  /** `GET /api/applications`: the user's applications, oldest first. */
  async list(user: GateUser): Promise<GateResponse> {
    const mine = await this.#applications.list({ ownerId: user.id })
    const near = await Promise.all(mine.map((application) => this.#applications.nearLimitOf(application)))
    const now = Date.now()
    return jsonResponse(200, mine.map((application, i) => applicationJson(application, near[i] ?? null, undefined, now)), PRIVATE)
  }

  /**
   * `POST /api/applications` with `{"name": "...", "callbackPrefix": "https://..."}`: a new
   * application of the user's, with its secret token this once. The user's budget and cap
   * apply (`applications.registrations`, `applications.maxPerUser`).
   */
  async register(user: GateUser, request: GateRequest): Promise<GateResponse> {
    const body = await this.#body(request)
    const name = body.get('name')
    if (name === undefined || name.trim() === '') throw new PlatformError('invalid_request', 'name is required')
    const prefix = body.get('callbackPrefix')?.trim()
    const registered = await invalidAsRequest(() => this.#applications.registerOwn({ ownerId: user.id, name, callbackPrefix: prefix === undefined || prefix === '' ? null : prefix }))
    return jsonResponse(201, await this.#json(registered.application, registered.secretToken), PRIVATE)
  }

  /** `GET /api/applications/{appToken}`. */
  async get(user: GateUser, appToken: string): Promise<GateResponse> {
    return jsonResponse(200, await this.#json(await this.#own(user, appToken)), PRIVATE)
  }

  /**
   * `PATCH /api/applications/{appToken}` with `name` and/or `callbackPrefix` (`""` removes
   * it). `suspended` and `plan` are refused (403 `permission_denied`): only an operator suspends, resumes or changes the plan.
   */
  async update(user: GateUser, appToken: string, request: GateRequest): Promise<GateResponse> {
    await this.#own(user, appToken)
    const body = await this.#body(request)
    if (body.has('suspended')) throw new PlatformError('permission_denied', "An application's suspension is set and lifted by the portal's operators; its owner cannot change it")
    if (body.has('plan')) throw new PlatformError('permission_denied', "An application's plan is set by the portal's operators; its owner cannot change it")
    const changes: { name?: string; callbackPrefix?: string | null } = {}
    if (body.has('name')) {
      const name = body.get('name')
      if (name === undefined || name.trim() === '') throw new PlatformError('invalid_request', 'name cannot be empty')
      changes.name = name
    }
    if (body.has('callbackPrefix')) {
      const prefix = body.get('callbackPrefix')?.trim()
      changes.callbackPrefix = prefix === undefined || prefix === '' ? null : prefix
    }
    if (changes.name === undefined && !('callbackPrefix' in changes)) throw new PlatformError('invalid_request', 'Send name or callbackPrefix to change')
    const updated = await invalidAsRequest(() => this.#applications.update(appToken, changes))
    return jsonResponse(200, await this.#json(updated), PRIVATE)
  }

  /** `DELETE /api/applications/{appToken}`: its app token is refused from now on, and its access tokens stop working. */
  async delete(user: GateUser, appToken: string): Promise<GateResponse> {
    await this.#own(user, appToken)
    if (!(await this.#applications.delete(appToken))) throw notFound()
    return { status: 204, headers: { 'cache-control': 'no-store' }, body: '' }
  }

  /**
   * `POST /api/applications/{appToken}/secret`: a new secret token, shown this once; the
   * one it replaces keeps working for `applications.secretGraceMs`, or for `graceMs` (in the
   * body or the query; `0` retires it now, after a leak).
   */
  async rotateSecret(user: GateUser, appToken: string, request: GateRequest): Promise<GateResponse> {
    await this.#own(user, appToken)
    const graceMs = await this.#graceMs(request)
    const secretToken = await invalidAsRequest(() => this.#applications.rotateSecret(appToken, graceMs === undefined ? {} : { graceMs }))
    const rotated = await this.#applications.find(appToken)
    if (rotated === undefined) throw notFound()
    return jsonResponse(200, await this.#json(rotated, secretToken), PRIVATE)
  }

  /**
   * `GET /api/applications/{appToken}/usage?granularity=hour&from=...&to=...`: the
   * application's usage, as `gate.usage.query` gives it (every bucket of the range, empty
   * ones included). `from` and `to` are epoch milliseconds or ISO 8601 times; default the
   * last 24 hours, by hour. At most {@link MAX_READ_BUCKETS} buckets; the read spends
   * {@link usageReadCost} units of the user's budget before the store is read.
   */
  async usage(user: GateUser, appToken: string, request: GateRequest, spend: SpendBudget): Promise<GateResponse> {
    const params = queryParams(request.url)
    const repeated = params.firstDuplicated(USAGE_PARAMS)
    if (repeated !== undefined) throw new PlatformError('invalid_request', `${repeated} was sent more than once`)
    const granularity = params.get('granularity') ?? 'hour'
    if (granularity !== 'minute' && granularity !== 'hour' && granularity !== 'day') throw new PlatformError('invalid_request', 'granularity must be minute, hour or day')
    const to = time(params, 'to') ?? Date.now()
    const from = time(params, 'from') ?? to - GRANULARITY_MS.day
    const step = GRANULARITY_MS[granularity]
    const buckets = Math.ceil((to - (from - (from % step))) / step)
    if (buckets > MAX_READ_BUCKETS) {
      throw new PlatformError('invalid_request', `A usage read spans at most ${MAX_READ_BUCKETS} buckets (a day by the minute, 62 days by the hour); this one would span ${buckets}: narrow the range or use a coarser granularity`)
    }
    const headers = await spend(usageReadCost(Math.max(0, buckets)))
    await this.#own(user, appToken)
    const series: UsageSeries = await invalidAsRequest(() => this.#usage.query({ appToken, granularity: granularity as UsageGranularity, from, to }))
    return jsonResponse(200, series, { ...headers, ...PRIVATE })
  }

  /** The JSON of an application, with the limits it is near read now. */
  async #json(application: Application, secretToken?: string): Promise<ApplicationJson> {
    return applicationJson(application, await this.#applications.nearLimitOf(application), secretToken)
  }

  /** The user's application, or `not_found`: the same for another user's or an operator's as for none. */
  async #own(user: GateUser, appToken: string): Promise<Application> {
    const application = isPlausibleAppToken(appToken) ? await this.#applications.find(appToken) : undefined
    if (application === undefined || application.ownerId !== user.id) throw notFound()
    return application
  }

  /** The `graceMs` a rotation asks for: digits (a JSON number too); its bounds are the rotation's to check. */
  async #graceMs(request: GateRequest): Promise<number | undefined> {
    const body = await bodyParams(request, BODY_LIMIT, this.#bodyTimeoutMs, ['graceMs'])
    if (typeof body === 'string') throw bodyError(body)
    const params = Params.merge(queryParams(request.url), body)
    if (params.firstDuplicated(['graceMs']) !== undefined) throw new PlatformError('invalid_request', 'graceMs was sent more than once')
    if (!params.has('graceMs')) return undefined
    const text = params.get('graceMs') ?? ''
    if (!/^\d{1,16}$/.test(text)) throw new PlatformError('invalid_request', `graceMs must be a whole number of milliseconds from 0 (retire the old secret now) to ${MAX_SECRET_GRACE_MS} (7 days)`)
    return Number(text)
  }

  async #body(request: GateRequest): Promise<Params> {
    const body = await bodyParams(request, BODY_LIMIT, this.#bodyTimeoutMs)
    if (typeof body === 'string') throw bodyError(body)
    const repeated = body.firstDuplicated(FIELDS)
    if (repeated !== undefined) throw new PlatformError('invalid_request', `${repeated} was sent more than once`)
    const unstorable = body.unstorable(FIELDS, 2048)
    if (unstorable !== undefined) throw new PlatformError('invalid_request', unstorable)
    return body
  }
}

function notFound(): PlatformError {
  return new PlatformError('not_found', 'You have no application with this app token')
}

/** A time parameter: epoch ms, or an ISO 8601 time. @throws {PlatformError} `invalid_request` */
function time(params: Params, name: string): number | undefined {
  const text = params.get(name)
  if (text === undefined) return undefined
  const ms = /^\d{1,16}$/.test(text) ? Number(text) : /^\d{4}-\d\d-\d\d/.test(text) ? Date.parse(text) : NaN
  if (!Number.isSafeInteger(ms)) throw new PlatformError('invalid_request', `${name} must be a time in epoch milliseconds or ISO 8601`)
  return ms
}

/** The management API's `TypeError`s (a bad Callback Prefix, a bad range) are the client's mistake here: 400 with the reason. */
async function invalidAsRequest<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (error instanceof TypeError) throw new PlatformError('invalid_request', error.message.replace(/^open-data-gate: /, ''))
    throw error
  }
}
