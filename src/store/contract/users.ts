/**
 * The users slice: accounts, found by id and by username. Needed by HTTP Basic (`basic`),
 * the OAuth server (`oauth`), the current-user endpoints, the API key endpoints and
 * connected apps.
 */
import type { Awaitable, StoreLifecycle } from './lifecycle.js'

/** An account. */
export interface UserRecord {
  /** Platform-style id, like `abcd-1234`. */
  readonly id: string
  /**
   * The sign-in name as the gate prepared it (RFC 8265 UsernameCaseMapped: width mapped,
   * lower case, NFC; a name saved before that rule: NFC, lower case); unique.
   */
  readonly username: string
  /**
   * The username's UTS #39 skeleton (what it looks like), set by the gate on every new
   * user: two users whose names look alike share one. A store keeps it and finds users by
   * it ({@link UserStore.getUserBySkeleton}); absent or `null` on a record saved before it
   * existed. Never shown to anyone.
   */
  readonly usernameSkeleton?: string | null
  readonly screenName: string
  readonly displayName: string
  readonly email: string
  /** What the user may do, as the host application names it. */
  readonly rights: readonly string[]
  /** scrypt hash with its salt and parameters, or `null` for an account without a password (single sign-on). */
  readonly passwordHash: string | null
  readonly createdAt: number
  readonly updatedAt: number
}

/** The fields of a user that can change. */
export type UserPatch = Partial<Pick<UserRecord, 'screenName' | 'displayName' | 'email' | 'rights' | 'passwordHash' | 'updatedAt'>>

/** The users slice of the contract. */
export interface UserStore extends StoreLifecycle {
  /**
   * Saves a new user.
   * @throws when a user with the same id or username exists
   */
  insertUser(record: UserRecord): Awaitable<void>
  getUser(id: string): Awaitable<UserRecord | undefined>
  /** Looks a user up by the normalised username. Called on every password-authenticated request. */
  getUserByUsername(username: string): Awaitable<UserRecord | undefined>
  /**
   * A user whose `usernameSkeleton` is this one (any of them when several are), or
   * `undefined`: the gate refuses a new username that looks like an existing one. Called
   * only when a user is created; index it. Optional: without it, look-alike usernames in
   * other scripts (`аda` in Cyrillic beside `ada`) are not refused; invisible characters,
   * width and case variants are refused either way.
   */
  getUserBySkeleton?(skeleton: string): Awaitable<UserRecord | undefined>
  updateUser(id: string, patch: UserPatch): Awaitable<UserRecord | undefined>
  /** Deletes a user; their keys and tokens stop working because they no longer resolve to a user. */
  deleteUser(id: string): Awaitable<boolean>
  /**
   * Every user, oldest first: for operators (`open-data-gate users list`), never on a
   * request's path. Optional: without it `gate.users.list()` says the store cannot list.
   */
  listUsers?(): Awaitable<UserRecord[]>
}
