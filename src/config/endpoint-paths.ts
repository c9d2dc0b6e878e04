/**
 * Where the OAuth and current-user endpoints live: options of {@link createGate} that are
 * only paths (config/options.ts holds the rest).
 * @see docs/reference/options.md
 */

/** Where the OAuth endpoints live; `false` turns one off. */
export interface OAuthPaths {
  /** Default `/oauth/authorize`. */
  authorize?: string | false
  /** Default `/oauth/access_token`. */
  token?: string | false
  /** RFC 7009 revocation. Default `/oauth/revoke`. */
  revoke?: string | false
  /** RFC 8414 metadata. Default `/.well-known/oauth-authorization-server`. */
  metadata?: string | false
}

/** Where the gate serves the current-user record; `false` turns the endpoints off. */
export interface CurrentUserOptions {
  /** Default `['/api/users/current.json', '/users/current.json']`. */
  json?: readonly string[]
  /** Default `['/users/current.xml']`. */
  xml?: readonly string[]
}
