/**
 * Alerts delivered to the operator's endpoint, signed as the Standard Webhooks
 * specification says (https://www.standardwebhooks.com/): a JSON body
 * `{ type, timestamp, data }`, and the headers `webhook-id` (the same on every attempt of
 * one message), `webhook-timestamp` (seconds) and `webhook-signature`
 * (`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, keyed by the secret's bytes: the
 * base64 after `whsec_`). Any of the specification's libraries verifies it.
 *
 * A delivery that fails (no answer within the timeout, a network error, a 429 or a 5xx) is
 * tried again after 1, 5, 25, 125 and 625 times `retryDelayMs`; another 4xx is not retried.
 * A message given up is logged (the endpoint's origin, never its path or the secret).
 * The URL and secret are the operator's configuration only: nothing a request sends
 * reaches them.
 */
import { createHmac, randomBytes } from 'node:crypto'
import type { GateLog } from '../log/logger.js'
import { messageOf } from '../log/logger.js'
import { optionsObject, positiveInteger } from '../util/validate.js'

/** Where and how alerts are delivered. */
export interface WebhookOptions {
  /** The endpoint: https, or http to a loopback address (for development). */
  url: string
  /** The signing secret, as Standard Webhooks writes it: `whsec_` and the base64 of 24 to 64 random bytes. */
  secret: string
  /** How long one attempt may take, in ms. Default 10 000. */
  timeoutMs?: number
  /** Attempts after the first one fails. Default 5. */
  retries?: number
  /** The first retry's delay, in ms; each next one is 5 times longer. Default 1 000. */
  retryDelayMs?: number
}

export interface ResolvedWebhook {
  readonly url: URL
  readonly key: Buffer
  readonly timeoutMs: number
  readonly retries: number
  readonly retryDelayMs: number
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

/** Resolves and validates a webhook's options. @throws {TypeError} naming the bad option */
export function resolveWebhook(name: string, input: WebhookOptions): ResolvedWebhook {
  const options = optionsObject(name, input, ['url', 'secret', 'timeoutMs', 'retries', 'retryDelayMs'])
  let url: URL
  try {
    url = new URL(String(options.url))
  } catch {
    throw new TypeError(`open-data-gate: ${name}.url must be an absolute URL`)
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
    throw new TypeError(`open-data-gate: ${name}.url must be https (http only to a loopback address): the alerts are signed, not encrypted`)
  }
  const secret = options.secret
  const key = typeof secret === 'string' && secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : undefined
  if (key === undefined || key.length < 24 || key.length > 64 || key.toString('base64').replace(/=+$/, '') !== (secret as string).slice(6).replace(/=+$/, '')) {
    throw new TypeError(`open-data-gate: ${name}.secret must be whsec_ followed by the base64 of 24 to 64 random bytes`)
  }
  const resolved: ResolvedWebhook = { url, key, timeoutMs: options.timeoutMs ?? 10_000, retries: options.retries ?? 5, retryDelayMs: options.retryDelayMs ?? 1_000 }
  positiveInteger(`${name}.timeoutMs`, resolved.timeoutMs)
  positiveInteger(`${name}.retryDelayMs`, resolved.retryDelayMs)
  if (!Number.isInteger(resolved.retries) || resolved.retries < 0 || resolved.retries > 10) throw new TypeError(`open-data-gate: ${name}.retries must be an integer from 0 to 10`)
  return resolved
}

/** Sends messages to one endpoint, retried, never throwing. */
export class WebhookSender {
  readonly #config: ResolvedWebhook
  readonly #log: GateLog
  readonly #timers = new Set<NodeJS.Timeout>()
  readonly #inFlight = new Set<AbortController>()
  #closed = false

  constructor(config: ResolvedWebhook, log: GateLog) {
    this.#config = config
    this.#log = log
  }

  /** Delivers one message of `type` with `data`, in the background. */
  send(type: string, data: object): void {
    if (this.#closed) return
    const id = `msg_${randomBytes(16).toString('base64url')}`
    const body = JSON.stringify({ type, timestamp: new Date().toISOString(), data })
    void this.#attempt(id, body, 0)
  }

  async #attempt(id: string, body: string, attempt: number): Promise<void> {
    const config = this.#config
    const timestamp = String(Math.floor(Date.now() / 1000))
    const signature = createHmac('sha256', config.key).update(`${id}.${timestamp}.${body}`).digest('base64')
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), config.timeoutMs)
    this.#inFlight.add(controller)
    let failure: string
    let retry: boolean
    try {
      const response = await fetch(config.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` },
        body,
        signal: controller.signal,
        redirect: 'manual',
      })
      await response.body?.cancel()
      if (response.status >= 200 && response.status < 300) return
      failure = `answered ${response.status}`
      retry = response.status === 429 || response.status >= 500
    } catch (error) {
      failure = controller.signal.aborted ? `no answer within ${config.timeoutMs} ms` : messageOf(error)
      retry = true
    } finally {
      clearTimeout(timer)
      this.#inFlight.delete(controller)
    }
    if (this.#closed) return
    if (retry && attempt < config.retries) {
      const wait = setTimeout(() => {
        this.#timers.delete(wait)
        void this.#attempt(id, body, attempt + 1)
      }, config.retryDelayMs * 5 ** attempt)
      wait.unref()
      this.#timers.add(wait)
      return
    }
    this.#log.warn(`open-data-gate: the webhook at ${config.url.origin} did not take message ${id} after ${attempt + 1} attempt(s): ${failure}`, { code: 'ODG_WEBHOOK_FAILED', webhookId: id })
  }

  /** Gives up what waits for a retry, and what is on its way. */
  close(): void {
    this.#closed = true
    for (const timer of this.#timers) clearTimeout(timer)
    this.#timers.clear()
    for (const controller of this.#inFlight) controller.abort()
  }
}
