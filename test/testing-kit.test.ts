/**
 * The conformance kit, tested: a store that keeps the contract passes every check, and
 * each deliberately broken store fails exactly the checks that cover what it breaks,
 * by name.
 */
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { createGate, MemoryStore, type GateOptions, type GateStore } from '../src/index.js'
import { runChecks } from '../src/testing/check.js'
import { findPlaintexts, gateChecks, recordingStore } from '../src/testing/gate-checks.js'
import { sha256 } from '../src/secrets/tokens.js'
import { checkStore, describeStore, storeCheckNames } from '../src/testing/index.js'
import {
  asyncStore,
  countThenRevoke,
  expiresEarly,
  keepsOneSink,
  limitsOneByOne,
  withRequestLookup,
  nonAtomicRateStep,
  patchDropsFields,
  patchIgnoresSuspension,
  patchIgnoresPlan,
  readMergeWritePatch,
  readThenWriteConsume,
  touchRecordsGrant,
} from './support/broken-stores.js'

/** The checks of the optional lookupRequest (with one rate step, and with several limits), which a store without it skips. */
const LOOKUP_CHECKS = storeCheckNames.filter((name) => name.startsWith('request lookup (optional): ') || name.startsWith('request lookup with several limits (optional): '))

const failedNames = async (store: GateStore) => (await checkStore(() => store)).failed.map((f) => f.name)

