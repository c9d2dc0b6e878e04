/**
 * Failures that speak: the `logger` option. A store outage is one warning when it starts
 * (with a hint where the error says what to do) and one line when it ends; a 500 goes to
 * a logger the operator gave; the gate's warnings go there too; `logger: false` says
 * nothing; and no line ever holds a secret. The loggers here are plain objects that record
 * their calls (the interface the gate calls is exactly that), `console`, and a real pino.
 */
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createGate, MemoryStore, type Gate, type GateLogFields, type GateLogger, type GateOptions } from '../src/index.js'
import { STORE_METHODS } from '../src/store/guarded-store.js'
import { PostgresStore } from '../src/store/postgres/store.js'
import { dropSchema, DATABASE_URL, freshSchema, postgresAvailable } from './support/postgres.js'
import { coreRequest } from './support/requests.js'
import { captureWarnings } from './support/warnings.js'

interface Line {
  level: 'error' | 'warn' | 'info' | 'debug'
  message: string
  fields: GateLogFields
}

/** A logger that records every call, as `console`, pino and winston would receive them. */
function recordingLogger(): GateLogger & { lines: Line[] } {
  const lines: Line[] = []
  const at = (level: Line['level']) => (message: string, fields: GateLogFields) => {
    lines.push({ level, message, fields })
  }
  return { lines, error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') }
}

const PASSWORD = 'correct horse battery staple'
const STORE_PASSWORD = 'hunter2-store-secret'

/** A store behind a connection that fails while `down`, every call, with a driver's error that names its URL. */
class UnreachableStore extends MemoryStore {
  down = false
  constructor() {
    super()
    for (const name of STORE_METHODS) {
      const method = (this[name] as (...args: unknown[]) => unknown).bind(this)
      ;(this as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
        if (!this.down) return Promise.resolve().then(() => method(...args))
        const error = Object.assign(new Error(`connect ECONNREFUSED 127.0.0.1:6390 (redis://ops:${STORE_PASSWORD}@127.0.0.1:6390/0?password=${STORE_PASSWORD})`), {
          code: 'ECONNREFUSED',
          address: '127.0.0.1',
          port: 6390,
        })
        return Promise.reject(error)
      }
    }
  }
}

async function outageGate(options: GateOptions = {}) {
  const store = new UnreachableStore()
  const gate = createGate({ store, storeTimeoutMs: 200, basic: { scrypt: { logN: 10 } }, usage: false, ...options })
  const app = await gate.applications.register({ name: 'Transit dashboard' })
  const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada', email: 'ada@example.org' })
  const key = await gate.apiKeys.create(ada.id, { name: 'laptop' })
  const token = await gate.tokens.issue({ userId: ada.id, appToken: app.appToken })
  store.down = true
  // Requests that carry every kind of secret while the store is down.
  const basic = (user: string, secret: string) => `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`
  const secrets = [PASSWORD, key.keySecret, token.accessToken, STORE_PASSWORD]
  const requests = async () => {
    const statuses: number[] = []
    for (const headers of [
      { 'x-app-token': app.appToken },
      { 'x-app-token': app.appToken, authorization: basic('ada', PASSWORD) },
      { 'x-app-token': app.appToken, authorization: basic(key.keyId, key.keySecret) },
      { authorization: `OAuth ${token.accessToken}` },
      { 'x-app-token': app.appToken, authorization: `Bearer ${token.accessToken}` },
    ]) {
      const outcome = await gate.handle(coreRequest({ headers }))
      statuses.push(outcome.type === 'respond' ? outcome.response.status : 200)
    }
    return statuses
  }
  return { gate, store, app, secrets, requests }
}

/**
 * Requests until one is served: after a failed call the guard holds the next probe back for
 * as long as that call took, so on a busy machine the first request after the store is
 * back may still be refused.
 */
async function untilServed(gate: Gate, appToken: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    if ((await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))).type === 'next') return
    await sleep(20)
  }
  throw new Error('the gate never served a request again')
}

