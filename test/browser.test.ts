/// <reference lib="dom" />
/**
 * The login and consent pages in a real browser (Debian's Chromium, driven by
 * playwright-core): the example portal's third-party app signs a user in through the
 * gate, end to end. What only a browser can show: the pages' own stylesheet is applied
 * under their strict CSP, no CSP violation is reported, the labels work, and the 303
 * after Allow to the application's origin is not blocked by `form-action`.
 *
 * Skipped, with a notice, where Chromium is not installed; `.ci/run` installs it.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { chromium, type Browser, type Page } from 'playwright-core'
import type { Gate } from '../src/index.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPortal, DEMO_USER } from '../examples/portal.js'
import { tlsCustomFetch } from './support/tls-fetch.js'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const available = existsSync(CHROMIUM)
if (!available) console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`)

const SHOTS = new URL('../test-results/', import.meta.url)

describe.skipIf(!available)('the sign-in and consent pages in Chromium', () => {
  let browser: Browser
  let server: https.Server
  let origin: string
  let gate: Gate

  beforeAll(async () => {
    const tls = new URL('fixtures/tls/', import.meta.url)
    server = https.createServer({ cert: readFileSync(new URL('cert.pem', tls)), key: readFileSync(new URL('key.pem', tls)) })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    origin = `https://localhost:${(server.address() as AddressInfo).port}`
    const portal = await createPortal({ origin, fetch: tlsCustomFetch })
    const app = portal.app
    gate = portal.gate
    server.on('request', app)
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      // The flags a closed-network CI machine needs: no sandbox as root, no background calls home.
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })
    mkdirSync(SHOTS, { recursive: true })
  })

  afterAll(async () => {
    await browser?.close()
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
  })

  /**
   * A fresh browser profile, with every console error (a CSP violation is one), script
   * error and failed response collected; the favicon the browser asks for on its own is
   * not the pages' business.
   */
  async function open(): Promise<{ page: Page; problems: string[] }> {
    const context = await browser.newContext({ ignoreHTTPSErrors: true })
    const page = await context.newPage()
    const problems: string[] = []
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) problems.push(message.text())
    })
    page.on('pageerror', (error) => problems.push(error.message))
    page.on('response', (response) => {
      if (response.status() >= 400 && !response.url().endsWith('/favicon.ico')) problems.push(`${response.status()} ${response.url()}`)
    })
    return { page, problems }
  }

  it('signs a user in and back to the application, with the pages styled and nothing blocked', async () => {
    const { page, problems } = await open()
    await page.goto(`${origin}/demo-app/`)
    await page.getByRole('link', { name: 'Sign in with the open data portal' }).click()

    await expect(page.getByRole('heading', { name: 'Sign in' }).isVisible()).resolves.toBe(true)
    // The inline stylesheet is allowed by its hash: the primary button has its colours.
    const background = await page.getByRole('button', { name: 'Sign in' }).evaluate((button) => window.getComputedStyle(button).backgroundColor)
    expect(background).toBe('rgb(26, 95, 180)')
    await page.screenshot({ path: new URL('login.png', SHOTS).pathname, fullPage: true })
    await page.getByLabel('Username').fill(DEMO_USER.username)
    await page.getByLabel('Password').fill(DEMO_USER.password)
    await page.getByRole('button', { name: 'Sign in' }).click()

    await expect(page.getByRole('heading', { name: 'Allow Demo dashboard to use your account?' }).isVisible()).resolves.toBe(true)
    await expect(page.getByText('Signed in as Ada Lovelace').isVisible()).resolves.toBe(true)
    await page.screenshot({ path: new URL('consent.png', SHOTS).pathname, fullPage: true })
    await page.getByRole('button', { name: 'Allow' }).click()

    await page.getByRole('heading', { name: 'Signed in as Ada Lovelace' }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/demo-app/callback')
    expect(await page.locator('pre').textContent()).toContain('"email": "ada@example.org"')
    expect(problems).toEqual([])
  })

  it('says so on the page after a wrong password, and keeps the username', async () => {
    const { page, problems } = await open()
    await page.goto(`${origin}/demo-app/login`)
    await page.getByLabel('Username').fill(DEMO_USER.username)
    await page.getByLabel('Password').fill('not the password')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Wrong username or password.')
    await expect(page.getByLabel('Username').inputValue()).resolves.toBe(DEMO_USER.username)
    expect(problems.filter((p) => !p.startsWith('401 '))).toEqual([])
  })

  it('sends the user back with access_denied after Deny', async () => {
    const { page } = await open()
    await page.goto(`${origin}/demo-app/login`)
    await page.getByLabel('Username').fill(DEMO_USER.username)
    await page.getByLabel('Password').fill(DEMO_USER.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('button', { name: 'Deny' }).click()
    await page.getByRole('heading', { name: 'Sign-in did not complete' }).waitFor()
    expect(await page.locator('main').textContent()).toContain('access_denied')
  })

  it('lists the approved app on the connected-apps page, revokes it, and it is gone', async () => {
    const { page, problems } = await open()
    await page.goto(`${origin}/demo-app/login`)
    await page.getByLabel('Username').fill(DEMO_USER.username)
    await page.getByLabel('Password').fill(DEMO_USER.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('button', { name: 'Allow' }).click()
    await page.getByRole('heading', { name: 'Signed in as Ada Lovelace' }).waitFor()

    // The same login session carries over to the gate's connected-apps page.
    await page.goto(`${origin}/oauth/grants`)
    await expect(page.getByRole('heading', { name: 'Connected apps' }).isVisible()).resolves.toBe(true)
    const app = page.getByRole('region', { name: 'Demo dashboard' })
    await expect(app.getByText(/active token/).textContent()).resolves.toMatch(/[1-9]\d* active tokens?\./)
    const button = page.getByRole('button', { name: 'Revoke access for Demo dashboard' })
    const border = await button.evaluate((b) => window.getComputedStyle(b).borderTopStyle)
    expect(border).toBe('solid') // the inline stylesheet applies under the page's CSP
    await page.screenshot({ path: new URL('connected-apps.png', SHOTS).pathname, fullPage: true })
    await button.click()

    await page.getByText('No application has access to your account.').waitFor()
    expect(new URL(page.url()).pathname).toBe('/oauth/grants')
    await expect(app.count()).resolves.toBe(0)
    const ada = await gate.users.findByUsername(DEMO_USER.username)
    expect(await gate.grants.list(ada?.id as string)).toEqual([])
    expect(problems).toEqual([])
  })
})
