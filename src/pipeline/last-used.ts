/**
 * When an API key or a user's grant to an application was last used: written in the
 * background, at most daily, never holding up the request that used it. A failed write
 * has been reported by the store's guard; the request was served all the same.
 *
 * @see docs/guides/api-key-endpoints.md; docs/guides/connected-apps.md
 */
import { LRUCache } from 'lru-cache'
import type { AccessTokenRecord, GateStore } from '../store/store.js'

/**
 * Never store a `lastUsedAt` (an API key's, a grant's) more often than this: it is a write
 * on the hot path. A day, as the platform does: a key used at 9:00 on Monday gets a new
 * value at its first use after 9:00 on Tuesday.
 */
const LAST_USED_RESOLUTION_MS = 86_400_000

export class LastUsed {
  readonly #store: GateStore
  /** When each key was last written from this process, by key id. */
  readonly #keyWritten = new LRUCache<string, number>({ max: 10_000 })
  /** When each user's grant to an application was last known used, by `userId \0 appToken`. */
  readonly #grantUsed = new LRUCache<string, number>({ max: 10_000 })

  constructor(store: GateStore) {
    this.#store = store
  }

  /** Records when a key was last used, at most once a day per key. */
  apiKey(keyId: string, lastUsedAt: number | null): void {
    const now = Date.now()
    const written = Math.max(lastUsedAt ?? 0, this.#keyWritten.get(keyId) ?? 0)
    if (now - written < LAST_USED_RESOLUTION_MS) return
    this.#keyWritten.set(keyId, now)
    Promise.resolve()
      .then(() => this.#store.updateApiKey(keyId, { lastUsedAt: now }))
      .catch(() => {})
  }

  /**
   * Records when a user's grant to an application was last used: one store read per user
   * and application per day in this process, a write only when the stored value is a day
   * old, and never for a grant that is gone (revoked: its tokens are too, and a grant must
   * not come back by itself): the write is the store's `touchGrant`, one atomic step that
   * never creates a grant, so a revocation between the read and the write stays one.
   */
  grant(token: AccessTokenRecord): void {
    const key = `${token.userId}\0${token.appToken}`
    const now = Date.now()
    const known = this.#grantUsed.get(key)
    if (known !== undefined && now - known < LAST_USED_RESOLUTION_MS) return
    this.#grantUsed.set(key, now)
    Promise.resolve()
      .then(() => this.#store.getGrant(token.userId, token.appToken))
      .then((grant) => {
        if (grant === undefined) return
        if (now - grant.lastUsedAt < LAST_USED_RESOLUTION_MS) this.#grantUsed.set(key, grant.lastUsedAt)
        else return this.#store.touchGrant(token.userId, token.appToken, now)
      })
      .catch(() => {})
  }
}
