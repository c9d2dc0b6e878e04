/** Real listening servers, plain and TLS, on ephemeral loopback ports. */
import { readFileSync } from 'node:fs'
import http, { type RequestListener } from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'

const TLS_DIR = new URL('../fixtures/tls/', import.meta.url)
export const TEST_CERT = readFileSync(new URL('cert.pem', TLS_DIR))
const TEST_KEY = readFileSync(new URL('key.pem', TLS_DIR))

export interface RunningServer {
  readonly server: http.Server
  readonly url: string
  close(): Promise<void>
}

export async function listen(listener: RequestListener, tls = false): Promise<RunningServer> {
  const server = tls ? https.createServer({ key: TEST_KEY, cert: TEST_CERT }, listener) : http.createServer(listener)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    server,
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
