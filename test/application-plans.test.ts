/**
 * An application's plan (`gate.applications.update(appToken, { plan })`): a configured
 * plan's name or `null` for the default, checked for its shape and against the plans the
 * gate knows, kept by the store, seen by every gate on it through the change notice, shown
 * to the owner read-only and on the example portal's developer page.
 */
import { describe, expect, it } from 'vitest'
import { createGate, MemoryStore, type GateOutcome } from '../src/index.js'
import { Applications, type ApplicationRules } from '../src/management/applications.js'
import { coreRequest } from './support/requests.js'

const PASSWORD = 'correct horse battery'
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

/** The rules a gate whose configuration has these plans gives its applications. */
function rules(plans?: string[]): ApplicationRules {
  return { maxPerUser: 20, secretGraceMs: 3_600_000, spendRegistration: async () => 0, ...(plans === undefined ? {} : { plans: new Set(plans) }) }
}

describe('an application plan', () => {
  it('puts an application on a known plan, keeps it through other changes, and back on the default with null', async () => {
    const applications = new Applications({ store: new MemoryStore(), rules: rules(['free', 'partner']) })
    const { appToken, application } = await applications.register({ name: 'Transit', limit: 500 })
    expect(application.plan).toBeNull()
    expect(await applications.update(appToken, { plan: 'partner' })).toMatchObject({ plan: 'partner', limit: 500 })
    expect(await applications.find(appToken)).toMatchObject({ plan: 'partner' })
    expect((await applications.list()).map((a) => a.plan)).toEqual(['partner'])
    expect(await applications.update(appToken, { name: 'Renamed', limit: 900 })).toMatchObject({ name: 'Renamed', limit: 900, plan: 'partner' })
    expect(await applications.update(appToken, { plan: null })).toMatchObject({ name: 'Renamed', limit: 900, plan: null })
    // An operator may register one on a plan too.
    expect((await applications.register({ name: 'Bus', plan: 'free' })).application.plan).toBe('free')
  })

  it('refuses a name no configured plan has, listing the ones there are, and changes nothing', async () => {
    const applications = new Applications({ store: new MemoryStore(), rules: rules(['partner', 'free']) })
    const { appToken } = await applications.register({ name: 'Transit' })
    await applications.update(appToken, { plan: 'free' })
    await expect(applications.update(appToken, { plan: 'gold', name: 'Other' })).rejects.toThrow(/plan "gold" is not configured; the plans are: free, partner/)
    await expect(applications.register({ name: 'Bus', plan: 'gold' })).rejects.toThrow(TypeError)
    expect(await applications.find(appToken)).toMatchObject({ name: 'Transit', plan: 'free' })
    expect(await applications.list()).toHaveLength(1)
  })

  it.each([['Partner'], [''], ['-free'], ['a'.repeat(65)], ['free plan'], ['frée'], [7], [true], [{}]])('refuses %j as a plan, naming plan', async (plan) => {
    const applications = new Applications({ store: new MemoryStore(), rules: rules(['partner', 'free']) })
    const { appToken } = await applications.register({ name: 'Transit' })
    await expect(applications.update(appToken, { plan: plan as string })).rejects.toThrow(/plan must be a plan name .* or null/)
    expect(await applications.find(appToken)).toMatchObject({ plan: null })
  })

  it('accepts only null when the gate knows no plans', async () => {
    for (const known of [undefined, []]) {
      const applications = new Applications({ store: new MemoryStore(), rules: rules(known) })
      const { appToken } = await applications.register({ name: 'Transit' })
      await expect(applications.update(appToken, { plan: 'free' })).rejects.toThrow(/the gate has no plans, so plan can only be null/)
      expect(await applications.update(appToken, { plan: null })).toMatchObject({ plan: null })
    }
    const gate = createGate({ store: new MemoryStore() })
    const { appToken } = await gate.applications.register({ name: 'Transit' })
    await expect(gate.applications.update(appToken, { plan: 'free' })).rejects.toThrow(TypeError)
  })

  it('throws not_found for an unknown app token', async () => {
    const applications = new Applications({ store: new MemoryStore(), rules: rules(['free']) })
    await expect(applications.update('no-such-app', { plan: 'free' })).rejects.toMatchObject({ code: 'not_found' })
  })

  it("reaches a gate on the same store through the store's change notice, past its cached copy", async () => {
    const store = new MemoryStore()
    // The application cache keeps a copy for an hour: only the notice can make the gate read it again.
    const gate = createGate({ store, applicationCacheMs: 3_600_000, usage: false })
    const { appToken } = await gate.applications.register({ name: 'Transit' })
    const planSeen = async () => {
      const outcome: GateOutcome = await gate.handle(coreRequest({ headers: { 'x-app-token': appToken } }))
      if (outcome.type !== 'next') throw new Error('refused')
      return outcome.context.application?.plan
    }
    expect(await planSeen()).toBeNull()
    const operator = new Applications({ store, rules: rules(['partner']) })
    await operator.update(appToken, { plan: 'partner' })
    expect(await planSeen()).toBe('partner')
    await operator.update(appToken, { plan: null })
    expect(await planSeen()).toBeNull()
  })
})

