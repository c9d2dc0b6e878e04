/**
 * The slices of the storage contract at run time: which methods make each slice, which
 * slices a store has, which ones a gate's features need, and the check `createGate` makes
 * so that a store lacking a slice is refused when the gate is made, naming the slice, its
 * missing methods and the options that need it, rather than failing on a request.
 *
 * What needs what (the table in docs/reference/store-contract.md):
 * - every gate: applications, and rates (of `rateStore` when one is given);
 * - `basic` (HTTP Basic, passwords and API keys): users, API keys;
 * - `oauth` (the authorization server and its tokens): users, OAuth;
 * - `currentUser`: users; `apiKeyEndpoints`: users, API keys; `connectedApps`: users, OAuth.
 */
import type { ApiKeyStore } from './contract/api-keys.js'
import type { ApplicationStore } from './contract/applications.js'
import type { OAuthStore } from './contract/oauth.js'
import type { RateStore } from './contract/rates.js'
import type { UserStore } from './contract/users.js'
import type { UsageStore } from './usage-contract.js'

/** A slice of the contract, by the name the gate's errors and the conformance kit use. */
export type StoreSlice = 'applications' | 'rates' | 'users' | 'apiKeys' | 'oauth' | 'usage'

/** The required methods of an interface (not `attach`, `close` or the optional ones). */
type RequiredMethods<T> = { [K in keyof T]-?: undefined extends T[K] ? never : T[K] extends (...args: never[]) => unknown ? K : never }[keyof T]

/** `list` names every required method of `T`, and nothing else: checked by the compiler. */
function methodsOf<T>() {
  return <const L extends ReadonlyArray<RequiredMethods<T>>>(list: L & (Exclude<RequiredMethods<T>, L[number]> extends never ? unknown : never)): L => list
}

/** The required methods of each slice, in the order the contract lists them. */
export const SLICE_METHODS = {
  applications: methodsOf<ApplicationStore>()(['insertApplication', 'getApplication', 'listApplications', 'updateApplication', 'deleteApplication']),
  users: methodsOf<UserStore>()(['insertUser', 'getUser', 'getUserByUsername', 'updateUser', 'deleteUser']),
  apiKeys: methodsOf<ApiKeyStore>()(['insertApiKey', 'getApiKey', 'listApiKeys', 'updateApiKey', 'revokeApiKey']),
  oauth: methodsOf<OAuthStore>()([
    'insertAccessToken',
    'getAccessToken',
    'revokeAccessToken',
    'revokeAccessTokens',
    'listAccessTokens',
    'recordGrant',
    'touchGrant',
    'getGrant',
    'listGrants',
    'deleteGrant',
    'insertAuthorizationCode',
    'getAuthorizationCode',
    'consumeAuthorizationCode',
    'insertSession',
    'getSession',
    'deleteSession',
    'trimSessions',
  ]),
  rates: methodsOf<RateStore>()(['consumeRate', 'resetRate']),
  usage: methodsOf<UsageStore>()(['addUsage', 'getUsage', 'topUsage']),
} as const

/** Every slice, in the order the contract lists them. */
export const STORE_SLICES: readonly StoreSlice[] = ['applications', 'users', 'apiKeys', 'oauth', 'rates']

/**
 * Every slice the conformance kit knows: the five of `GateStore`, and usage, which no
 * feature requires (without it the gate counts nothing) but which a store that has it must
 * get right.
 */
export const KIT_SLICES: readonly StoreSlice[] = [...STORE_SLICES, 'usage']

/** The slice a required method belongs to. */
export function sliceOf(method: string): StoreSlice | undefined {
  return STORE_SLICES.find((slice) => (SLICE_METHODS[slice] as readonly string[]).includes(method))
}

/** The methods of `slice` that `store` lacks (not a function), in contract order. */
export function missingMethods(store: unknown, slice: StoreSlice): string[] {
  const methods = typeof store === 'object' && store !== null ? (store as Record<string, unknown>) : {}
  return SLICE_METHODS[slice].filter((name) => typeof methods[name] !== 'function')
}

/**
 * The slices `store` implements at least in part (one method is enough): a slice half
 * done counts, so that the conformance kit checks it and names what is missing.
 */
export function slicesPresent(store: unknown): StoreSlice[] {
  return KIT_SLICES.filter((slice) => missingMethods(store, slice).length < SLICE_METHODS[slice].length)
}

