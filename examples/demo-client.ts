/**
 * A third-party web application of the demo portal: "Demo dashboard" signs its users in
 * through the portal's OAuth server with a real client library (oauth4webapi), exactly
 * as an outside application would, then reads the current user with the token.
 *
 * It lives in the same process only to keep the demo to one command.
 */
import express, { type Router } from 'express'
import * as oauth from 'oauth4webapi'

export interface DemoClientOptions {
  /** The portal's https origin, which is also the OAuth issuer. */
  origin: string
  appToken: string
  secretToken: string
  /** A fetch that trusts the portal's certificate. */
  fetch: (url: string, options: object) => Promise<Response>
}

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body><main><h1>${title}</h1>${body}</main></body></html>`
const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

export function demoClient(options: DemoClientOptions): Router {
  const as: oauth.AuthorizationServer = {
    issuer: options.origin,
    authorization_endpoint: `${options.origin}/oauth/authorize`,
    token_endpoint: `${options.origin}/oauth/access_token`,
  }
  const client: oauth.Client = { client_id: options.appToken }
  const clientAuth = oauth.ClientSecretPost(options.secretToken)
  const redirectUri = `${options.origin}/demo-app/callback`
  /** PKCE verifiers of sign-ins under way, by state. */
  const pending = new Map<string, string>()

  const router = express.Router()
  router.get('/', (_req, res) => {
    res.send(page('Demo dashboard', '<p>A third-party application of the portal.</p><p><a href="login">Sign in with the open data portal</a></p>'))
  })

  router.get('/login', async (_req, res) => {
    const state = oauth.generateRandomState()
    const verifier = oauth.generateRandomCodeVerifier()
    pending.set(state, verifier)
    const url = new URL(as.authorization_endpoint as string)
    url.search = new URLSearchParams({
      client_id: client.client_id,
      response_type: 'code',
      redirect_uri: redirectUri,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString()
    res.redirect(303, url.href)
  })

  // The OAuth flow by hand (npm run demo prints the steps): this page only shows the code
  // and the curl that exchanges it; it never exchanges it itself.
  router.get('/by-hand', (req, res) => {
    const url = new URL(req.originalUrl, options.origin)
    const code = url.searchParams.get('code')
    if (code === null) {
      const error = url.searchParams.get('error') ?? 'no code'
      res.status(400).send(page('No code', `<p>The portal answered <code>${escape(error)}</code>: ${escape(url.searchParams.get('error_description') ?? '')}</p>`))
      return
    }
    res.send(
      page(
        'Your authorization code',
        `<p>The portal sent back <code id="code">${escape(code)}</code> (state <code>${escape(url.searchParams.get('state') ?? '')}</code>). It is valid for 10 minutes, once. Exchange it from a terminal in the project directory:</p><pre>${escape(exchangeCommand(options, code))}</pre>`,
      ),
    )
  })

  router.get('/callback', async (req, res) => {
    const url = new URL(req.originalUrl, options.origin)
    const state = url.searchParams.get('state') ?? ''
    const verifier = pending.get(state)
    pending.delete(state)
    try {
      if (verifier === undefined) throw new Error('unknown or used state')
      const params = oauth.validateAuthResponse(as, client, url, state)
      const response = await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, redirectUri, verifier, {
        [oauth.customFetch]: options.fetch,
      })
      const tokens = await oauth.processAuthorizationCodeResponse(as, client, response)
      const me = await options.fetch(`${options.origin}/api/users/current.json`, { headers: { authorization: `OAuth ${tokens.access_token}` } })
      const user = (await me.json()) as { displayName: string }
      res.send(
        page(
          `Signed in as ${escape(user.displayName)}`,
          `<p>The portal issued an access token (valid ${tokens.expires_in ?? '?'} s); <code>GET /api/users/current.json</code> with it says:</p><pre>${escape(JSON.stringify(user, null, 2))}</pre><p><a href="./">Back</a></p>`,
        ),
      )
    } catch (error) {
      const message = error instanceof oauth.AuthorizationResponseError ? `${error.error}: ${error.error_description ?? ''}` : String(error)
      res.status(400).send(page('Sign-in did not complete', `<p>${escape(message)}</p><p><a href="./">Back</a></p>`))
    }
  })
  return router
}

/** Where the by-hand flow sends the browser back to. */
export const byHandRedirectUri = (origin: string) => `${origin}/demo-app/by-hand`

/** The authorize URL to open in a browser for the by-hand flow. */
export function byHandAuthorizeUrl(origin: string, appToken: string): string {
  const query = new URLSearchParams({ client_id: appToken, response_type: 'code', redirect_uri: byHandRedirectUri(origin), state: 'by-hand' })
  return `${origin}/oauth/authorize?${query}`
}

/** The curl that exchanges a code for an access token, as a user pastes it. */
export function exchangeCommand(options: Pick<DemoClientOptions, 'origin' | 'appToken' | 'secretToken'>, code: string): string {
  return [
    `curl --cacert examples/tls/cert.pem ${options.origin}/oauth/access_token`,
    '-d grant_type=authorization_code',
    `-d client_id=${options.appToken}`,
    `-d client_secret=${options.secretToken}`,
    `--data-urlencode redirect_uri=${byHandRedirectUri(options.origin)}`,
    `-d code=${code}`,
  ].join(' ')
}
