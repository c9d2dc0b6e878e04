/**
 * Expiry, of the OAuth slice: codes, access tokens and sessions are kept until they expire,
 * and after that given back unchanged or not at all.
 */
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Awaitable } from '../../store/store.js'
import { group, type StoreCheck } from '../check.js'
import { accessToken, code, freshHash, freshUserId, session, SHORT_TTL_MS } from '../fixtures.js'

export const expiryChecks: readonly StoreCheck[] = group('expiry', ['oauth'], [
  [
    'keeps codes, tokens and sessions until they expire, and after that gives them back unchanged or not at all',
    async (store) => {
      const userId = freshUserId()
      const now = Date.now()
      const expiresAt = now + SHORT_TTL_MS
      const shortCode = code(freshHash(), { userId, expiresAt })
      const shortToken = accessToken(freshHash(), { userId, expiresAt, createdAt: now })
      const shortSession = session(freshHash(), { userId, expiresAt })
      const liveToken = accessToken(freshHash(), { userId, createdAt: now + 1 })
      const liveSession = session(freshHash(), { userId })
      await store.insertAuthorizationCode(shortCode)
      await store.insertAccessToken(shortToken)
      await store.insertSession(shortSession)
      await store.insertAccessToken(liveToken)
      await store.insertSession(liveSession)
      // Before they expire, all are there: a store-side TTL must not drop them early. A read
      // that returned after expiresAt (a machine too busy) proves nothing, and is not judged.
      const beforeExpiry = async <T>(read: () => Awaitable<T>, judge: (value: T) => void) => {
        const value = await read()
        if (Date.now() < expiresAt) judge(value)
      }
      await beforeExpiry(
        () => store.getAuthorizationCode(shortCode.codeHash),
        (found) => assert.deepEqual(found, shortCode, 'a code is kept until it expires'),
      )
      await beforeExpiry(
        () => store.getAccessToken(shortToken.tokenHash),
        (found) => assert.deepEqual(found, shortToken, 'a token is kept until it expires'),
      )
      await beforeExpiry(
        () => store.getSession(shortSession.sessionHash),
        (found) => assert.deepEqual(found, shortSession, 'a session is kept until it expires'),
      )
      await beforeExpiry(
        () => store.listAccessTokens(userId),
        (live) => assert.deepEqual(live, [shortToken, liveToken], 'a token is listed as live until it expires'),
      )
      await sleep(expiresAt - Date.now() + 100)
      // The gate checks expiresAt itself: a store may drop an expired record or return it as saved.
      const gone = <T>(found: T | undefined, saved: T, what: string) => {
        if (found !== undefined) assert.deepEqual(found, saved, `an expired ${what} is either gone or unchanged`)
      }
      gone(await store.getAuthorizationCode(shortCode.codeHash), shortCode, 'code')
      gone(await store.getAccessToken(shortToken.tokenHash), shortToken, 'token')
      gone(await store.getSession(shortSession.sessionHash), shortSession, 'session')
      assert.deepEqual(await store.listAccessTokens(userId), [liveToken], 'an expired token is not listed as live')
      assert.deepEqual(await store.getSession(liveSession.sessionHash), liveSession)
    },
  ],
])
