/**
 * The users slice: finding users by id, username and skeleton, patching, deleting, listing.
 */
import assert from 'node:assert/strict'
import { group, type StoreCheck } from '../check.js'
import { freshUserId, LATER, user } from '../fixtures.js'

export const userChecks: readonly StoreCheck[] = group('users', ['users'], [
  [
    'finds a saved user by id and by username',
    async (store) => {
      const id = freshUserId()
      await store.insertUser(user(id))
      assert.deepEqual(await store.getUser(id), user(id))
      assert.deepEqual(await store.getUserByUsername(`user-${id}`), user(id))
      assert.equal(await store.getUser(freshUserId()), undefined)
      assert.equal(await store.getUserByUsername(`user-${freshUserId()}`), undefined)
    },
  ],
  [
    'refuses a second user with the same id or the same username',
    async (store) => {
      const id = freshUserId()
      await store.insertUser(user(id))
      await assert.rejects(async () => store.insertUser(user(id, { username: `user-${freshUserId()}` })), 'a duplicate id must throw')
      await assert.rejects(async () => store.insertUser(user(freshUserId(), { username: `user-${id}` })), 'a duplicate username must throw')
    },
  ],
  [
    'updates a user, including clearing the password, and finds the new record by username',
    async (store) => {
      const id = freshUserId()
      await store.insertUser(user(id))
      const updated = await store.updateUser(id, { passwordHash: null, rights: [], displayName: 'A. L.', updatedAt: LATER })
      assert.deepEqual(updated, user(id, { passwordHash: null, rights: [], displayName: 'A. L.', updatedAt: LATER }))
      assert.deepEqual(await store.getUserByUsername(`user-${id}`), updated)
      assert.equal(await store.updateUser(freshUserId(), { email: 'x@example.org' }), undefined)
    },
  ],
  [
    'applies concurrent patches of different fields without losing any',
    async (store) => {
      const id = freshUserId()
      await store.insertUser(user(id))
      await Promise.all([
        store.updateUser(id, { displayName: 'Countess of Lovelace' }),
        store.updateUser(id, { email: 'ada@analytical.example' }),
        store.updateUser(id, { rights: ['read_private', 'edit'] }),
        store.updateUser(id, { passwordHash: null }),
      ])
      assert.deepEqual(
        await store.getUser(id),
        user(id, { displayName: 'Countess of Lovelace', email: 'ada@analytical.example', rights: ['read_private', 'edit'], passwordHash: null }),
      )
    },
  ],
  [
    'deletes a user, and frees the username',
    async (store) => {
      const id = freshUserId()
      await store.insertUser(user(id))
      assert.equal(await store.deleteUser(id), true)
      assert.equal(await store.getUser(id), undefined)
      assert.equal(await store.getUserByUsername(`user-${id}`), undefined)
      assert.equal(await store.deleteUser(id), false)
      await store.insertUser(user(freshUserId(), { username: `user-${id}` }))
    },
  ],
  [
    'finds a user by the skeleton of the username, and no deleted one (getUserBySkeleton is optional)',
    async (store) => {
      if (store.getUserBySkeleton === undefined) return
      const [a, b] = [freshUserId(), freshUserId()]
      await store.insertUser(user(a, { usernameSkeleton: `look-${a}` }))
      await store.insertUser(user(b, { usernameSkeleton: `look-${b}` }))
      assert.deepEqual(await store.getUserBySkeleton(`look-${a}`), user(a, { usernameSkeleton: `look-${a}` }))
      assert.equal((await store.getUserBySkeleton(`look-${b}`))?.id, b)
      assert.equal(await store.getUserBySkeleton(`look-${freshUserId()}`), undefined)
      await store.deleteUser(a)
      assert.equal(await store.getUserBySkeleton(`look-${a}`), undefined)
    },
  ],
  [
    'lists saved users, and no deleted one, when it can list (listUsers is optional)',
    async (store) => {
      if (store.listUsers === undefined) return
      const [a, b, gone] = [freshUserId(), freshUserId(), freshUserId()]
      for (const id of [a, b, gone]) await store.insertUser(user(id))
      await store.deleteUser(gone)
      const ids = (await store.listUsers()).map((u) => u.id)
      assert.ok(ids.includes(a) && ids.includes(b), 'every saved user is listed')
      assert.ok(!ids.includes(gone), 'a deleted user is not listed')
      assert.deepEqual((await store.listUsers()).find((u) => u.id === a), user(a))
    },
  ],
])
