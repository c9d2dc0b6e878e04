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

/** What {@link requestFrom} got back. */
export interface RawAnswer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

/**
 * One request on a connection of its own from a chosen loopback source address
 * (127.0.0.2, 127.0.0.3, ...), so that a test can be several clients at once.
 */
export function requestFrom(
  url: string,
  localAddress: string,
  options: { path?: string; method?: string; headers?: http.OutgoingHttpHeaders; body?: string } = {},
): Promise<RawAnswer> {
  const target = new URL(url)
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: target.hostname, port: target.port, path: options.path ?? '/resource/abcd-1234.json', method: options.method ?? 'GET', localAddress, agent: false, headers: options.headers },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (body += chunk))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(options.body)
  })
}
