/**
 * The applications slice: saving, finding, listing, patching (field by field, concurrently) and
 * deleting applications, and announcing their changes.
 */
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { group, type StoreCheck } from '../check.js'
import { application, freshAppToken, freshUserId, LATER, LATEST, T0 } from '../fixtures.js'

export const applicationChecks: readonly StoreCheck[] = group('applications', ['applications'], [
  [
    'returns an application it saved, and undefined for an unknown token',
    async (store) => {
      const token = freshAppToken()
      await store.insertApplication(application(token))
      assert.deepEqual(await store.getApplication(token), application(token))
      assert.equal(await store.getApplication(freshAppToken()), undefined)
    },
  ],
  [
    'refuses to save a second application under the same token and keeps the first',
    async (store) => {
      const token = freshAppToken()
      await store.insertApplication(application(token, { name: 'first' }))
      await assert.rejects(async () => store.insertApplication(application(token, { name: 'second' })), 'a duplicate insert must throw')
      assert.equal((await store.getApplication(token))?.name, 'first')
    },
  ],
  [
    'lists saved applications, oldest first',
    async (store) => {
      const [a, b] = [freshAppToken(), freshAppToken()]
      const now = Date.now()
      await store.insertApplication(application(a, { createdAt: now - 1000, updatedAt: now - 1000 }))
      await store.insertApplication(application(b, { createdAt: now, updatedAt: now }))
      const tokens = (await store.listApplications()).map((r) => r.appToken)
      assert.ok(tokens.includes(a) && tokens.includes(b), 'both applications are listed')
      assert.ok(tokens.indexOf(a) < tokens.indexOf(b), 'the older application is listed first')
    },
  ],
  [
    'applies a patch and returns the new record, leaving other fields alone; undefined for an unknown token',
    async (store) => {
      const token = freshAppToken()
      await store.insertApplication(application(token))
      const updated = await store.updateApplication(token, { limit: 5000, callbackPrefix: null, updatedAt: LATER })
      assert.deepEqual(updated, application(token, { limit: 5000, callbackPrefix: null, updatedAt: LATER }))
      assert.deepEqual(await store.getApplication(token), updated)
      assert.equal(await store.updateApplication(freshAppToken(), { limit: 1 }), undefined)
    },
  ],
  [
    'applies concurrent patches of different fields without losing any',
    async (store) => {
      const token = freshAppToken()
      await store.insertApplication(application(token))
      await Promise.all([
        store.updateApplication(token, { name: 'renamed' }),
        store.updateApplication(token, { limit: 5000 }),
        store.updateApplication(token, { secretHash: 'd'.repeat(64) }),
        store.updateApplication(token, { callbackPrefix: 'https://other.example/' }),
      ])
      assert.deepEqual(
        await store.getApplication(token),
        application(token, { name: 'renamed', limit: 5000, secretHash: 'd'.repeat(64), callbackPrefix: 'https://other.example/' }),
      )
    },
  ],
  [
    'announces every change of an application to every attached sink, if it announces changes at all',
    async (store) => {
      if (store.attach === undefined) return
      const token = freshAppToken()
      const heard = [0, 0]
      for (const i of [0, 1]) store.attach({ rateKeyEvicted: () => {}, applicationChanged: (appToken) => void (appToken === token && heard[i]!++) })
      // Announcements may travel through a server (pub/sub, NOTIFY), and a store may hear
      // its own change twice (once at once, once as the echo): at least one each counts.
      const heardSince = async (before: readonly number[], withinMs: number) => {
        for (const deadline = Date.now() + withinMs; Date.now() < deadline && heard.some((n, i) => n <= before[i]!); ) await sleep(10)
        return heard.every((n, i) => n > before[i]!)
      }
      /** Waits until no announcement has arrived for 50 ms, so a late echo is not taken for the next change's. */
      const settle = async () => {
        let last = heard.join()
        for (let quietMs = 0, deadline = Date.now() + 1000; quietMs < 50 && Date.now() < deadline; ) {
          await sleep(10)
          quietMs = heard.join() === last ? quietMs + 10 : 0
          last = heard.join()
        }
      }
      await store.insertApplication(application(token))
      // The contract lets a store that only this process sees stay silent.
      for (const deadline = Date.now() + 300; Date.now() < deadline && heard.every((n) => n === 0); ) await sleep(10)
      if (heard.every((n) => n === 0)) return
      assert.ok(await heardSince([0, 0], 1000), `both sinks hear of the insert (heard ${heard.join(' and ')} times)`)
      for (const [change, act] of [
        ['update', () => store.updateApplication(token, { limit: 10 })],
        ['delete', () => store.deleteApplication(token)],
      ] as const) {
        await settle()
        const before = [...heard]
        await act()
        assert.ok(await heardSince(before, 1000), `both sinks hear of the ${change}`)
      }
    },
  ],
  [
    'keeps who registered an application, and lists an owner\'s applications only, oldest first',
    async (store) => {
      const [ada, bob] = [freshUserId(), freshUserId()]
      const [a1, a2, b1, operator] = [freshAppToken(), freshAppToken(), freshAppToken(), freshAppToken()]
      await store.insertApplication(application(a2, { ownerId: ada, createdAt: T0 + 1000, updatedAt: T0 + 1000 }))
      await store.insertApplication(application(a1, { ownerId: ada }))
      await store.insertApplication(application(b1, { ownerId: bob }))
      await store.insertApplication(application(operator))
      assert.deepEqual(await store.getApplication(a1), application(a1, { ownerId: ada }))
      assert.equal((await store.getApplication(operator))?.ownerId, null, 'an operator\'s application has no owner')
      assert.deepEqual(
        (await store.listApplications({ ownerId: ada })).map((r) => r.appToken),
        [a1, a2],
      )
      assert.deepEqual(await store.listApplications({ ownerId: bob }), [application(b1, { ownerId: bob })])
      assert.deepEqual(await store.listApplications({ ownerId: freshUserId() }), [])
      await store.deleteApplication(a1)
      assert.deepEqual(
        (await store.listApplications({ ownerId: ada })).map((r) => r.appToken),
        [a2],
        'a deleted application leaves its owner\'s list',
      )
      const everyone = (await store.listApplications()).map((r) => r.appToken)
      assert.ok([a2, b1, operator].every((token) => everyone.includes(token)), 'the unfiltered list has every owner\'s and the operator\'s')
    },
  ],
  [
    'keeps the per-owner cap when 30 registrations race: 15 registered and a cap of 20 leave exactly 20',
    async (store) => {
      const owner = freshUserId()
      const limits = { maxPerOwner: 20 }
      for (let i = 0; i < 15; i++) assert.equal(await store.insertApplication(application(freshAppToken(), { ownerId: owner }), limits), 'created')
      // Another owner's and the operator's applications count for nothing.
      await store.insertApplication(application(freshAppToken(), { ownerId: freshUserId() }), limits)
      await store.insertApplication(application(freshAppToken()))
      const results = await Promise.all(Array.from({ length: 30 }, () => store.insertApplication(application(freshAppToken(), { ownerId: owner }), limits)))
      assert.equal(results.filter((r) => r === 'created').length, 5, 'registrations that succeeded')
      assert.equal(results.filter((r) => r === 'owner-limit').length, 25, 'registrations refused for the cap')
      assert.equal((await store.listApplications({ ownerId: owner })).length, 20, 'the owner\'s applications after the race')
      // Deleting one makes room for one.
      const [first] = await store.listApplications({ ownerId: owner })
      await store.deleteApplication(first!.appToken)
      assert.equal(await store.insertApplication(application(freshAppToken(), { ownerId: owner }), limits), 'created')
      assert.equal(await store.insertApplication(application(freshAppToken(), { ownerId: owner }), limits), 'owner-limit')
      // Without limits (an operator) the insert only saves.
      assert.equal(await store.insertApplication(application(freshAppToken(), { ownerId: owner })), 'created')
    },
  ],
  [
    'keeps a rotated secret\'s previous hash and its expiry, and clears them',
    async (store) => {
      const token = freshAppToken()
      await store.insertApplication(application(token))
      const rotated = await store.updateApplication(token, { secretHash: 'e'.repeat(64), previousSecretHash: 'a'.repeat(64), previousSecretExpiresAt: LATER })
      assert.deepEqual(rotated, application(token, { secretHash: 'e'.repeat(64), previousSecretHash: 'a'.repeat(64), previousSecretExpiresAt: LATER }))
      assert.deepEqual(await store.getApplication(token), rotated)
      const cleared = await store.updateApplication(token, { previousSecretHash: null, previousSecretExpiresAt: null })
      assert.deepEqual(cleared, application(token, { secretHash: 'e'.repeat(64) }))
    },
  ],
  [
    'keeps an application\'s suspension (when and why), returns it, and clears it, leaving the rest alone',
    async (store) => {
      const token = freshAppToken()
      await store.insertApplication(application(token, { limit: 50 }))
      const reason = 'Scraping beyond its limit; write to data@city.example — «ville»'
      const suspended = await store.updateApplication(token, { suspendedAt: LATER, suspensionReason: reason, updatedAt: LATER })
      assert.deepEqual(suspended, application(token, { limit: 50, suspendedAt: LATER, suspensionReason: reason, updatedAt: LATER }))
      assert.deepEqual(await store.getApplication(token), suspended, 'a suspended application reads back suspended')
      assert.deepEqual((await store.listApplications()).find((r) => r.appToken === token), suspended, 'and is listed suspended')
      // A patch of other fields leaves the suspension as it was, and the suspension leaves them.
      await Promise.all([store.updateApplication(token, { name: 'renamed' }), store.updateApplication(token, { suspensionReason: 'Another reason' })])
      assert.deepEqual(await store.getApplication(token), application(token, { name: 'renamed', limit: 50, suspendedAt: LATER, suspensionReason: 'Another reason', updatedAt: LATER }))
      const resumed = await store.updateApplication(token, { suspendedAt: null, suspensionReason: null, updatedAt: LATEST })
      assert.deepEqual(resumed, application(token, { name: 'renamed', limit: 50, updatedAt: LATEST }), 'resuming clears both fields')
      assert.deepEqual(await store.getApplication(token), resumed)
      // Saved suspended, as an import of a suspended application would be.
      const imported = freshAppToken()
      await store.insertApplication(application(imported, { suspendedAt: T0, suspensionReason: 'Imported suspended' }))
      assert.deepEqual(await store.getApplication(imported), application(imported, { suspendedAt: T0, suspensionReason: 'Imported suspended' }))
    },
  ],
  [
    'keeps an application\'s plan, returns and lists it, and clears it, leaving the rest alone',
    async (store) => {
      const token = freshAppToken()
      await store.insertApplication(application(token, { limit: 50 }))
      const onPlan = await store.updateApplication(token, { plan: 'partner-2026', updatedAt: LATER })
      assert.deepEqual(onPlan, application(token, { limit: 50, plan: 'partner-2026', updatedAt: LATER }))
      assert.deepEqual(await store.getApplication(token), onPlan, 'an application on a plan reads back on it')
      assert.deepEqual((await store.listApplications()).find((r) => r.appToken === token), onPlan, 'and is listed on it')
      // A patch of other fields leaves the plan as it was, and a plan change leaves them, also at once.
      await store.updateApplication(token, { name: 'renamed' })
      assert.deepEqual(await store.getApplication(token), application(token, { name: 'renamed', limit: 50, plan: 'partner-2026', updatedAt: LATER }))
      await Promise.all([store.updateApplication(token, { limit: 70 }), store.updateApplication(token, { plan: 'free' })])
      assert.deepEqual(await store.getApplication(token), application(token, { name: 'renamed', limit: 70, plan: 'free', updatedAt: LATER }))
      const cleared = await store.updateApplication(token, { plan: null, updatedAt: LATEST })
      assert.deepEqual(cleared, application(token, { name: 'renamed', limit: 70, updatedAt: LATEST }), 'null puts it back on the default plan')
      assert.deepEqual(await store.getApplication(token), cleared)
      // Saved on a plan, as an import would be.
      const imported = freshAppToken()
      await store.insertApplication(application(imported, { plan: 'partner-2026' }))
      assert.deepEqual(await store.getApplication(imported), application(imported, { plan: 'partner-2026' }))
    },
  ],
  [
    'deletes an application once',
    async (store) => {
      const token = freshAppToken()
      await store.insertApplication(application(token))
      assert.equal(await store.deleteApplication(token), true)
      assert.equal(await store.getApplication(token), undefined)
      assert.equal(await store.deleteApplication(token), false)
    },
  ],
])
