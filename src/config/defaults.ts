/**
 * Every default of `createGate`'s options, in one place: what the gate runs on when
 * an option is left out. The option types (config/options.ts) describe them for users;
 * the resolution (config/resolve.ts) reads them from here, so a default changes in one line. (The scrypt cost of new password
 * hashes, `DEFAULT_SCRYPT`, stays beside the hashing in src/secrets/passwords.ts, which
 * uses it without a configuration.)
 * @see docs/reference/options.md
 */

/** A budget: `limit` requests per `windowMs`. */
interface Budget {
  readonly limit: number
  readonly windowMs: number
}

/** Per registered application, keyed by its app token: 1000 per hour. */
export const DEFAULT_APPLICATION_LIMIT: Budget = { limit: 1000, windowMs: 3_600_000 }

/** Requests without an application token: 60 per hour. */
export const DEFAULT_ANONYMOUS_LIMIT: Budget = { limit: 60, windowMs: 3_600_000 }

/** How requests without a token share the anonymous budget: per client address. */
export const DEFAULT_ANONYMOUS_SCOPE = 'ip'

/** With the per-address scope, IPv6 clients are counted per /56. */
export const DEFAULT_ANONYMOUS_IPV6_SUBNET = 56

/** What the throttle does when the store fails: count in this process's memory. */
export const DEFAULT_ON_STORE_ERROR = 'memory'

/** A request with an OAuth access token and no `X-App-Token` counts against the token's application. */
export const DEFAULT_OAUTH_TOKEN_BUDGET = 'application'

/** Failed password attempts per username: 10 per 15 minutes. */
export const DEFAULT_LOGIN_FAILURES: Budget = { limit: 10, windowMs: 900_000 }

/** Failed password attempts per client address, across usernames: 20 per 15 minutes. */
export const DEFAULT_LOGIN_ADDRESS_FAILURES: Budget = { limit: 20, windowMs: 900_000 }

/** Failed OAuth client authentications per client and address: 10 per 15 minutes. */
export const DEFAULT_CLIENT_FAILURES: Budget = { limit: 10, windowMs: 900_000 }

/** Posts to the OAuth endpoints per client address: 60 per minute. */
export const DEFAULT_OAUTH_THROTTLE: Budget = { limit: 60, windowMs: 60_000 }

/** Which proxy headers trusted proxies set. */
export const DEFAULT_PROXY_HEADERS = 'x-forwarded'

/** A store call that takes longer fails with a `StoreError`: 1 s. */
export const DEFAULT_STORE_TIMEOUT_MS = 1000

/** How long the gate waits for a request body it reads itself: 10 s. */
export const DEFAULT_BODY_TIMEOUT_MS = 10_000

/** How long this process answers from its own copy of an application record: 5 s. */
export const DEFAULT_APPLICATION_CACHE_MS = 5000

/** How long a verified username and password stay verified in this process: 5 minutes. */
export const DEFAULT_PASSWORD_CACHE_TTL_MS = 300_000

/** Password verifications at once, waiting in all, and waiting per address. */
export const DEFAULT_HASHING = { concurrency: 2, queue: 64, queuePerAddress: 4 } as const

/** Lifetime of issued access tokens: 24 hours. */
export const DEFAULT_ACCESS_TOKEN_TTL_MS = 86_400_000

/** Lifetime of authorization codes: 60 s. */
export const DEFAULT_CODE_TTL_MS = 60_000

/** The longest lifetime an authorization code may be given: 10 minutes (RFC 6749 §4.1.2). */
export const MAX_CODE_TTL_MS = 600_000

/** How long a sign-in on the gate's own login page lasts: 1 hour. */
export const DEFAULT_SESSION_TTL_MS = 3_600_000

/** Live sign-ins per user on the gate's own login page. */
export const DEFAULT_MAX_SESSIONS_PER_USER = 10

/** Where the OAuth endpoints live. */
export const DEFAULT_OAUTH_PATHS = {
  authorize: '/oauth/authorize',
  token: '/oauth/access_token',
  revoke: '/oauth/revoke',
  metadata: '/.well-known/oauth-authorization-server',
} as const

/** Where the current-user record is served. */
export const DEFAULT_CURRENT_USER_PATHS = {
  json: ['/api/users/current.json', '/users/current.json'],
  xml: ['/users/current.xml'],
} as const satisfies Record<string, readonly string[]>

/** Where the API key endpoints live. */
export const DEFAULT_API_KEY_PATH = '/api/api_keys'

/** Active (not deleted) API keys a user may hold. */
export const DEFAULT_MAX_ACTIVE_KEYS = 100

/** API keys a user may hold in all, deleted ones included (at least `maxActiveKeys`). */
export const DEFAULT_MAX_KEYS = 1000

/** How long a deleted API key is kept before the store purges it, unless `apiKeyEndpoints.deletedKeyRetentionMs` says otherwise: 30 days. */
export const DEFAULT_DELETED_KEY_RETENTION_MS = 30 * 86_400_000

/** Where the connected-apps JSON endpoints and page live. */
export const DEFAULT_CONNECTED_APPS_PATHS = { path: '/api/oauth/grants', page: '/oauth/grants' } as const

/** Where the self-service application endpoints live. */
export const DEFAULT_APPLICATIONS_PATH = '/api/applications'

/** Applications one user may register themselves. */
export const DEFAULT_MAX_APPLICATIONS_PER_USER = 20

/** Registrations one user may make: 10 per hour. */
export const DEFAULT_REGISTRATIONS = { limit: 10, windowMs: 3_600_000 } as const

/** What one user may ask of the self-service endpoints: 60 units a minute (a usage read of a day by the minute is 15). */
export const DEFAULT_SELF_SERVICE_BUDGET = { limit: 60, windowMs: 60_000 } as const

/**
 * How long a rotated secret token keeps working unless the rotation says otherwise: one
 * hour, long enough to roll a deployment, short enough that a leaked secret rotated
 * without a choice is not worth much for long. 0 retires it at once (a leak).
 */
export const DEFAULT_SECRET_GRACE_MS = 3_600_000

/** The longest grace a rotation may give the secret it replaces: 7 days. */
export const MAX_SECRET_GRACE_MS = 604_800_000

/** The realm named in `WWW-Authenticate` challenges. */
export const DEFAULT_REALM = 'api'