describe('a store outage, told to the logger', () => {
  it('is one warning when it starts, with what was tried and no secret, and one line when it ends', async () => {
    const logger = recordingLogger()
    const { gate, store, app, secrets, requests } = await outageGate({ logger })
    const statuses = await requests()
    expect(statuses[0]).toBe(503)
    await requests()
    const warnings = logger.lines.filter((l) => l.level === 'warn')
    expect(warnings).toHaveLength(1)
    expect(warnings[0]?.message).toMatch(/^open-data-gate: the store \(records\+rates\) failed on getApplication: connect ECONNREFUSED 127\.0\.0\.1:6390 .*requests that need it are answered 503/)
    expect(warnings[0]?.message).toContain('Hint: nothing accepted a connection at 127.0.0.1:6390')
    expect(warnings[0]?.fields).toMatchObject({ code: 'ODG_STORE_ERROR', store: 'records+rates', operation: 'getApplication', outcome: 'failed', errorCode: 'ECONNREFUSED' })
    expect(warnings[0]?.message).toContain('redis://ops:***@127.0.0.1:6390/0?password=***')

    store.down = false
    await untilServed(gate, app.appToken)
    await gate.handle(coreRequest({ headers: { 'x-app-token': app.appToken } }))
    const recovered = logger.lines.filter((l) => l.fields.code === 'ODG_STORE_RECOVERED')
    expect(recovered).toHaveLength(1)
    expect(recovered[0]).toMatchObject({ level: 'info', fields: { store: 'records+rates', failedCalls: expect.any(Number), downMs: expect.any(Number) } })
    expect(recovered[0]?.message).toMatch(/^open-data-gate: the store \(records\+rates\) answers again, after \d+ ms and \d+ failed calls?\.$/)

    const written = JSON.stringify(logger.lines)
    for (const secret of secrets) expect(written).not.toContain(secret)
    for (const line of logger.lines) expect(line.message).not.toMatch(/[\r\n]/)
  })

  it('goes to process warnings, with a code, when no logger is given', async () => {
    const { warnings } = await captureWarnings(async () => {
      const { gate, store, app, requests } = await outageGate()
      await requests()
      await requests()
      store.down = false
      await untilServed(gate, app.appToken)
    })
    expect(warnings.map((w) => w.code)).toEqual(['ODG_STORE_ERROR', 'ODG_STORE_RECOVERED'])
    expect(warnings[0]?.message).toContain('Hint: nothing accepted a connection at 127.0.0.1:6390')
    expect(warnings[0]?.message).not.toContain(STORE_PASSWORD)
  })

  it('says nothing with logger: false', async () => {
    const { warnings } = await captureWarnings(async () => {
      const { gate, store, app, requests } = await outageGate({ logger: false })
      const statuses = await requests()
      expect(statuses[0]).toBe(503)
      store.down = false
      await gate.handle(coreRequest({ headers: { 'x-app-token': app.appToken } }))
    })
    expect(warnings).toEqual([])
  })
})

