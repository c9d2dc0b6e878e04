/**
 * Connected apps: `gate.grants`. The applications a user authorized, and the way to take
 * an authorization back. A grant is recorded when the user presses Allow on the consent
 * page, and when a host issues a token with `gate.tokens.issue`; revoking it revokes every
 * token of that user for that application and forgets the consent.
 *
 * @see docs/guides/connected-apps.md
 */
import type { GateStore, GrantRecord } from '../store/store.js'

/** An application the user authorized, as `gate.grants.list` and `GET /api/oauth/grants` show it. */
export interface ConnectedApp {
  /** The application's app token (its OAuth `client_id`). */
  readonly appToken: string
  /**
   * The application's name, or `null` when it is gone from the store while the user still
   * holds live tokens for it (`gate.applications.delete` revokes them; a record deleted some
   * other way may not have). A deleted application without live tokens is not listed.
   */
  readonly name: string | null
  /** When the user first authorized it (epoch ms). */
  readonly firstAuthorizedAt: number
  /** The latest approval, token issue or token use, the last at most daily (epoch ms). */
  readonly lastUsedAt: number
  /** How many of the user's access tokens for it are neither revoked nor expired. */
  readonly liveTokens: number
}

/** `gate.grants`: what a user authorized, and revoking it. */
export class Grants {
  readonly #store: GateStore

  constructor(store: GateStore) {
    this.#store = store
  }

  /**
   * The applications a user authorized, oldest first. An application holding a live token
   * of the user without a grant on record (a token issued before grants were kept) is listed
   * too, from its tokens' dates, so that every live access can be seen and revoked.
   * @example
   * for (const app of await gate.grants.list(user.id)) console.log(app.name, app.liveTokens)
   */
  async list(userId: string): Promise<ConnectedApp[]> {
    const [grants, tokens] = await Promise.all([this.#store.listGrants(userId), this.#store.listAccessTokens(userId)])
    const live = new Map<string, { count: number; first: number; last: number }>()
    for (const token of tokens) {
      const seen = live.get(token.appToken)
      if (seen === undefined) live.set(token.appToken, { count: 1, first: token.createdAt, last: token.createdAt })
      else live.set(token.appToken, { count: seen.count + 1, first: Math.min(seen.first, token.createdAt), last: Math.max(seen.last, token.createdAt) })
    }
    const rows: GrantRecord[] = [...grants]
    const granted = new Set(grants.map((g) => g.appToken))
    for (const [appToken, seen] of live) {
      if (!granted.has(appToken)) rows.push({ userId, appToken, firstAuthorizedAt: seen.first, lastUsedAt: seen.last })
    }
    rows.sort((a, b) => a.firstAuthorizedAt - b.firstAuthorizedAt || (a.appToken < b.appToken ? -1 : a.appToken > b.appToken ? 1 : 0))
    const applications = await Promise.all(rows.map((row) => this.#store.getApplication(row.appToken)))
    const apps: ConnectedApp[] = []
    rows.forEach((row, i) => {
      const liveTokens = live.get(row.appToken)?.count ?? 0
      // A deleted application's tokens were revoked with it: its grant is nothing to show.
      const name = applications[i]?.name ?? null
      if (name === null && liveTokens === 0) return
      apps.push({ appToken: row.appToken, name, firstAuthorizedAt: row.firstAuthorizedAt, lastUsedAt: row.lastUsedAt, liveTokens })
    })
    return apps
  }

  /**
   * Revokes every token of the user for the application, everywhere at once, and forgets the
   * consent: the next authorize asks again. The grant goes first, so that a code exchanged
   * meanwhile (the token endpoint checks the grant after saving its token) cannot leave a
   * live token behind.
   * @returns `false` when the application was not connected (no grant, no live token)
   * @example
   * await gate.grants.revoke(user.id, appToken)
   */
  async revoke(userId: string, appToken: string): Promise<boolean> {
    const forgotten = await this.#store.deleteGrant(userId, appToken)
    const revoked = await this.#store.revokeAccessTokens({ userId, appToken }, Date.now())
    return forgotten || revoked > 0
  }
}