describe("the owner's view of a plan", () => {
  async function owned() {
    const store = new MemoryStore()
    const gate = createGate({ store, throttle: false, basic: { scrypt: { logN: 10 } }, usage: false })
    const ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada Lovelace', email: 'ada@example.org' })
    const other = await gate.applications.register({ name: 'Portal' })
    const mine = await gate.applications.registerOwn({ ownerId: ada.id, name: 'Mine' })
    const operator = new Applications({ store, rules: rules(['partner']) })
    const send = async (method: string, url: string, body?: unknown) => {
      const outcome = await gate.handle(coreRequest({ method, url, headers: { authorization: basic('ada', PASSWORD) }, readBody: async () => ({ kind: 'parsed', value: body }) }))
      if (outcome.type !== 'respond') throw new Error('let through')
      return { status: outcome.response.status, body: JSON.parse(outcome.response.body || 'null') as Record<string, unknown> }
    }
    return { gate, mine, other, operator, send }
  }

  it('shows the plan, null for the default, in the record and the list', async () => {
    const { mine, operator, send } = await owned()
    expect((await send('GET', `/api/applications/${mine.appToken}`)).body).toMatchObject({ plan: null })
    await operator.update(mine.appToken, { plan: 'partner' })
    expect((await send('GET', `/api/applications/${mine.appToken}`)).body).toMatchObject({ plan: 'partner' })
    expect(((await send('GET', '/api/applications')).body as unknown as Array<Record<string, unknown>>).map((a) => a.plan)).toEqual(['partner'])
  })

  it('cannot change it: a PATCH naming plan is refused 403 and changes nothing', async () => {
    const { gate, mine, send } = await owned()
    for (const body of [{ plan: 'partner' }, { plan: '', name: 'Renamed' }]) {
      expect(await send('PATCH', `/api/applications/${mine.appToken}`, body)).toMatchObject({ status: 403, body: { code: 'permission_denied' } })
    }
    expect(await gate.applications.find(mine.appToken)).toMatchObject({ name: 'Mine', plan: null })
    expect(await send('PATCH', `/api/applications/${mine.appToken}`, { name: 'Renamed' })).toMatchObject({ status: 200, body: { name: 'Renamed', plan: null } })
  })

  it("is shown on the example portal's developer page, with no form to change it", async () => {
    const { default: express } = await import('express')
    const { default: supertest } = await import('supertest')
    const { developerPages, PortalSessions } = await import('../examples/developer-pages.js')
    const { gate, mine, other, operator } = await owned()
    const portal = express().set('trust proxy', 'loopback').use(developerPages({ gate, sessions: new PortalSessions(), portalAppToken: other.appToken }))
    const signedIn = await supertest(portal).post('/login').set('x-forwarded-proto', 'https').type('form').send({ username: 'ada', password: PASSWORD }).expect(303)
    const cookie = String(signedIn.headers['set-cookie']).split(';')[0]!
    const page = async () => (await supertest(portal).get('/profile/edit/developer_settings').set('cookie', cookie).expect(200)).text
    expect(await page()).toContain('<dt>Plan</dt><dd>the default plan</dd>')
    await operator.update(mine.appToken, { plan: 'partner' })
    const shown = await page()
    expect(shown).toContain('<dt>Plan</dt><dd><code>partner</code></dd>')
    expect(shown).not.toMatch(/action="[^"]*plan/)
  })
})