describe('checkStore', () => {
  it('passes MemoryStore on every check, and calls cleanup once with the store it made', async () => {
    const made: GateStore[] = []
    const cleaned: GateStore[] = []
    const report = await checkStore(
      () => {
        const store = new MemoryStore()
        made.push(store)
        return store
      },
      { cleanup: (store) => void cleaned.push(store) },
    )
    expect(report.failed).toEqual([])
    expect(report.passed).toEqual(storeCheckNames.filter((name) => !LOOKUP_CHECKS.includes(name)))
    expect(report.skipped).toEqual(LOOKUP_CHECKS.map((name) => ({ name, reason: expect.stringMatching(/does not implement the optional lookupRequest/) })))
    expect(made).toHaveLength(1)
    expect(cleaned).toEqual(made)
  })

  it('passes a store that answers every call asynchronously, as a networked one does', async () => {
    expect((await checkStore(() => asyncStore())).failed).toEqual([])
  })

  it('checks lookupRequest of a store that has it against the separate calls, and names the check a wrong answer fails', async () => {
    const report = await checkStore(() => withRequestLookup())
    expect(report.failed).toEqual([])
    expect(report.skipped).toEqual([])
    expect(report.passed).toEqual(expect.arrayContaining(LOOKUP_CHECKS))
    const broken = await checkStore(() => withRequestLookup('revoked token user'))
    expect(broken.failed.map((f) => f.name)).toEqual([
      'request lookup (optional): answers an access token with a fixed budget as the step, then the token and its user, would: live, revoked, expired, unknown, a user that is gone, at first sight or seen live before',
      "request lookup (optional): answers an access token with the token's budget: a live token takes the step and reads its user, any other takes the other step or none, at first sight or seen live before",
      // A token revoked after it was seen, sent with another application's token: it is not live, so the other step.
      "request lookup (optional): takes no step for a live token of another application, and reads no user when the token's budget refuses, at first sight or seen live before",
    ])
    expect(broken.failed[0]?.error).toMatch(/a revoked token: the records read/)
  })

  it('names the concurrent-consume checks when a code is consumed by a read, then a write', async () => {
    expect(await failedNames(readThenWriteConsume())).toEqual([
      'authorization codes: lets exactly one of 50 concurrent consumers win',
      'a gate over the store: answers 50 concurrent exchanges of one code with exactly one token, and revokes it as a replay',
    ])
  })

  it('names the exactness check when a rate step reads, then writes', async () => {
    expect(await failedNames(nonAtomicRateStep())).toEqual(['rate steps: allows exactly the limit when three times as many steps on one key run at once'])
  })

  it('names the all-or-nothing checks when a store takes several limits one by one', async () => {
    expect(await failedNames(limitsOneByOne())).toEqual([
      'several limits (optional): takes none when one refuses: a refused limit spends none of the others',
      'several limits (optional): lets exactly as many through as the tightest limit when 50 calls run at once, moving the others by that many',
    ])
  })

  it('names the patch checks when a patch replaces the fields it does not name', async () => {
    expect(await failedNames(patchDropsFields())).toEqual([
      'applications: applies a patch and returns the new record, leaving other fields alone; undefined for an unknown token',
      'applications: applies concurrent patches of different fields without losing any',
      "applications: keeps a rotated secret's previous hash and its expiry, and clears them",
      "applications: keeps an application's suspension (when and why), returns it, and clears it, leaving the rest alone",
      "applications: keeps an application's plan, returns and lists it, and clears it, leaving the rest alone",
      // Retiring the previous secret patches only it: a store that drops the rest loses the application's name and secret.
      'a gate over the store: retires a rotated secret seen over plain http, so no instance on the store accepts it after, and keeps the new one',
    ])
  })

  it('names the suspension check when a patch leaves the suspension out, and no other', async () => {
    const report = await checkStore(() => patchIgnoresSuspension())
    expect(report.failed.map((f) => f.name)).toEqual(["applications: keeps an application's suspension (when and why), returns it, and clears it, leaving the rest alone"])
    expect(report.failed[0]?.error).toMatch(/suspendedAt/)
  })

  it('names the plan check when a patch leaves the plan out, and no other', async () => {
    const report = await checkStore(() => patchIgnoresPlan())
    expect(report.failed.map((f) => f.name)).toEqual(["applications: keeps an application's plan, returns and lists it, and clears it, leaving the rest alone"])
    expect(report.failed[0]?.error).toMatch(/plan/)
  })

  it('names the concurrent-patch check when a patch reads, merges and writes the record', async () => {
    expect(await failedNames(readMergeWritePatch())).toEqual(['API keys: applies concurrent patches of different fields without losing any'])
  })

  it('names the race check when revoking counts tokens before it revokes them', async () => {
    expect(await failedNames(countThenRevoke())).toEqual(['access tokens: counts each token once when revocations by user, application, code and hash race'])
  })

  it('names the grant race check when noting a use reads the grant, then records it', async () => {
    expect(await failedNames(touchRecordsGrant())).toEqual(['grants: leaves no grant alive when uses of it race its revocation'])
  })

  it('names the expiry check when records vanish before they expire', async () => {
    const report = await checkStore(() => expiresEarly())
    expect(report.failed.map((f) => f.name)).toEqual(['expiry: keeps codes, tokens and sessions until they expire, and after that gives them back unchanged or not at all'])
    expect(report.failed[0]?.error).toMatch(/a code is kept until it expires/)
  })

  it('names the announcement check when a store keeps only the last sink attached', async () => {
    const report = await checkStore(() => keepsOneSink())
    expect(report.failed.map((f) => f.name)).toEqual(['applications: announces every change of an application to every attached sink, if it announces changes at all'])
    expect(report.failed[0]?.error).toMatch(/both sinks hear of the insert/)
  })

  it('fails a check whose store never answers, after the time limit, and goes on with the rest', async () => {
    const hanging = asyncStore(new MemoryStore(), { listApplications: () => new Promise(() => {}) })
    const report = await checkStore(() => hanging, { timeoutMs: 1_000 })
    expect(report.failed.map((f) => f.name)).toEqual([
      'applications: lists saved applications, oldest first',
      "applications: keeps who registered an application, and lists an owner's applications only, oldest first",
      'applications: keeps the per-owner cap when 30 registrations race: 15 registered and a cap of 20 leave exactly 20',
      "applications: keeps an application's suspension (when and why), returns it, and clears it, leaving the rest alone",
      "applications: keeps an application's plan, returns and lists it, and clears it, leaving the rest alone",
    ])
    expect(report.failed[0]?.error).toMatch(/did not finish within 1000 ms/)
    expect(report.passed).toHaveLength(storeCheckNames.length - LOOKUP_CHECKS.length - 5)
  })

  it('calls cleanup even when the factory made a store that fails every check', async () => {
    let cleaned = 0
    const unimplemented = new Proxy({} as GateStore, {
      get: (_, property) =>
        property === 'then'
          ? undefined
          : () => {
              throw new Error('not implemented')
            },
    })
    const report = await checkStore(() => unimplemented, { cleanup: () => void cleaned++ })
    expect(report.passed).toEqual([])
    expect(report.failed).toHaveLength(storeCheckNames.length)
    expect(cleaned).toBe(1)
  })

  it('gives every check a name of its own', () => {
    expect(new Set(storeCheckNames).size).toBe(storeCheckNames.length)
  })

  it('rejects a time limit that is not a positive number', () => {
    expect(() => checkStore(() => new MemoryStore(), { timeoutMs: 0 })).toThrow(/timeoutMs must be a positive number/)
  })
})

