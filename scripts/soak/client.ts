/**
 * The soak's HTTP client: undici agents with keep-alive (one for http, one for https
 * trusting the test certificate), and a record of every request: when it started and
 * ended, what it was, and what came back.
 */
import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { Agent, request } from 'undici'

export const TEST_CERT = readFileSync(new URL('../../test/fixtures/tls/cert.pem', import.meta.url))

/** One request of the soak. Times are ms since the run started. */
export interface Sample {
  kind: string
  start: number
  end: number
  /** 0: no answer (a connection error or a client timeout). */
  status: number
  instance: number
  /** What the oracle made of it: 'ok', or why not (see the report). */
  verdict: Verdict
}

export type Verdict = 'ok' | 'outage-503' | 'should-work-failed' | 'should-fail-worked' | 'unexpected' | 'unjudged'

export interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
  start: number
  end: number
  error?: string
}

export class SoakClient {
  readonly samples: Sample[] = []
  readonly #origin: number
  // Idle connections are dropped by the client before the server's 5 s keep-alive timeout,
  // so a request never races a server closing its connection.
  readonly #plain = new Agent({ keepAliveTimeout: 2000, keepAliveMaxTimeout: 2000 })
  readonly #tls = new Agent({ keepAliveTimeout: 2000, keepAliveMaxTimeout: 2000, connect: { ca: TEST_CERT } })

  constructor(origin: number) {
    this.#origin = origin
  }

  /** ms since the run started. */
  now(): number {
    return performance.now() - this.#origin
  }

  async send(url: string, init: { method?: 'GET' | 'POST' | 'DELETE'; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
    const start = this.now()
    try {
      const res = await request(url, {
        dispatcher: url.startsWith('https:') ? this.#tls : this.#plain,
        method: init.method ?? 'GET',
        headers: init.headers ?? {},
        body: init.body ?? null,
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      })
      const text = await res.body.text()
      return { status: res.statusCode, headers: res.headers, text, start, end: this.now() }
    } catch (error) {
      return { status: 0, headers: {}, text: '', start, end: this.now(), error: error instanceof Error ? error.message : String(error) }
    }
  }

  record(kind: string, instance: number, answer: Answer, verdict: Verdict): Sample {
    const sample = { kind, start: answer.start, end: answer.end, status: answer.status, instance, verdict }
    this.samples.push(sample)
    return sample
  }

  async close(): Promise<void> {
    await Promise.all([this.#plain.close(), this.#tls.close()])
  }
}

/** A header's first value. */
export function header(answer: Answer, name: string): string | undefined {
  const value = answer.headers[name]
  return Array.isArray(value) ? value[0] : value
}

/** A minimal cookie jar for one browser: name=value pairs, a Max-Age=0 deletes. */
export class CookieJar {
  readonly #cookies = new Map<string, string>()

  take(answer: Answer): void {
    const lines = answer.headers['set-cookie']
    for (const line of Array.isArray(lines) ? lines : lines === undefined ? [] : [lines]) {
      const [pair = '', ...attributes] = line.split(';')
      const eq = pair.indexOf('=')
      const name = pair.slice(0, eq).trim()
      if (attributes.some((a) => a.trim().toLowerCase() === 'max-age=0')) this.#cookies.delete(name)
      else this.#cookies.set(name, pair.slice(eq + 1).trim())
    }
  }

  header(): Record<string, string> {
    return this.#cookies.size === 0 ? {} : { cookie: [...this.#cookies].map(([n, v]) => `${n}=${v}`).join('; ') }
  }
}
