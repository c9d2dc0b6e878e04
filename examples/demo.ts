/**
 * The example open data portal, on the embedded in-memory store:
 *
 *   npm ci && npm run demo
 *
 * Public data over http and https; private data, the current user and OAuth sign-in over
 * https only, as the platform requires, with a demo-only self-signed certificate. It
 * prints its addresses, the demo credentials and curl lines to try (each with the answer
 * it gets when they are run in the order printed), and the OAuth flow step by step, to
 * follow by hand. One sign-in, the portal's, serves every page (see portal.ts).
 *
 * `npm run demo` runs `node --import tsx`, so this process is the one serving (no tsx
 * child holds the ports): stopping it by its process id (SIGTERM), stopping the npm that
 * started it, or Ctrl-C closes both servers. PORT=0 and HTTPS_PORT=0 pick free ports.
 */
import { readFileSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { Agent } from 'undici'
import { byHandAuthorizeUrl, exchangeCommand } from './demo-client.js'
import { demoOptions } from './demo-options.js'
import { createPortal } from './portal.js'

// --store, --rate-store and --config (see demo-options.ts); no arguments: the in-memory store.
const chosen = await demoOptions(process.argv.slice(2), process.env)

const cert = readFileSync(new URL('tls/cert.pem', import.meta.url))
const key = readFileSync(new URL('tls/key.pem', import.meta.url))

/** Listens on the port asked for, or, if another program has it, on any free one. */
function listen(server: http.Server, port: number, fixed: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE' && !fixed) server.listen(0, '127.0.0.1')
      else reject(error)
    })
    server.once('listening', () => resolve((server.address() as AddressInfo).port))
    server.listen(port, '127.0.0.1')
  })
}

const plain = http.createServer()
const secure = https.createServer({ cert, key })
const httpPort = await listen(plain, Number(process.env.PORT ?? 8080), process.env.PORT !== undefined)
const httpsPort = await listen(secure, Number(process.env.HTTPS_PORT ?? 8443), process.env.HTTPS_PORT !== undefined)
const origin = `https://localhost:${httpsPort}`
const trusting = new Agent({ connect: { ca: cert } })
const { app, credentials: c, provisioned } = await createPortal({
  origin,
  ...(chosen.store === undefined ? {} : { store: chosen.store }),
  ...(chosen.rateStore === undefined ? {} : { rateStore: chosen.rateStore }),
  ...(chosen.config === undefined ? {} : { config: chosen.config }),
  // The global fetch takes an undici dispatcher; its types come from a copy of undici's.
  fetch: (url, options) => fetch(url, { ...options, dispatcher: trusting } as unknown as RequestInit),
})
plain.on('request', app)
secure.on('request', app)

/** Closes both servers, so the ports are free the moment the process is gone. */
function stop(reason: string): void {
  console.log(`\n${reason}: stopping the example portal`)
  for (const server of [plain, secure]) {
    server.close()
    server.closeAllConnections()
  }
  process.exit(0)
}
process.once('SIGINT', stop)
process.once('SIGTERM', stop)
// `npm run demo` starts this process through a shell, and a shell killed by its parent npm
// does not pass the signal on: when the process that started this one is gone, stop too.
const parent = process.ppid
setInterval(() => {
  if (process.ppid !== parent) stop('the process that started the portal is gone')
}, 500).unref()

const base = `http://localhost:${httpPort}`
const tls = `curl --cacert examples/tls/cert.pem`
console.log(`
open-data-gate example portal
  ${base}   public data
  ${origin}  everything, including private data and OAuth sign-in

  App token of "Demo dashboard":    ${c.appToken}
  Secret token of "Demo dashboard": ${c.secretToken}
  User: ${c.username} / ${c.password}
  API key of ${c.username}: ${c.keyId} / ${c.keySecret}

Each line below answers as its comment says when run in the order printed (the one without
an app token last: it spends the anonymous budget, 5 a minute per address, which the others
do not touch).
Public data with the app token (1000 requests an hour for this application):
  curl -i ${base}/resource/bike-racks.json -H 'X-App-Token: ${c.appToken}'   # 200
  curl -i '${base}/resource/bike-racks.json?$$app_token=${c.appToken}'   # 200
A token nobody registered:
  curl -i ${base}/resource/bike-racks.json -H 'X-App-Token: made-up'   # 403 permission_denied
Private data, over https: without credentials, then with the API key:
  ${tls} -i -H 'X-App-Token: ${c.appToken}' ${origin}/private/draft-budget.json   # 403
  ${tls} -i -u '${c.keyId}:${c.keySecret}' -H 'X-App-Token: ${c.appToken}' ${origin}/private/draft-budget.json   # 200
The same over plain http is refused:
  curl -i -u '${c.username}:${c.password}' -H 'X-App-Token: ${c.appToken}' ${base}/private/draft-budget.json   # 403 https_required
Who am I, in JSON and XML:
  ${tls} -i -u '${c.username}:${c.password}' -H 'X-App-Token: ${c.appToken}' ${origin}/api/users/current.json   # 200
  ${tls} -i -u '${c.username}:${c.password}' -H 'X-App-Token: ${c.appToken}' ${origin}/users/current.xml   # 200
Without a token, on the anonymous budget (5 a minute per address):
  curl -i ${base}/resource/bike-racks.json   # 200; the 6th in a minute is a 429

OAuth, with a real client: open ${origin}/demo-app/ in a browser (accept the demo
certificate once), sign in as ${c.username} and allow "Demo dashboard".

OAuth by hand, as docs/guides/oauth-server.md describes the flow:
1. Open this authorize URL in a browser, sign in as ${c.username} / ${c.password} and press Allow:
  ${byHandAuthorizeUrl(origin, c.appToken)}
2. The page you land on shows the code. Exchange it within 10 minutes (replace CODE):
  ${exchangeCommand({ origin, appToken: c.appToken, secretToken: c.secretToken }, 'CODE')}
3. Call the API with the access_token from the answer (replace TOKEN):
  ${tls} -H 'Authorization: OAuth TOKEN' ${origin}/api/users/current.json

Developer settings (register an application, API keys, connected apps):
  ${origin}/profile/edit/developer_settings
One sign-in, the portal's own (${origin}/login), serves every page: the OAuth sign-in
above, the developer settings and the connected apps (${origin}/oauth/grants).

Store: ${chosen.describe}.
Ctrl-C (or kill ${process.pid}) stops it.`)
// What --config provisioned; a secret shows only when the file gave it or it is new.
if (chosen.config !== undefined) console.log('\nProvisioned from the file:')
for (const a of provisioned.applications) console.log(`  app ${JSON.stringify(a.name)}: ${a.appToken}${a.secretToken === null ? '' : ` / secret ${a.secretToken}`}${a.created ? '' : ' (existed)'}`)
for (const u of provisioned.users) {
  console.log(`  user ${u.username} (${u.id})${u.created ? '' : ' (existed)'}`)
  for (const k of u.apiKeys) console.log(`    API key ${JSON.stringify(k.name)}: ${k.keyId}${k.keySecret === null ? '' : ` / ${k.keySecret}`}`)
}