describe('the gate’s warnings and failures, told to the logger', () => {
  it('sends its configuration warnings to the logger instead of the process', async () => {
    const logger = recordingLogger()
    const { warnings } = await captureWarnings(() => createGate({ logger, oauth: { allowLoopbackCallbacks: true } }))
    expect(warnings).toEqual([])
    expect(logger.lines).toEqual([{ level: 'warn', message: expect.stringContaining('local development only'), fields: { code: 'ODG_LOOPBACK_CALLBACKS' } }])
  })

  it('tells a listener that threw and a guard used without the gate, once', async () => {
    const logger = recordingLogger()
    const gate = createGate({ logger, throttle: { anonymous: { limit: 1, windowMs: 60_000 } } })
    gate.on('throttled', () => {
      throw new Error('the dashboard is down')
    })
    await gate.handle(coreRequest())
    await gate.handle(coreRequest())
    const guard = gate.guard({ auth: 'required' })
    guard(undefined)
    guard(undefined)
    expect(logger.lines.map((l) => l.fields.code)).toEqual(['ODG_LISTENER_THREW', 'ODG_GUARD_WITHOUT_GATE'])
    expect(logger.lines[0]?.message).toBe("open-data-gate: a 'throttled' listener threw: the dashboard is down")
  })

  it('tells each 500 the gate answered at error level, with the request id and the cause', async () => {
    const logger = recordingLogger()
    class GarbageStore extends MemoryStore {
      override consumeRate(): never {
        return null as never
      }
    }
    const gate = createGate({ logger, store: new GarbageStore() })
    const outcome = await gate.handle(coreRequest())
    if (outcome.type !== 'respond') throw new Error('expected a 500')
    expect(outcome.response.status).toBe(500)
    const requestId = outcome.response.headers['x-request-id']
    expect(logger.lines).toEqual([
      {
        level: 'error',
        message: expect.stringMatching(new RegExp(`^open-data-gate: GET /resource/abcd-1234\\.json was answered 500: TypeError: .+ \\(request ${requestId}\\)$`)),
        fields: expect.objectContaining({ code: 'ODG_INTERNAL_ERROR', requestId, method: 'GET', path: '/resource/abcd-1234.json' }),
      },
    ])
  })

  it('goes on when the logger itself throws', async () => {
    const broken = { error: () => {}, info: () => {}, debug: () => {}, warn: () => { throw new Error('disk full') } }
    const { gate, requests } = await outageGate({ logger: broken })
    expect((await requests())[0]).toBe(503)
    await gate.close()
  })

  it('writes through console as it is: the message, then the fields', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      createGate({ logger: console, oauth: { allowLoopbackCallbacks: true } })
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('oauth.allowLoopbackCallbacks is on'), { code: 'ODG_LOOPBACK_CALLBACKS' })
    } finally {
      warn.mockRestore()
    }
  })

  it('writes through a real pino as passed, each entry with its code, hint and fields', async () => {
    const written: string[] = []
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        written.push(chunk.toString())
        done()
      },
    })
    const log = pino({ level: 'debug' }, sink)
    createGate({ logger: log, oauth: { allowLoopbackCallbacks: true } })
    // A child logger (Fastify's request.log is one) is pino too.
    const { gate, store, app, secrets, requests } = await outageGate({ logger: log.child({ service: 'portal' }) })
    await requests()
    store.down = false
    await untilServed(gate, app.appToken)
    const [configured, outage, recovered] = written.map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(configured).toMatchObject({ level: 40, code: 'ODG_LOOPBACK_CALLBACKS', msg: expect.stringContaining('oauth.allowLoopbackCallbacks is on') })
    expect(outage).toMatchObject({
      level: 40,
      service: 'portal',
      code: 'ODG_STORE_ERROR',
      store: 'records+rates',
      operation: 'getApplication',
      errorCode: 'ECONNREFUSED',
      hint: expect.stringContaining('nothing accepted a connection at 127.0.0.1:6390'),
      msg: expect.stringMatching(/^open-data-gate: the store \(records\+rates\) failed on getApplication/),
    })
    expect(recovered).toMatchObject({ level: 30, code: 'ODG_STORE_RECOVERED', failedCalls: expect.any(Number) })
    for (const secret of secrets) expect(written.join('')).not.toContain(secret)
  })

  it('calls a logger of bunyan\'s shape with its fields first, and console and plain loggers with the message first', () => {
    const calls: unknown[][] = []
    const record = (...args: unknown[]) => void calls.push(args)
    // bunyan's Logger: a list of streams, an object of fields, child(); (fields, message) like pino.
    const bunyanShaped = { streams: [], fields: { name: 'portal' }, child: () => bunyanShaped, error: record, warn: record, info: record, debug: record }
    createGate({ logger: bunyanShaped as unknown as GateLogger, oauth: { allowLoopbackCallbacks: true } })
    expect(calls[0]?.[0]).toMatchObject({ code: 'ODG_LOOPBACK_CALLBACKS' })
    expect(calls[0]?.[1]).toEqual(expect.stringContaining('oauth.allowLoopbackCallbacks is on'))
    calls.length = 0
    createGate({ logger: { error: record, warn: record, info: record, debug: record }, oauth: { allowLoopbackCallbacks: true } })
    expect(calls[0]?.[0]).toEqual(expect.stringContaining('oauth.allowLoopbackCallbacks is on'))
    expect(calls[0]?.[1]).toMatchObject({ code: 'ODG_LOOPBACK_CALLBACKS' })
  })
})

