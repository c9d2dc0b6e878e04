/**
 * The pages' statuses come from the one error table (src/errors.ts): each error page the
 * authorize endpoint and the connected-apps page show names a code, and answers with that
 * code's status. Driven through `gate.handle`, one request per page error.
 */
import { describe, expect, it } from 'vitest'
import { createGate, MemoryStore, type GateOptions, type GateRequest, type GateStore } from '../src/index.js'
import { PAGE_ERROR_STATUS, pageStatusOf, PLATFORM_ERROR_STATUS, type PageErrorCode } from '../src/errors.js'
import { asyncStore } from './support/broken-stores.js'
import { coreRequest } from './support/requests.js'

const PASSWORD = 'correct horse battery'
const PREFIX = 'https://transit.example/oauth/'
const CSRF = 'c'.repeat(43)
/** The CSRF cookie a form post carries (its token goes in the form's `csrf_token`). */
const COOKIE = { cookie: `__Host-odg-csrf=${CSRF}` }

interface Setup {
  readonly authorize: string
}

/** The gate under test, on the store `registered` filled. */
function gateOn(store: GateStore, options: GateOptions = {}) {
  return createGate({ basic: { scrypt: { logN: 10 } }, throttle: false, bodyTimeoutMs: 50, ...options, store })
}

/** An application with a Callback Prefix and a user, and the authorize link of the application. */
async function registered(store: MemoryStore): Promise<Setup> {
  const gate = createGate({ basic: { scrypt: { logN: 10 } }, store })
  const app = await gate.applications.register({ name: 'Transit', callbackPrefix: PREFIX })
  await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada', email: 'ada@example.org' })
  return { authorize: `/oauth/authorize?${new URLSearchParams({ client_id: app.appToken, response_type: 'code', redirect_uri: `${PREFIX}cb` })}` }
}

function post(url: string, form: Record<string, string> | 'too-large' | 'never', headers: Record<string, string> = COOKIE): GateRequest {
  const readBody: GateRequest['readBody'] =
    form === 'too-large'
      ? async () => ({ kind: 'too-large' })
      : form === 'never'
        ? (_limit, signal) => new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(new Error('aborted'))))
        : async () => ({ kind: 'parsed', value: form })
  return coreRequest({ method: 'POST', url, headers, readBody })
}

interface PageCase {
  readonly name: string
  /** The code the page names. */
  readonly code: PageErrorCode
  readonly request: (s: Setup) => GateRequest
  readonly options?: GateOptions
  readonly store?: (memory: MemoryStore) => GateStore
}

const cases: PageCase[] = [
  // The authorize endpoint.
  { name: 'authorize: a method other than GET and POST', code: 'method_not_allowed', request: (s) => coreRequest({ method: 'PUT', url: s.authorize }) },
  { name: 'authorize: plain http', code: 'https_required', request: (s) => coreRequest({ url: s.authorize, tls: false }) },
  { name: 'authorize: a link without client_id', code: 'invalid_request', request: () => coreRequest({ url: '/oauth/authorize?response_type=code' }) },
  { name: 'authorize: a form that never arrives', code: 'request_timeout', request: (s) => post(s.authorize, 'never') },
  { name: 'authorize: a form too large', code: 'invalid_request', request: (s) => post(s.authorize, 'too-large') },
  { name: 'authorize: a form without its CSRF token', code: 'form_expired', request: (s) => post(s.authorize, { action: 'login', username: 'ada', password: PASSWORD }) },
  { name: 'authorize: a form without an action', code: 'invalid_request', request: (s) => post(s.authorize, { csrf_token: CSRF }) },
  { name: 'authorize: a wrong password', code: 'invalid_credentials', request: (s) => post(s.authorize, { csrf_token: CSRF, action: 'login', username: 'ada', password: 'wrong' }) },
  {
    name: 'authorize: the store down',
    code: 'service_unavailable',
    request: (s) => coreRequest({ url: s.authorize }),
    store: (memory) =>
      asyncStore(memory, {
        getApplication: async () => {
          throw new Error('connection refused')
        },
      }),
  },
  {
    name: 'authorize: a failure of the host',
    code: 'internal',
    request: (s) => coreRequest({ url: s.authorize }),
    options: {
      oauth: {
        authenticateUser: () => {
          throw new Error('the host failed')
        },
      },
    },
  },
  // The connected-apps page.
  { name: 'connected apps: a method other than GET and POST', code: 'method_not_allowed', request: () => coreRequest({ method: 'DELETE', url: '/oauth/grants' }) },
  { name: 'connected apps: plain http', code: 'https_required', request: () => coreRequest({ url: '/oauth/grants', tls: false }) },
  { name: 'connected apps: a form that never arrives', code: 'request_timeout', request: () => post('/oauth/grants', 'never') },
  { name: 'connected apps: a form too large', code: 'invalid_request', request: () => post('/oauth/grants', 'too-large') },
  { name: 'connected apps: a form without its CSRF token', code: 'form_expired', request: () => post('/oauth/grants', { action: 'revoke', app_token: 'x' }, {}) },
  { name: 'connected apps: a form without an action', code: 'invalid_request', request: () => post('/oauth/grants', { csrf_token: CSRF }) },
  { name: 'connected apps: a wrong password', code: 'invalid_credentials', request: () => post('/oauth/grants', { csrf_token: CSRF, action: 'login', username: 'ada', password: 'wrong' }) },
  {
    name: 'connected apps: a post over the OAuth budget',
    code: 'too_many_requests',
    options: { oauth: { throttle: { limit: 1, windowMs: 60_000 } } },
    request: () => post('/oauth/grants', { csrf_token: CSRF }),
  },
]

describe('error pages', () => {
  it.each(cases)('$name: answers the status of $code', async ({ code, request, options, store }) => {
    const memory = new MemoryStore()
    const s = await registered(memory)
    const gate = gateOn(store === undefined ? memory : store(memory), options)
    let outcome = await gate.handle(request(s))
    // The budget case: the first post spends the budget, the second is refused.
    if (code === 'too_many_requests') outcome = await gate.handle(request(s))
    expect(outcome.type).toBe('respond')
    if (outcome.type !== 'respond') return
    expect(outcome.response.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(outcome.response.status).toBe(pageStatusOf(code))
  })

  it('finds every page code in the table, with an error status', () => {
    for (const code of [...Object.keys(PAGE_ERROR_STATUS), ...cases.map((c) => c.code)] as PageErrorCode[]) {
      expect(code in PAGE_ERROR_STATUS || code in PLATFORM_ERROR_STATUS, code).toBe(true)
      expect(pageStatusOf(code), code).toBeGreaterThanOrEqual(400)
    }
  })
})
