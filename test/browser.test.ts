/// <reference lib="dom" />
/**
 * The login and consent pages in a real browser (Debian's Chromium, driven by
 * playwright-core): the example portal's third-party app signs a user in through the
 * gate, end to end. What only a browser can show: the pages' own stylesheet is applied
 * under their strict CSP, no CSP violation is reported, the labels work, and the 303
 * after Allow to the application's origin is not blocked by `form-action`, every text on
 * every page meets WCAG AA contrast (4.5:1) as computed in both colour schemes, and axe-core
 * finds no accessibility violation. The flow runs once more through the Fastify and the
 * Hono mount (test/adapters/frameworks.ts), straight from the authorize link.
 *
 * Skipped, with a notice, where Chromium is not installed; `.ci/run` installs it.
 */
import { createRequire } from 'node:module'
import { chromium, type Browser, type Page } from 'playwright-core'
import { createGate, type Gate } from '../src/index.js'
import { chromiumAvailable, CHROMIUM_ARGS, CHROMIUM_PATH, openPage, portalInChromium, screenshot, type PortalInChromium } from './support/chromium.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEMO_USER } from '../examples/portal.js'
import { FRAMEWORKS } from './adapters/frameworks.js'
import { listen, type RunningServer } from './adapters/servers.js'
import { tlsFetch } from './support/tls-fetch.js'

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js')

/** A text whose contrast with what is behind it is under WCAG AA's 4.5:1. */
interface LowContrast {
  readonly text: string
  readonly ratio: number
  readonly color: string
  readonly background: string
}

/**
 * Every visible text (and form control) on the page whose computed colour, against the
 * nearest opaque background behind it, is under 4.5:1 (WCAG 2 relative luminance).
 */
function lowContrastTexts(page: Page): Promise<LowContrast[]> {
  return page.evaluate(() => {
    const rgba = (value: string) => {
      const parts = (/rgba?\(([^)]+)\)/.exec(value)?.[1] ?? '0, 0, 0, 0').split(/[ ,/]+/).filter(Boolean).map(Number)
      return { r: parts[0] ?? 0, g: parts[1] ?? 0, b: parts[2] ?? 0, a: parts[3] ?? 1 }
    }
    const luminance = ({ r, g, b }: { r: number; g: number; b: number }) => {
      const channel = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
      return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)
    }
    const backgroundOf = (element: Element | null) => {
      for (let e = element; e !== null; e = e.parentElement) {
        const color = getComputedStyle(e).backgroundColor
        if (rgba(color).a > 0) return color
      }
      return getComputedStyle(document.documentElement).colorScheme.includes('dark') ? 'rgb(18, 18, 18)' : 'rgb(255, 255, 255)'
    }
    const elements = Array.from(document.querySelectorAll('body *')).filter(
      (e) =>
        e.getClientRects().length > 0 &&
        (e.matches('input:not([type=hidden]), button, summary') || Array.from(e.childNodes).some((n) => n.nodeType === Node.TEXT_NODE && n.textContent?.trim() !== '')),
    )
    return elements.flatMap((e) => {
      const style = getComputedStyle(e)
      const color = style.color
      const background = backgroundOf(e)
      const [a, b] = [luminance(rgba(color)), luminance(rgba(background))].sort((x, y) => y - x) as [number, number]
      const ratio = (a + 0.05) / (b + 0.05)
      return ratio < 4.5 ? [{ text: (e.textContent ?? (e as HTMLInputElement).value).trim().slice(0, 40), ratio: Math.round(ratio * 100) / 100, color, background }] : []
    })
  })
}

/** axe-core's violations on the page, as `rule: selectors`. */
async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE })
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (context: Document) => Promise<{ violations: Array<{ id: string; nodes: Array<{ target: unknown[] }> }> }> } }).axe
    return (await axe.run(document)).violations
  })
  return violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)
}