describe('the logger option', () => {
  it('refuses what is not a logger, naming the missing methods, and a misspelt name', () => {
    expect(() => createGate({ logger: {} as never })).toThrow('open-data-gate: logger has no error, warn, info, debug methods; it needs error, warn, info and debug (console, pino, winston)')
    expect(() => createGate({ logger: { error() {}, warn() {}, info() {} } as never })).toThrow(/logger has no debug method;/)
    expect(() => createGate({ logger: 'console' as never })).toThrow(/logger must be an object with error, warn, info and debug methods .* or false, got string/)
    expect(() => createGate({ logger: null as never })).toThrow(/logger must be .* got null/)
    expect(() => createGate({ logger: true as never })).toThrow(/logger must be .* got boolean/)
    expect(() => createGate({ loger: console } as never)).toThrow('open-data-gate: unknown option `loger`; did you mean `logger`?')
  })
})

const pgAvailable = await postgresAvailable()

describe.skipIf(!pgAvailable)('a PostgreSQL schema nobody migrated', () => {
  const schema = freshSchema('logger')
  let store: PostgresStore
  beforeAll(() => {
    store = new PostgresStore({ connectionString: DATABASE_URL, schema })
  })
  afterAll(async () => {
    await store.close()
    await dropSchema(schema)
  })

  it('answers app-token requests 503 and anonymous ones 200, warns once with the migrate hint, and tells the recovery once', async () => {
    const logger = recordingLogger()
    const gate = createGate({ store, logger, usage: false })
    const token = 'a-token-of-an-application-nobody-migrated'
    for (let i = 0; i < 3; i++) {
      const outcome = await gate.handle(coreRequest({ headers: { 'x-app-token': token } }))
      expect(outcome.type === 'respond' && outcome.response.status).toBe(503)
    }
    expect((await gate.handle(coreRequest())).type).toBe('next')
    const warnings = logger.lines.filter((l) => l.level === 'warn')
    expect(warnings).toHaveLength(1)
    expect(warnings[0]?.message).toMatch(/failed on getApplication: relation "[a-z0-9_]+\.applications" does not exist/)
    expect(warnings[0]?.message).toContain('Hint: the PostgreSQL schema is not migrated (or older than this version of the gate): run `open-data-gate migrate` or `store.migrate()`')
    expect(warnings[0]?.fields).toMatchObject({ code: 'ODG_STORE_ERROR', errorCode: '42P01', hint: expect.stringContaining('store.migrate()') })

    await store.migrate()
    const app = await gate.applications.register({ name: 'Migrated at last' })
    expect((await gate.handle(coreRequest({ headers: { 'x-app-token': app.appToken } }))).type).toBe('next')
    await gate.handle(coreRequest({ headers: { 'x-app-token': app.appToken } }))
    expect(logger.lines.filter((l) => l.fields.code === 'ODG_STORE_RECOVERED')).toHaveLength(1)
    expect(logger.lines.filter((l) => l.fields.code === 'ODG_STORE_ERROR')).toHaveLength(1)
  })
})
