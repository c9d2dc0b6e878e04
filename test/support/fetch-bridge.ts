/**
 * node:http → the Fetch standard: each request as Node's own `Request` (undici's), the
 * handler's `Response` written back. The smallest host of the Fetch adapter there is, so
 * that the adapter suite runs it on a real listening server without any framework.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import type { TLSSocket } from 'node:tls'

/** A Fetch handler that also receives the node request it came from (for the socket's facts). */
export type FetchHandler = (request: Request, incoming: IncomingMessage) => Response | Promise<Response>

export function fetchListener(handler: FetchHandler): RequestListener {
  return (req, res) => {
    let request: Request
    try {
      request = toRequest(req)
    } catch {
      res.statusCode = 400
      res.end()
      return
    }
    Promise.resolve()
      .then(() => handler(request, req))
      .then(
        (response) => write(response, res),
        () => {
          res.statusCode = 500
          res.end()
        },
      )
  }
}

function toRequest(req: IncomingMessage): Request {
  const scheme = (req.socket as Partial<TLSSocket>).encrypted === true ? 'https' : 'http'
  const headers = new Headers()
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string)
  const bodyless = req.method === 'GET' || req.method === 'HEAD'
  return new Request(`${scheme}://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, {
    method: req.method ?? 'GET',
    headers,
    body: bodyless ? null : (Readable.toWeb(req) as ReadableStream<Uint8Array>),
    duplex: 'half',
  } as RequestInit)
}

async function write(response: Response, res: ServerResponse): Promise<void> {
  res.statusCode = response.status
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') res.setHeader(name, value)
  })
  const cookies = response.headers.getSetCookie()
  if (cookies.length > 0) res.setHeader('set-cookie', cookies)
  if (response.body === null) {
    res.end()
    return
  }
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) res.write(chunk)
  res.end()
}
