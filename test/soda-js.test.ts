/**
 * soda-js, the platform's own JavaScript client (an exact-pinned devDependency), against the
 * example portal over https: a public dataset with an app token, a private one with an
 * API key as its Basic credentials. It runs in a child process that trusts the test
 * certificate through NODE_EXTRA_CA_CERTS, as a user's script on another machine would.
 */
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DATASETS, PRIVATE_DATASETS } from '../examples/datasets.js'
import { createPortal } from '../examples/portal.js'
import { tlsCustomFetch } from './support/tls-fetch.js'

const run = promisify(execFile)
const tls = new URL('fixtures/tls/', import.meta.url)

describe('soda-js against the example portal', () => {
  let server: https.Server
  let site: string
  let credentials: Awaited<ReturnType<typeof createPortal>>['credentials']

  beforeAll(async () => {
    server = https.createServer({ cert: readFileSync(new URL('cert.pem', tls)), key: readFileSync(new URL('key.pem', tls)) })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    site = `localhost:${(server.address() as AddressInfo).port}`
    const portal = await createPortal({ origin: `https://${site}`, fetch: tlsCustomFetch })
    credentials = portal.credentials
    server.on('request', portal.app)
  })

  afterAll(async () => {
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
  })

  async function soda(dataset: string, options: Record<string, string>): Promise<{ rows?: unknown; error?: unknown; warnings: string }> {
    const { stdout, stderr } = await run(process.execPath, [fileURLToPath(new URL('support/soda-read.cjs', import.meta.url)), site, dataset, JSON.stringify(options)], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: fileURLToPath(new URL('cert.pem', tls)) },
      timeout: 15_000,
    })
    return { ...JSON.parse(stdout), warnings: stderr }
  }

  it('reads a public dataset with an app token', async () => {
    const result = await soda('bike-racks', { apiToken: credentials.appToken })
    expect(result.rows).toEqual(DATASETS['bike-racks']?.rows)
    // superagent 0.21, under soda-js, still calls new Buffer(): Node says so, and nothing else.
    expect(result.warnings.replace(/.*DEP0005.*\n?|.*node --trace-deprecation.*\n?/g, '')).toBe('')
  })

  it('reads a private dataset with an API key, and is refused without one', async () => {
    const withKey = await soda('draft-budget', { apiToken: credentials.appToken, username: credentials.keyId, password: credentials.keySecret })
    expect(withKey.rows).toEqual(PRIVATE_DATASETS['draft-budget']?.rows)
    const without = await soda('draft-budget', { apiToken: credentials.appToken })
    expect(without.error).toMatchObject({ code: 'authentication_required', error: true })
    const wrong = await soda('draft-budget', { apiToken: credentials.appToken, username: credentials.keyId, password: 'not-the-secret' })
    expect(wrong.error).toMatchObject({ code: 'invalid_credentials' })
  })
})
