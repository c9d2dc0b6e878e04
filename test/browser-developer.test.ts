/// <reference lib="dom" />
/**
 * The example portal's developer pages as a person uses them, in Chromium: sign in,
 * register an application on the developer settings page (its secret shown once), create
 * an API key there and use it from a script, sign in to the new application through
 * OAuth, then revoke it on the connected-apps page and see its token refused; see an
 * application's traffic on its usage chart (what a shadow limit would have throttled as a
 * series of its own) and which of its limits it is near, rotate its secret (the old one accepted for the
 * grace, then refused; or refused at once after a leak), rename and delete it there.
 * Screenshots of each page go to test-artifacts/ (gitignored).
 *
 * Skipped, with a notice, where Chromium is not installed; `.ci/run` installs it.
 */
import type { Browser, Page } from 'playwright-core'
import { chromiumAvailable, openPage, portalInChromium, screenshot, type PortalInChromium } from './support/chromium.js'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { PRIVATE_DATASETS } from '../examples/datasets.js'
import { DEMO_USER } from '../examples/portal.js'
import { tlsFetch } from './support/tls-fetch.js'

const shot = screenshot

describe.skipIf(!chromiumAvailable)('the developer settings page in Chromium', () => {
  let browser: Browser
  let origin: string
  let running: PortalInChromium | undefined

  beforeAll(async () => {
    running = await portalInChromium()
    ;({ browser, origin } = running)
  })

  afterAll(async () => {
    await running?.close()
  })

  const open = () => openPage(browser)

  /** The portal's own app token, which its pages send (the key above needs some app token). */
  const appTokenOf = (page: Page) => portalAppTokens.get(page) as string
  const portalAppTokens = new WeakMap<Page, string>()

  async function signIn(page: Page): Promise<void> {
    await page.goto(`${origin}/profile/edit/developer_settings`)
    await page.getByRole('heading', { name: 'Sign in to the example portal' }).waitFor()
    await shot(page, 'portal-sign-in')
    await page.getByLabel('Username').fill(DEMO_USER.username)
    await page.getByLabel('Password').fill(DEMO_USER.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { name: 'Developer settings' }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/profile/edit/developer_settings')
    portalAppTokens.set(page, (await page.locator('body').getAttribute('data-app-token')) as string)
  }

  it('registers an application, shows its secret once, and signs in to it through OAuth', async () => {
    const { page, problems } = await open()
    await signIn(page)
    await shot(page, 'developer-settings')

    await page.getByLabel('Application name').fill('Transit dashboard')
    await page.getByLabel('Callback Prefix').fill(`${origin}/transit/`)
    await page.getByRole('button', { name: 'Register' }).click()
    await page.getByRole('status').waitFor()
    const appToken = (await page.locator('#app-token').textContent()) as string
    const secretToken = (await page.locator('#secret-token').textContent()) as string
    expect(appToken).toMatch(/^[\w-]{20,}$/)
    expect(secretToken).toMatch(/^[\w-]{43}$/)
    await shot(page, 'developer-settings-registered')
    // Shown once: the page again has no secret on it.
    await page.goto(`${origin}/profile/edit/developer_settings`)
    expect(await page.content()).not.toContain(secretToken)

    // The new application signs the user in: the portal's session carries over to the consent page.
    const redirectUri = `${origin}/transit/callback`
    await page.goto(`${origin}/oauth/authorize?${new URLSearchParams({ client_id: appToken, response_type: 'code', redirect_uri: redirectUri, state: 'xyz' })}`)
    await page.getByRole('heading', { name: 'Allow Transit dashboard to use your account?' }).waitFor()
    await shot(page, 'oauth-consent')
    const landed = page.waitForURL((url) => url.pathname === '/transit/callback')
    await page.getByRole('button', { name: 'Allow' }).click()
    await landed
    const code = new URL(page.url()).searchParams.get('code') as string
    const exchanged = await tlsFetch(`${origin}/oauth/access_token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'authorization_code', client_id: appToken, client_secret: secretToken, redirect_uri: redirectUri, code }),
    })
    expect(exchanged.status).toBe(200)
    const { access_token: accessToken } = (await exchanged.json()) as { access_token: string }
    const me = () => tlsFetch(`${origin}/api/users/current.json`, { headers: { authorization: `OAuth ${accessToken}` } })
    expect(await (await me()).json()).toMatchObject({ email: 'ada@example.org', displayName: 'Ada Lovelace' })

    // Connected apps: the user revokes the application, and its token is refused from then on.
    await page.goto(`${origin}/profile/edit/developer_settings`)
    await page.getByRole('link', { name: 'connected apps' }).click()
    await page.getByRole('heading', { name: 'Connected apps' }).waitFor()
    await expect(page.getByText('Transit dashboard').first().isVisible()).resolves.toBe(true)
    await shot(page, 'connected-apps')
    await page.getByRole('button', { name: 'Revoke access for Transit dashboard' }).click()
    await page.getByRole('heading', { name: 'Connected apps' }).waitFor()
    await shot(page, 'connected-apps-revoked')
    expect(await page.getByRole('button', { name: 'Revoke access for Transit dashboard' }).count()).toBe(0)
    const refused = await me()
    expect(refused.status).toBe(401)
    expect(await refused.json()).toMatchObject({ code: 'invalid_token' })
    expect(problems).toEqual([])
  })

  it('creates an API key on the page, which a script then uses, and deletes it there', async () => {
    const { page, problems } = await open()
    await signIn(page)
    await page.getByLabel('Key name').fill('Nightly export')
    await page.getByRole('button', { name: 'Create API key' }).click()
    await page.locator('#new-key-secret').waitFor()
    const keyId = (await page.locator('#new-key-id').textContent()) as string
    const keySecret = (await page.locator('#new-key-secret').textContent()) as string
    await expect(page.locator(`#keys tr[data-key-id="${keyId}"]`).textContent()).resolves.toContain('Nightly export')
    await shot(page, 'api-keys')

    // What `curl -u keyId:keySecret` does, from outside the browser.
    const basic = `Basic ${Buffer.from(`${keyId}:${keySecret}`).toString('base64')}`
    const read = () => tlsFetch(`${origin}/resource/draft-budget.json`, { headers: { authorization: basic, 'x-app-token': appTokenOf(page) } })
    const ok = await read()
    expect(ok.status).toBe(200)
    expect(await ok.json()).toEqual(PRIVATE_DATASETS['draft-budget']?.rows)

    await page.locator(`#keys tr[data-key-id="${keyId}"]`).getByRole('button', { name: 'Delete' }).click()
    await page.locator(`#keys tr[data-key-id="${keyId}"]`).waitFor({ state: 'detached' })
    await shot(page, 'api-keys-deleted')
    const refused = await read()
    expect(refused.status).toBe(401)
    expect(problems).toEqual([])
  })

  it('signs nobody in with an API key id and secret typed into the sign-in form', async () => {
    const { page } = await open()
    const { keyId, keySecret } = (running as PortalInChromium).portal.credentials
    await page.goto(`${origin}/profile/edit/developer_settings`)
    await page.getByLabel('Username').fill(keyId)
    await page.getByLabel('Password').fill(keySecret)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/An API key cannot sign in/)
    await shot(page, 'portal-sign-in-api-key')
    expect(await page.content()).not.toContain(keySecret)
    // No session: the settings page still asks to sign in, and the key still works for scripts.
    await page.goto(`${origin}/profile/edit/developer_settings`)
    await page.getByRole('heading', { name: 'Sign in to the example portal' }).waitFor()
    const basic = `Basic ${Buffer.from(`${keyId}:${keySecret}`).toString('base64')}`
    const { appToken } = (running as PortalInChromium).portal.credentials
    expect((await tlsFetch(`${origin}/resource/draft-budget.json`, { headers: { authorization: basic, 'x-app-token': appToken } })).status).toBe(200)
  })

  it('says what is wrong with a Callback Prefix and keeps what was typed', async () => {
    const { page } = await open()
    await signIn(page)
    await page.getByLabel('Application name').fill('Plain http app')
    await page.getByLabel('Callback Prefix').fill('http://insecure.example/cb/')
    await page.getByRole('button', { name: 'Register' }).click()
    await expect(page.getByRole('alert').first().textContent()).resolves.toContain('it does not use https')
    await expect(page.getByLabel('Application name').inputValue()).resolves.toBe('Plain http app')
    expect(await page.locator('#secret-token').count()).toBe(0)
  })

  it('shows a limit announced in shadow: when the application is near it, and what it would have throttled as a series of its own', async () => {
    const { page, problems } = await open()
    const { gate } = (running as PortalInChromium).portal
    await signIn(page)
    await page.getByLabel('Application name').fill('Bus stops')
    await page.getByRole('button', { name: 'Register' }).click()
    await page.getByRole('status').waitFor()
    const appToken = (await page.locator('#app-token').textContent()) as string
    const card = page.locator(`#app-${appToken}`)
    // The operators announce 5 requests a minute, counted in shadow (examples/portal.ts).
    await gate.applications.update(appToken, { plan: 'announced' })
    const send = async (times: number) => {
      for (let i = 0; i < times; i++) expect((await tlsFetch(`${origin}/resource/bike-racks.json`, { headers: { 'x-app-token': appToken } })).status).toBe(200)
    }
    await send(3)
    await page.goto(`${origin}/profile/edit/developer_settings`)
    expect(await card.locator('.near-limit').count()).toBe(0)
    expect(await card.locator('.legend-shadow').count()).toBe(0)

    // Past it: every request let through, the ones past 5 counted as would-have-been-throttled.
    await send(4)
    await gate.usage.flush()
    const now = Date.now()
    const { buckets } = await gate.usage.query({ appToken, from: now - (now % 3_600_000) - 23 * 3_600_000, to: now, granularity: 'hour' })
    const shadowed = buckets.reduce((sum, bucket) => sum + (bucket.shadow.minute ?? 0), 0)
    expect(shadowed).toBeGreaterThan(0)
    await page.goto(`${origin}/profile/edit/developer_settings`)
    const notice = (await card.locator('.near-limit').textContent()) as string
    expect(notice).toMatch(/minute: (used up|\d+% used) \(\d left of 5 requests per minute, rolling/)
    expect(notice).toContain('A shadow limit: it does not refuse requests yet')
    const hourly = card.locator('figure').first()
    await expect(hourly.locator('.legend-shadow').textContent()).resolves.toContain('Would have been throttled')
    const heights = await hourly.locator('rect.bar-shadow').evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('height'))))
    expect(heights.length).toBeGreaterThan(0)
    expect(Math.max(...heights)).toBeGreaterThan(0)
    // The table has it as a column of its own, by limit name.
    await expect(hourly.locator('thead th').last().textContent()).resolves.toBe('Would have been throttled')
    const column = await hourly.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => Number.parseInt(tr.querySelector('td:last-child')?.textContent ?? '0', 10)))
    expect(column.reduce((sum, n) => sum + n, 0)).toBe(shadowed)
    await card.scrollIntoViewIfNeeded()
    await shot(page, 'developer-settings-shadow-near-limit')
    expect(problems).toEqual([])
  }, 60_000)

  it('charts an application’s traffic, rotates its secret with a grace and then at once after a leak, renames and deletes it', async () => {
    const { page, problems } = await open()
    const { gate } = (running as PortalInChromium).portal
    await signIn(page)
    await page.getByLabel('Application name').fill('Ferry times')
    await page.getByLabel('Callback Prefix').fill(`${origin}/ferry/`)
    await page.getByRole('button', { name: 'Register' }).click()
    await page.getByRole('status').waitFor()
    const appToken = (await page.locator('#app-token').textContent()) as string
    const oldSecret = (await page.locator('#secret-token').textContent()) as string
    const card = page.locator(`#app-${appToken}`)
    await expect(card.getByRole('img', { name: /last 24 hours/ }).getAttribute('aria-labelledby')).resolves.toBeTruthy()
    await expect(card.textContent()).resolves.toContain('No requests in this period')

    // Traffic with its app token: one with a wrong password (refused), then more than its
    // limit, set low by the operator, allows (the rest throttled).
    await gate.applications.update(appToken, { limit: 3 })
    const statuses: number[] = []
    const hourOf = () => Math.floor(Date.now() / 3_600_000)
    const firstHour = hourOf()
    const wrong = `Basic ${Buffer.from('ada:not the password').toString('base64')}`
    statuses.push((await tlsFetch(`${origin}/resource/bike-racks.json`, { headers: { 'x-app-token': appToken, authorization: wrong } })).status)
    for (let i = 0; i < 5; i++) statuses.push((await tlsFetch(`${origin}/resource/bike-racks.json`, { headers: { 'x-app-token': appToken } })).status)
    expect(statuses).toContain(200)
    expect(statuses).toContain(429)
    await gate.usage.flush()

    await page.goto(`${origin}/profile/edit/developer_settings`)
    const hourly = card.locator('figure').first()
    // The table behind the chart has the counts, as the requests were answered: all in this
    // hour's row, or in the last two rows when an hour began between the requests and the page.
    const rows = await hourly.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => Number(td.textContent))))
    const hours = hourOf() === firstHour ? 1 : 2
    const totals = [0, 1, 2].map((column) => rows.reduce((sum, cells) => sum + (cells[column] ?? 0), 0))
    expect(totals).toEqual([statuses.length, statuses.filter((s) => s === 429).length, statuses.filter((s) => s === 401).length])
    expect(rows.slice(0, -hours).flat().every((n) => n === 0)).toBe(true)
    // And the chart draws them: a bar for the answered requests and one for the throttled.
    const tallest = async (selector: string) => Math.max(...(await hourly.locator(selector).evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('height'))))))
    expect(await tallest('rect.bar-answered')).toBeGreaterThan(0)
    expect(await tallest('rect.bar-throttled')).toBeGreaterThan(0)
    // Its owner sees it is near (here: past) its limit, and since when the gate said so.
    await expect(card.locator('.near-limit').textContent()).resolves.toMatch(/^Near its limit.*app: used up \(0 left of 3 requests per hour, rolling/s)
    await expect(card.locator('.near-limit time').getAttribute('datetime')).resolves.toMatch(/^\d{4}-\d\d-\d\dT/)
    await card.scrollIntoViewIfNeeded()
    await shot(page, 'developer-settings-usage')

    // A new secret: shown once, with the time the old one stops working.
    await card.getByRole('button', { name: 'New secret token' }).click()
    await page.getByRole('status').waitFor()
    const newSecret = (await page.locator('#new-secret-token').textContent()) as string
    expect(newSecret).toMatch(/^[\w-]{43}$/)
    const { previousSecretExpiresAt } = (await gate.applications.find(appToken)) as { previousSecretExpiresAt: number }
    await expect(page.getByRole('status').locator('time').getAttribute('datetime')).resolves.toBe(new Date(previousSecretExpiresAt).toISOString())
    await shot(page, 'developer-settings-new-secret')

    // The token endpoint authenticates the client before it looks at the code: a made-up
    // code is invalid_grant for the right secret and invalid_client for a wrong one.
    const exchange = async (secret: string) => {
      const response = await tlsFetch(`${origin}/oauth/access_token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'authorization_code', client_id: appToken, client_secret: secret, redirect_uri: `${origin}/ferry/cb`, code: 'made-up' }),
      })
      return ((await response.json()) as { error: string }).error
    }
    await expect(exchange(oldSecret)).resolves.toBe('invalid_grant')
    await expect(exchange(newSecret)).resolves.toBe('invalid_grant')
    // Past the grace (the clock moved on, not waited for), the old secret is refused.
    vi.useFakeTimers({ toFake: ['Date'], now: previousSecretExpiresAt + 1000 })
    try {
      await expect(exchange(oldSecret)).resolves.toBe('invalid_client')
      await expect(gate.applications.verifySecret(appToken, oldSecret)).resolves.toBe(false)
      await expect(exchange(newSecret)).resolves.toBe('invalid_grant')
    } finally {
      vi.useRealTimers()
    }

    await page.goto(`${origin}/profile/edit/developer_settings`)
    expect(await page.content()).not.toContain(newSecret)
    // After a leak: the secret in use, and the one still in its grace, stop at once.
    await card.getByLabel('stops working now: it leaked').check()
    await card.getByRole('button', { name: 'New secret token' }).click()
    await page.getByRole('status').waitFor()
    await expect(page.getByRole('status').textContent()).resolves.toContain('The previous secret token no longer works.')
    const afterLeak = (await page.locator('#new-secret-token').textContent()) as string
    await shot(page, 'developer-settings-secret-leaked')
    await expect(exchange(newSecret)).resolves.toBe('invalid_client')
    await expect(exchange(oldSecret)).resolves.toBe('invalid_client')
    await expect(exchange(afterLeak)).resolves.toBe('invalid_grant')
    await expect(gate.applications.find(appToken)).resolves.toMatchObject({ previousSecretExpiresAt: null })
    await page.goto(`${origin}/profile/edit/developer_settings`)
    expect(await page.content()).not.toContain(afterLeak)
    await card.getByLabel('New name').fill('Ferry & tram times')
    await card.getByRole('button', { name: 'Rename' }).click()
    await expect(card.getByRole('heading', { level: 3 }).textContent()).resolves.toBe('Ferry & tram times')
    await expect(gate.applications.find(appToken)).resolves.toMatchObject({ name: 'Ferry & tram times' })

    await card.getByRole('link', { name: 'Delete Ferry & tram times' }).click()
    await page.getByRole('heading', { name: 'Delete Ferry & tram times?' }).waitFor()
    await shot(page, 'developer-settings-delete')
    await page.getByRole('button', { name: 'Delete Ferry & tram times for good' }).click()
    await page.getByRole('heading', { name: 'Developer settings' }).waitFor()
    expect(await page.locator(`#app-${appToken}`).count()).toBe(0)
    await expect(gate.applications.find(appToken)).resolves.toBeUndefined()
    expect((await tlsFetch(`${origin}/resource/bike-racks.json`, { headers: { 'x-app-token': appToken } })).status).toBeGreaterThanOrEqual(400)
    expect(problems).toEqual([])
    // Many page loads in one test: room for a busy machine.
  }, 90_000)

  it('shows, renames and deletes none of another user’s applications', async () => {
    const { page } = await open()
    const { gate } = (running as PortalInChromium).portal
    const other = await gate.users.create({ username: `grace${Date.now()}`, password: 'another long password', displayName: 'Grace', email: `grace${Date.now()}@example.org` })
    const theirs = await gate.applications.register({ name: 'Not yours', ownerId: other.id })
    await signIn(page)
    expect(await page.locator(`#app-${theirs.appToken}`).count()).toBe(0)
    const response = await page.goto(`${origin}/profile/edit/developer_settings/applications/${theirs.appToken}/delete`)
    expect(response?.status()).toBe(404)
    // The forms' own posts, with this user's CSRF token, change nothing of theirs either.
    await page.goto(`${origin}/profile/edit/developer_settings`)
    const csrf = (await page.locator('input[name="csrf"]').first().inputValue()) as string
    for (const action of ['name', 'secret', 'delete']) {
      const posted = await page.request.post(`${origin}/profile/edit/developer_settings/applications/${theirs.appToken}/${action}`, { form: { csrf, name: 'Mine now' } })
      expect(posted.status()).toBe(404)
    }
    await expect(gate.applications.find(theirs.appToken)).resolves.toMatchObject({ name: 'Not yours', previousSecretExpiresAt: null })
  })
})