describe.skipIf(!chromiumAvailable)('the sign-in and consent pages in Chromium', () => {
  let browser: Browser
  let origin: string
  let gate: Gate
  let running: PortalInChromium | undefined

  beforeAll(async () => {
    running = await portalInChromium()
    ;({ browser, origin } = running)
    gate = running.portal.gate
  })

  afterAll(async () => {
    await running?.close()
  })

  const open = () => openPage(browser, { failedResponses: true })

  it('signs a user in and back to the application, with the pages styled and nothing blocked', async () => {
    const { page, problems } = await open()
    await page.goto(`${origin}/demo-app/`)
    await page.getByRole('link', { name: 'Sign in with the open data portal' }).click()

    await expect(page.getByRole('heading', { name: 'Sign in' }).isVisible()).resolves.toBe(true)
    // The inline stylesheet is allowed by its hash: the primary button has its colours.
    const background = await page.getByRole('button', { name: 'Sign in' }).evaluate((button) => window.getComputedStyle(button).backgroundColor)
    expect(background).toBe('rgb(26, 95, 180)')
    await screenshot(page, 'login')
    await page.getByLabel('Username').fill(DEMO_USER.username)
    await page.getByLabel('Password').fill(DEMO_USER.password)
    await page.getByRole('button', { name: 'Sign in' }).click()

    await expect(page.getByRole('heading', { name: 'Allow Demo dashboard to use your account?' }).isVisible()).resolves.toBe(true)
    await expect(page.getByText('Signed in as Ada Lovelace').isVisible()).resolves.toBe(true)
    await screenshot(page, 'consent')
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

  it.each(['light', 'dark'] as const)('meets WCAG AA contrast on every page and passes axe-core, in the %s colour scheme', async (colorScheme) => {
    // The pages' CSP allows no script; axe-core is injected into a context that bypasses it.
    const context = await browser.newContext({ ignoreHTTPSErrors: true, colorScheme, bypassCSP: true })
    const page = await context.newPage()
    const checked: Record<string, { lowContrast: LowContrast[]; axe: string[] }> = {}
    const accents: string[] = []
    const check = async (name: string) => {
      accents.push(...(await page.locator('button.primary').evaluateAll((buttons) => buttons.map((b) => getComputedStyle(b).backgroundColor))))
      await screenshot(page, `${name}-${colorScheme}`)
      checked[name] = { lowContrast: await lowContrastTexts(page), axe: await axeViolations(page) }
    }
    try {
      await page.goto(`${origin}/demo-app/login`)
      await expect(page.title()).resolves.toBe('Sign in · Example open data portal')
      await check('login')
      await page.getByLabel('Username').fill(DEMO_USER.username)
      await page.getByLabel('Password').fill('not the password')
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('alert').waitFor()
      await check('login-error')
      await page.getByLabel('Password').fill(DEMO_USER.password)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('heading', { name: 'Allow Demo dashboard to use your account?' }).waitFor()
      await check('consent')
      await page.getByRole('button', { name: 'Allow' }).click()
      await page.getByRole('heading', { name: 'Signed in as Ada Lovelace' }).waitFor()
      await page.goto(`${origin}/oauth/grants`)
      await page.getByRole('heading', { name: 'Connected apps' }).waitFor()
      await check('connected-apps')
      await page.goto(`${origin}/oauth/authorize?client_id=no-such-application`)
      await page.getByText('Technical details for the application').click()
      await page.getByText('No application is registered with this client_id.').waitFor()
      await check('error')
    } finally {
      await context.close()
    }
    expect(Object.keys(checked)).toEqual(['login', 'login-error', 'consent', 'connected-apps', 'error'])
    // The colours are the scheme's own, not the browser's defaults that happen to pass.
    for (const [name, result] of Object.entries(checked)) {
      expect({ name, ...result }).toEqual({ name, lowContrast: [], axe: [] })
    }
    expect(new Set(accents)).toEqual(new Set([colorScheme === 'dark' ? 'rgb(120, 174, 237)' : 'rgb(26, 95, 180)']))
  })

  it('cancels from the login page back to the application with access_denied', async () => {
    const { page } = await open()
    await page.goto(`${origin}/demo-app/login`)
    // The fields are required, yet Cancel needs none of them filled.
    await page.getByRole('button', { name: 'Cancel' }).click()
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
    await screenshot(page, 'connected-apps-after-sign-in')
    await button.click()

    await page.getByText('No application has access to your account.').waitFor()
    expect(new URL(page.url()).pathname).toBe('/oauth/grants')
    await expect(app.count()).resolves.toBe(0)
    const ada = await gate.users.findByUsername(DEMO_USER.username)
    expect(await gate.grants.list(ada?.id as string)).toEqual([])
    expect(problems).toEqual([])
  })
})

/**
 * The same pages, the same flow, through the Fastify and Hono mounts: their cookies, 303s
 * and headers reach a real browser through `reply` and through a Fetch `Response`.
 */
describe.skipIf(!chromiumAvailable).each(FRAMEWORKS.filter((f) => /^(Fastify|Hono)/.test(f.name)))('the OAuth flow in Chromium through $name', (framework) => {
  let browser: Browser
  let server: RunningServer
  let gate: Gate
  let appToken: string
  let secretToken: string

  beforeAll(async () => {
    gate = createGate({ basic: { scrypt: { logN: 10 } } })
    await gate.users.create({ username: 'ada', password: 'correct horse battery', displayName: 'Ada Lovelace', email: 'ada@example.org' })
    server = await listen(framework.listener(gate), true)
    ;({ appToken, secretToken } = await gate.applications.register({ name: 'Transit dashboard', callbackPrefix: `${server.url}/callback/` }))
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS })
  })

  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  it('signs a user in, asks for consent, and sends a code the application exchanges for a working token', async () => {
    const { page, problems } = await openPage(browser)
    const redirectUri = `${server.url}/callback/done`
    await page.goto(`${server.url}/oauth/authorize?${new URLSearchParams({ client_id: appToken, response_type: 'code', redirect_uri: redirectUri, state: 'xyz' })}`)
    await expect(page.getByRole('heading', { name: 'Sign in' }).isVisible()).resolves.toBe(true)
    const background = await page.getByRole('button', { name: 'Sign in' }).evaluate((button) => window.getComputedStyle(button).backgroundColor)
    expect(background).toBe('rgb(26, 95, 180)') // the inline stylesheet applies under the page's CSP
    await page.getByLabel('Username').fill('ada')
    await page.getByLabel('Password').fill('correct horse battery')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('button', { name: 'Allow' }).click()
    // The application's callback is not one of this server's routes: its URL is what counts.
    await page.waitForURL((url) => url.pathname === '/callback/done')
    const callback = new URL(page.url())
    expect(callback.searchParams.get('state')).toBe('xyz')
    const token = await tlsFetch(`${server.url}/oauth/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: callback.searchParams.get('code') ?? '', redirect_uri: redirectUri, client_id: appToken, client_secret: secretToken }).toString(),
    })
    expect(token.status).toBe(200)
    const { access_token: accessToken } = (await token.json()) as { access_token: string }
    const me = await tlsFetch(`${server.url}/api/users/current.json`, { headers: { authorization: `OAuth ${accessToken}` } })
    expect(me.status).toBe(200)
    expect(await me.json()).toMatchObject({ displayName: 'Ada Lovelace' })
    expect(problems).toEqual([])
  })
})