describe('the plaintext check', () => {
  // No honest store can keep a plaintext the gate never hands it, so the failure is
  // provoked the only way it can happen: a gate that leaks one into a store call.
  it('names the secret and the method when the gate hands the store a plaintext', async () => {
    const leakyGate = (options: GateOptions) => {
      const gate = createGate(options)
      const create = gate.users.create.bind(gate.users)
      gate.users.create = async (input) => {
        const user = await create(input)
        await options.store?.updateUser?.(user.id, { displayName: `debug: ${String(input.password)}` })
        return user
      }
      return gate
    }
    const report = await runChecks(gateChecks(leakyGate), () => new MemoryStore(), {})
    expect(report.failed.map((f) => f.name)).toEqual([
      'a gate over the store: never hands the store a plaintext password, key secret, client secret, code, access token or session cookie',
    ])
    expect(report.failed[0]?.error).toMatch(/the password reached the store in updateUser\(\)/)
    expect(report.failed[0]?.error).not.toMatch(/API key secret|access token reached/)
  })

  it('finds a secret as text, base64, hex or raw bytes in any argument, and not its hash', () => {
    const secret = 'Zm9vYmFyYmF6cXV4cXV1eHF1dXpxdXV6'
    const call = (...args: unknown[]) => [{ method: 'insertSession', args }]
    expect(findPlaintexts(call({ sessionHash: sha256(secret) }), { cookie: secret })).toEqual([])
    expect(findPlaintexts(call('x', { nested: [`prefix ${secret}`] }), { cookie: secret })).toEqual(['the cookie reached the store in insertSession()'])
    expect(findPlaintexts(call(Buffer.from(secret).toString('base64')), { cookie: secret })).toHaveLength(1)
    expect(findPlaintexts(call(Buffer.from(secret, 'base64url')), { cookie: secret })).toHaveLength(1)
    expect(findPlaintexts(call(secret.toUpperCase()), { cookie: secret })).toHaveLength(1)
  })

  it('records every call with the store itself as this, so private fields keep working', async () => {
    const { store, calls } = recordingStore(new MemoryStore())
    await store.insertUser({ id: 'abcd-1234', username: 'ada', screenName: 'a', displayName: 'a', email: 'a@b.c', rights: [], passwordHash: null, createdAt: 1, updatedAt: 1 })
    expect(await store.getUser('abcd-1234')).toMatchObject({ username: 'ada' })
    expect(calls.map((c) => c.method)).toEqual(['insertUser', 'getUser'])
  })
})

describe('describeStore', () => {
  const runner = fileURLToPath(new URL('./fixtures/kit/node-test-runner.ts', import.meta.url))
  const runUnderNodeTest = (env: Record<string, string>) =>
    spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', runner], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 })

  it('runs every check under node:test and cleans up once', () => {
    const result = runUnderNodeTest({})
    expect(result.stderr).toBe('')
    expect(result.status).toBe(0)
    expect(result.stdout).toContain('lets exactly one of 50 concurrent consumers win')
    expect(result.stdout).toContain(`pass ${storeCheckNames.length - LOOKUP_CHECKS.length}`)
    expect(result.stdout).toContain(`skipped ${LOOKUP_CHECKS.length}`)
    expect(result.stdout).toMatch(/﹣ answers a user as the step, then the user, would: present, gone .*# the store does not implement the optional lookupRequest/)
    expect(result.stdout.match(/cleanup ran/g)).toHaveLength(1)
  })

  it('fails the node:test run, naming the check, for a broken store', () => {
    const result = runUnderNodeTest({ KIT_BROKEN: 'consume' })
    expect(result.status).toBe(1)
    expect(result.stdout).toMatch(/✖ lets exactly one of 50 concurrent consumers win/)
    // The check above and its group fail every time; on busy cores the broken store's race
    // can also lose a gate-level exchange check, so at least those two fail, not exactly two.
    expect(Number(/\bfail (\d+)/.exec(result.stdout)?.[1])).toBeGreaterThanOrEqual(2)
  })

  it('refuses cleanup without an after hook, and a runner without describe or it', () => {
    const noop = () => {}
    expect(() => describeStore('X', () => new MemoryStore(), { describe: noop, it: noop, cleanup: noop })).toThrow(/needs your runner's after hook/)
    expect(() => describeStore('X', () => new MemoryStore(), {} as never)).toThrow(/needs your runner's describe and it/)
  })
})
