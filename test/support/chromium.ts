/**
 * The example portal over TLS, driven by Debian's Chromium through playwright-core: what
 * every browser test starts from. Skipped, with one notice, where Chromium is not
 * installed; `.ci/run` installs it.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { chromium, type Browser, type Page } from 'playwright-core'
import { createPortal } from '../../examples/portal.js'
import { tlsCustomFetch } from './tls-fetch.js'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
export const CHROMIUM_PATH = CHROMIUM
/** The flags a closed-network CI machine needs: no sandbox as root, no background calls home. */
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
export const chromiumAvailable = existsSync(CHROMIUM)
if (!chromiumAvailable) console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`)

/** Where screenshots go (gitignored), so a person can look at every page a test saw. */
const SHOTS = new URL('../../test-artifacts/', import.meta.url)

export function screenshot(page: Page, name: string): Promise<Buffer> {
  mkdirSync(SHOTS, { recursive: true })
  return page.screenshot({ path: new URL(`${name}.png`, SHOTS).pathname, fullPage: true })
}

export interface PortalInChromium {
  readonly origin: string
  readonly portal: Awaited<ReturnType<typeof createPortal>>
  readonly browser: Browser
  close(): Promise<void>
}

/** The example portal on an https server of its own, and a headless Chromium. */
export async function portalInChromium(): Promise<PortalInChromium> {
  const tls = new URL('../fixtures/tls/', import.meta.url)
  const server = https.createServer({ cert: readFileSync(new URL('cert.pem', tls)), key: readFileSync(new URL('key.pem', tls)) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `https://localhost:${(server.address() as AddressInfo).port}`
  // The gate's own sign-in page, which these tests check, rather than the portal's /login.
  const portal = await createPortal({ origin, fetch: tlsCustomFetch, gateSignIn: true })
  server.on('request', portal.app)
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
  })
  return {
    origin,
    portal,
    browser,
    async close() {
      await browser.close()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/**
 * A fresh browser profile, with every console error (a CSP violation is one) and script
 * error collected; with `failedResponses`, every answer of 400 or more too (but the
 * favicon the browser asks for on its own).
 */
export async function openPage(browser: Browser, options: { failedResponses?: boolean } = {}): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true })
  const page = await context.newPage()
  const problems: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) problems.push(message.text())
  })
  page.on('pageerror', (error) => problems.push(error.message))
  if (options.failedResponses === true) {
    page.on('response', (response) => {
      if (response.status() >= 400 && !response.url().endsWith('/favicon.ico')) problems.push(`${response.status()} ${response.url()}`)
    })
  }
  return { page, problems }
}
