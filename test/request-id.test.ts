/**
 * The request id in the core: whose id is kept, what is generated, and that every event
 * about a request names it. (Every mount sends it: test/adapters.test.ts, "request ids".)
 */
import { describe, expect, it } from 'vitest'
import { createGate, type GateOptions, type GateOutcome } from '../src/index.js'
import { coreRequest } from './support/requests.js'

const GENERATED = /^[A-Za-z0-9_-]{12}-[0-9a-z]+$/

function idOf(outcome: GateOutcome): unknown {
  return outcome.type === 'next' ? outcome.headers['x-request-id'] : outcome.response.headers['x-request-id']
}

async function gateWith(options: GateOptions = {}) {
  const gate = createGate({ basic: { scrypt: { logN: 10 } }, throttle: { anonymous: { limit: 1, windowMs: 60_000 } }, ...options })
  const events: Array<{ event: string; requestId: unknown }> = []
  gate.on('throttled', (e) => events.push({ event: 'throttled', requestId: e.requestId }))
  gate.on('invalidAppToken', (e) => events.push({ event: 'invalidAppToken', requestId: e.requestId }))
  gate.on('authenticationFailed', (e) => events.push({ event: 'authenticationFailed', requestId: e.requestId }))
  gate.on('nearLimit', (e) => events.push({ event: 'nearLimit', requestId: e.requestId }))
  return { gate, events }
}

describe('request ids', () => {
  it('gives each request its own id, on the context and in the headers, and names it in the events about the request', async () => {
    const { gate, events } = await gateWith()
    const first = await gate.handle(coreRequest())
    if (first.type !== 'next') throw new Error('expected the request through')
    expect(first.context.requestId).toMatch(GENERATED)
    expect(first.headers['x-request-id']).toBe(first.context.requestId)
    const throttled = await gate.handle(coreRequest())
    const unknown = await gate.handle(coreRequest({ headers: { 'x-app-token': 'not-a-registered-token' } }))
    const wrong = await gate.handle(coreRequest({ headers: { authorization: 'OAuth not-a-live-access-token' }, peerAddress: '203.0.113.9' }))
    const ids = [first, throttled, unknown, wrong].map(idOf)
    expect(new Set(ids).size).toBe(4)
    expect(events).toEqual([
      { event: 'throttled', requestId: ids[1] },
      { event: 'invalidAppToken', requestId: ids[2] },
      { event: 'authenticationFailed', requestId: ids[3] },
    ])
  })

  it('names the request in nearLimit too', async () => {
    const { gate, events } = await gateWith({ throttle: { application: { limit: 5, windowMs: 60_000 } } })
    const app = await gate.applications.register({ name: 'Busy' })
    const outcomes: GateOutcome[] = []
    for (let i = 0; i < 4; i++) outcomes.push(await gate.handle(coreRequest({ headers: { 'x-app-token': app.appToken } })))
    const near = events.filter((e) => e.event === 'nearLimit')
    expect(near).toHaveLength(1)
    expect(outcomes.map(idOf)).toContain(near[0]?.requestId)
  })

  it('keeps a trusted proxy’s id only, and only a plausible one', async () => {
    const { gate } = await gateWith({ trustProxy: '10.0.0.0/8', throttle: false })
    const fromProxy = (id: string | string[]) => gate.handle(coreRequest({ peerAddress: '10.1.2.3', headers: { 'x-request-id': id } }))
    expect(idOf(await fromProxy('edge-01HZX3K9'))).toBe('edge-01HZX3K9')
    expect(idOf(await fromProxy('0'.repeat(128)))).toBe('0'.repeat(128))
    expect(idOf(await gate.handle(coreRequest({ peerAddress: '::ffff:10.1.2.3', headers: { 'x-request-id': 'mapped' } })))).toBe('mapped')
    for (const bad of ['0'.repeat(129), 'two words', 'tab\there', 'bell\u0007', 'é-accent', '', ['a', 'b']]) {
      expect(idOf(await fromProxy(bad))).toMatch(GENERATED)
    }
    // The client itself, not the proxy: its own id is not kept.
    expect(idOf(await gate.handle(coreRequest({ headers: { 'x-request-id': 'forged' } })))).toMatch(GENERATED)
  })

  it('keeps anyone’s with trustIncoming: true, nobody’s with false', async () => {
    const anyone = (await gateWith({ requestId: { trustIncoming: true }, throttle: false })).gate
    expect(idOf(await anyone.handle(coreRequest({ headers: { 'x-request-id': 'client-1' } })))).toBe('client-1')
    const nobody = (await gateWith({ requestId: { trustIncoming: false }, trustProxy: true, throttle: false })).gate
    expect(idOf(await nobody.handle(coreRequest({ headers: { 'x-request-id': 'proxy-1' } })))).toMatch(GENERATED)
  })

  it('sends none, and names none, with requestId: false', async () => {
    const { gate, events } = await gateWith({ requestId: false })
    const passed = await gate.handle(coreRequest())
    if (passed.type !== 'next') throw new Error('expected the request through')
    expect(passed.headers).not.toHaveProperty('x-request-id')
    expect(passed.context.requestId).toBeNull()
    const refused = await gate.handle(coreRequest())
    expect(refused.type === 'respond' && refused.response.headers).not.toHaveProperty('x-request-id')
    expect(events).toEqual([{ event: 'throttled', requestId: undefined }])
  })

  it('reads and sends the header the option names', async () => {
    const { gate } = await gateWith({ requestId: { header: 'X-Correlation-ID', trustIncoming: true }, throttle: false })
    const outcome = await gate.handle(coreRequest({ headers: { 'x-correlation-id': 'abc' } }))
    expect(outcome.type === 'next' && outcome.headers).toEqual({ 'x-correlation-id': 'abc' })
  })

  it('refuses a bad requestId option, naming it', () => {
    expect(() => createGate({ requestId: true as never })).toThrow('open-data-gate: requestId must be { header, trustIncoming } or false, got true')
    expect(() => createGate({ requestId: { header: 'X Request Id' } })).toThrow('open-data-gate: requestId.header must be an HTTP header name, got "X Request Id"')
    expect(() => createGate({ requestId: { trustIncoming: 'always' as never } })).toThrow("open-data-gate: requestId.trustIncoming must be 'proxy', true or false, got \"always\"")
    expect(() => createGate({ requestId: { headr: 'X-Id' } as never })).toThrow('open-data-gate: unknown option `requestId.headr`; did you mean `header`?')
    expect(() => createGate({ requestID: false } as never)).toThrow('open-data-gate: unknown option `requestID`; did you mean `requestId`?')
  })
})
