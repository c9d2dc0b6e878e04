/**
 * The whole OAuth flow, driven by real client libraries from npm against a real TLS
 * server in every mount. The user's part (sign in, approve) is done as a browser does it:
 * cookies, the CSRF field, 303 redirects.
 */
import https from 'node:https'
import { OAuth2Client } from '@badgateway/oauth2-client'
import * as oauth from 'oauth4webapi'
import * as openid from 'openid-client'
import { AuthorizationCode } from 'simple-oauth2'
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest'
import { createGate, type Gate, type RegisteredApplication, type User } from '../src/index.js'
import { FRAMEWORKS, FRAMEWORKS_WITH_BODY_PARSERS } from './adapters/frameworks.js'
import { listen, TEST_CERT, type RunningServer } from './adapters/servers.js'
import { Browser } from './support/browser.js'
import { tlsCustomFetch, tlsFetch } from './support/tls-fetch.js'

const PASSWORD = 'correct horse battery'
const PREFIX = 'https://transit.example/oauth/'

describe.each([...FRAMEWORKS, ...FRAMEWORKS_WITH_BODY_PARSERS])('OAuth with real clients through $name', (framework) => {
  let gate: Gate
  let server: RunningServer
  let app: RegisteredApplication
  let ada: User
  let warnings: MockInstance<typeof process.emitWarning>

  beforeAll(async () => {
    // The clients discover the endpoints, and this gate has no oauth.issuer: it says so once.
    warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    gate = createGate({ basic: { scrypt: { logN: 10 } } })
    app = await gate.applications.register({ name: 'Transit dashboard', callbackPrefix: PREFIX })
    ada = await gate.users.create({ username: 'ada', password: PASSWORD, displayName: 'Ada Lovelace', email: 'ada@example.org' })
    server = await listen(framework.listener(gate), true)
  })
  afterAll(async () => {
    await server.close()
    const codes = warnings.mock.calls.map(([, options]) => (options as { code?: string } | undefined)?.code)
    warnings.mockRestore()
    expect(codes).toEqual(['ODG_DERIVED_ISSUER'])
  })

  /** Reads the current user with a token, as the application then does. */
  async function currentUser(accessToken: string, scheme = 'OAuth') {
    const res = await tlsFetch(`${server.url}/api/users/current.json`, { headers: { authorization: `${scheme} ${accessToken}` } })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }

  it('oauth4webapi: discovery, PKCE S256, client_secret_post, then the current user, then revocation', async () => {
    const issuer = new URL(server.url)
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', [oauth.customFetch]: tlsCustomFetch }))
    expect(as.code_challenge_methods_supported).toEqual(['S256'])
    const client: oauth.Client = { client_id: app.appToken }
    const clientAuth = oauth.ClientSecretPost(app.secretToken)
    const verifier = oauth.generateRandomCodeVerifier()
    const state = oauth.generateRandomState()
    const redirectUri = `${PREFIX}callback?tab=live`
    const url = new URL(as.authorization_endpoint as string)
    url.search = new URLSearchParams({
      client_id: app.appToken,
      response_type: 'code',
      redirect_uri: redirectUri,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString()

    const callback = await new Browser().authorize(url.href, 'ada', PASSWORD)
    expect(callback.startsWith(`${redirectUri}&code=`)).toBe(true)
    const params = oauth.validateAuthResponse(as, client, new URL(callback), state)
    const response = await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, redirectUri, verifier, { [oauth.customFetch]: tlsCustomFetch })
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response)
    expect(tokens.token_type).toBe('bearer')
    expect(tokens.expires_in).toBe(86_400)

    expect(await currentUser(tokens.access_token)).toEqual({ status: 200, body: expect.objectContaining({ id: ada.id, displayName: 'Ada Lovelace' }) })
    expect((await currentUser(tokens.access_token, 'Bearer')).status).toBe(200)

    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, clientAuth, tokens.access_token, { [oauth.customFetch]: tlsCustomFetch }))
    expect((await currentUser(tokens.access_token)).status).toBe(401)
  })

  it('openid-client: discovery and client_secret_basic', async () => {
    const config = await openid.discovery(new URL(server.url), app.appToken, app.secretToken, openid.ClientSecretBasic(app.secretToken), {
      algorithm: 'oauth2',
      [openid.customFetch]: tlsCustomFetch,
    })
    config[openid.customFetch] = tlsCustomFetch
    const state = openid.randomState()
    const redirectUri = `${PREFIX}openid`
    const url = openid.buildAuthorizationUrl(config, { redirect_uri: redirectUri, response_type: 'code', state })
    const callback = await new Browser().authorize(url.href, 'ada', PASSWORD)
    const tokens = await openid.authorizationCodeGrant(config, new URL(callback), { expectedState: state })
    expect((await currentUser(tokens.access_token)).body.id).toBe(ada.id)
    await openid.tokenRevocation(config, tokens.access_token)
    expect((await currentUser(tokens.access_token)).status).toBe(401)
  })

  it('@badgateway/oauth2-client: client_secret_basic with PKCE', async () => {
    const client = new OAuth2Client({
      server: `${server.url}/`,
      clientId: app.appToken,
      clientSecret: app.secretToken,
      authenticationMethod: 'client_secret_basic',
      authorizationEndpoint: '/oauth/authorize',
      tokenEndpoint: '/oauth/access_token',
      fetch: tlsFetch,
    })
    const redirectUri = `${PREFIX}badgateway`
    const codeVerifier = 'x'.repeat(20) + oauth.generateRandomCodeVerifier()
    const url = await client.authorizationCode.getAuthorizeUri({ redirectUri, state: 'some state/with=odd&chars ü', codeVerifier })
    const callback = await new Browser().authorize(url, 'ada', PASSWORD)
    expect(new URL(callback).searchParams.get('state')).toBe('some state/with=odd&chars ü')
    const token = await client.authorizationCode.getTokenFromCodeRedirect(callback, { redirectUri, state: 'some state/with=odd&chars ü', codeVerifier })
    expect((await currentUser(token.accessToken)).body.id).toBe(ada.id)
  })

  it('simple-oauth2: client credentials and parameters in a JSON body', async () => {
    const client = new AuthorizationCode({
      client: { id: app.appToken, secret: app.secretToken },
      auth: { tokenHost: server.url, tokenPath: '/oauth/access_token', authorizePath: '/oauth/authorize' },
      options: { authorizationMethod: 'body', bodyFormat: 'json' },
      http: { agent: new https.Agent({ ca: TEST_CERT }) },
    })
    const redirectUri = `${PREFIX}simple?from=json`
    const callback = await new Browser().authorize(client.authorizeURL({ redirect_uri: redirectUri, state: 'json-state' }), 'ada', PASSWORD)
    const code = new URL(callback).searchParams.get('code') as string
    const token = await client.getToken({ code, redirect_uri: redirectUri })
    expect(token.token.token_type).toBe('bearer')
    expect((await currentUser(token.token.access_token as string)).body.id).toBe(ada.id)
  })
})
