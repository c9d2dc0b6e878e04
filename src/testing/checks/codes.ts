/**
 * Authorization codes, of the OAuth slice: saved by hash, consumed by exactly one of concurrent
 * consumers.
 */
import assert from 'node:assert/strict'
import { group, type StoreCheck } from '../check.js'
import { code, freshHash, LATER, LATEST } from '../fixtures.js'

const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'

export const codeChecks: readonly StoreCheck[] = group('authorization codes', ['oauth'], [
  [
    'saves and finds a code by its hash, and refuses a duplicate',
    async (store) => {
      const hash = freshHash()
      const record = code(hash, { codeChallenge: CHALLENGE })
      await store.insertAuthorizationCode(record)
      assert.deepEqual(await store.getAuthorizationCode(hash), record)
      assert.equal(await store.getAuthorizationCode(freshHash()), undefined)
      await assert.rejects(async () => store.insertAuthorizationCode(code(hash)), 'a duplicate code hash must throw')
    },
  ],
  [
    'consumes a code once and remembers when',
    async (store) => {
      const hash = freshHash()
      await store.insertAuthorizationCode(code(hash))
      assert.equal(await store.consumeAuthorizationCode(hash, LATER), true)
      assert.equal(await store.consumeAuthorizationCode(hash, LATEST), false)
      assert.equal((await store.getAuthorizationCode(hash))?.usedAt, LATER)
      assert.equal(await store.consumeAuthorizationCode(freshHash(), 1), false)
    },
  ],
  [
    'lets exactly one of 50 concurrent consumers win',
    async (store) => {
      const hash = freshHash()
      await store.insertAuthorizationCode(code(hash))
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => store.consumeAuthorizationCode(hash, LATER + i)))
      assert.equal(results.filter(Boolean).length, 1, 'consumers told they won')
      assert.equal((await store.getAuthorizationCode(hash))?.usedAt, LATER + results.indexOf(true), 'usedAt is the winner’s')
    },
  ],
])