/** The switches of a resolved configuration that decide which slices a gate needs. */
export interface FeatureSwitches {
  readonly store: object
  readonly rateStore: object
  readonly basic: { readonly enabled: boolean }
  readonly oauth: { readonly enabled: boolean }
  readonly currentUser: { readonly json: readonly string[]; readonly xml: readonly string[] }
  readonly apiKeyEndpoints: object | null
  readonly connectedApps: { readonly path: string | null; readonly page: string | null }
}

/** Every gate: the reason an always-needed slice gives in an error. */
const EVERY_GATE = 'every gate'

/**
 * Which slices the features that are on need of `store`, each with the options that need
 * it (`every gate` for applications and rates). Rates are needed of `store` only when no
 * separate `rateStore` holds them.
 */
export function slicesNeeded(config: FeatureSwitches): Map<StoreSlice, string[]> {
  const needed = new Map<StoreSlice, string[]>([['applications', [EVERY_GATE]]])
  const need = (slice: StoreSlice, option: string) => needed.set(slice, [...(needed.get(slice) ?? []), option])
  if (config.rateStore === config.store) need('rates', EVERY_GATE)
  if (config.basic.enabled) {
    need('users', 'basic')
    need('apiKeys', 'basic')
  }
  if (config.oauth.enabled) {
    need('users', 'oauth')
    need('oauth', 'oauth')
  }
  if (config.currentUser.json.length > 0 || config.currentUser.xml.length > 0) need('users', 'currentUser')
  if (config.apiKeyEndpoints !== null) {
    need('users', 'apiKeyEndpoints')
    need('apiKeys', 'apiKeyEndpoints')
  }
  if (config.connectedApps.path !== null || config.connectedApps.page !== null) {
    need('users', 'connectedApps')
    need('oauth', 'connectedApps')
  }
  return needed
}

/**
 * Refuses a store that lacks a method of a slice the gate's features need.
 * @throws {TypeError} naming each missing slice, its missing methods, and the options that need it
 */
export function assertStoreServes(config: FeatureSwitches): void {
  const problems: string[] = []
  const offSwitches: string[] = []
  for (const [slice, options] of slicesNeeded(config)) {
    const missing = missingMethods(config.store, slice)
    if (missing.length === 0) continue
    const who = options.includes(EVERY_GATE) ? `${EVERY_GATE} needs` : `${listed(options.map((option) => `\`${option}\``))} ${options.length === 1 ? 'needs' : 'need'}`
    problems.push(`${missing.join(', ')} (the ${slice} slice, which ${who}${slice === 'rates' ? ', unless a rateStore holds the rates' : ''})`)
    for (const option of options) if (option !== EVERY_GATE && !offSwitches.includes(option)) offSwitches.push(option)
  }
  if (problems.length === 0) return
  const remedy = offSwitches.length === 0 ? 'Implement the slice' : `Implement the slice, or turn off what needs it (${offSwitches.map((option) => `${option}: false`).join(', ')})`
  throw new TypeError(`open-data-gate: store must implement the GateStore interface for the features that are on; it lacks ${problems.join('; and ')}. ${remedy}: see docs/reference/store-contract.md`)
}

/** `a`, `a and b`, `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`
}

/** Marks the stand-ins of {@link missingMethod}, so that {@link hasSlice} sees through them. */
const MISSING = Symbol('open-data-gate: a method the store lacks')

/** A stand-in for a method the store lacks: the gate never calls it with the feature off; an operator's call says why it fails. */
export function missingMethod(name: string): () => never {
  const standIn = () => {
    throw new TypeError(`open-data-gate: the store has no ${name} (the ${sliceOf(name) ?? 'optional'} slice of the contract), so this operation is not available with it`)
  }
  return Object.assign(standIn, { [MISSING]: true })
}

/**
 * Whether `store` (the store itself, or the gate's guarded view of it) has every method of
 * `slice`: what a record's deletion asks before revoking the access tokens that name it
 * (a store without the OAuth slice holds none).
 */
export function hasSlice(store: unknown, slice: StoreSlice): boolean {
  if (missingMethods(store, slice).length > 0) return false
  const methods = store as Record<string, { [MISSING]?: true }>
  return SLICE_METHODS[slice].every((name) => methods[name]?.[MISSING] !== true)
}
