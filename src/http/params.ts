/**
 * Request parameters for the OAuth endpoints: from the query string, a form body or a
 * JSON body (the spec shows both), with every name sent more than once remembered,
 * because RFC 6749 §3.1 and §3.2 make a repeated parameter an error.
 */
import type { GateRequest } from './request.js'
import { unstorableText } from '../rules/storable.js'

/** Parameters by name. An empty value counts as absent. */
export class Params {
  readonly #values = new Map<string, string>()
  readonly #duplicated = new Set<string>()

  /** Adds one occurrence of `name`. */
  add(name: string, value: string): void {
    if (this.#values.has(name)) this.#duplicated.add(name)
    else this.#values.set(name, value)
  }

  /** The value, or `undefined` when absent or empty. */
  get(name: string): string | undefined {
    const value = this.#values.get(name)
    return value === '' ? undefined : value
  }

  /** Whether `name` was sent at all, empty or not. */
  has(name: string): boolean {
    return this.#values.has(name)
  }

  /** Whether `name` was sent more than once. */
  isDuplicated(name: string): boolean {
    return this.#duplicated.has(name)
  }

  /** The first repeated name among `names`, if any. */
  firstDuplicated(names: readonly string[]): string | undefined {
    return names.find((n) => this.#duplicated.has(n))
  }

  /**
   * The first of `names` whose value no store can hold (U+0000, an unpaired surrogate) or
   * that is longer than `maxLength`, as words for a 400: `"state holds U+0000 (NUL)"`.
   * Every reader checks the names it uses with this before any store call.
   */
  unstorable(names: readonly string[], maxLength = Infinity): string | undefined {
    for (const name of names) {
      const value = this.#values.get(name)
      const problem = value === undefined ? undefined : unstorableText(value, maxLength)
      if (problem !== undefined) return `${name} ${problem}`
    }
    return undefined
  }

  /** Both sets of parameters; a name in both counts as repeated. */
  static merge(a: Params, b: Params): Params {
    const merged = new Params()
    for (const source of [a, b]) {
      for (const [name, value] of source.#values) merged.add(name, value)
      for (const name of source.#duplicated) merged.#duplicated.add(name)
    }
    return merged
  }
}

/**
 * Whether a query or form parameter name, percent-decoded, is one a common parser reads as
 * `field`: the name itself (URLSearchParams, node:querystring: Express 5, Koa), and for qs
 * (Express 4's query parser, the extended form parsers) also the name followed by a bracket
 * (`field[]`, `field[0]`, `field[x]`, even an unclosed `field[`) or inside a leading pair of
 * brackets (`[field]`, `[field][]`), which qs all reads as `field`.
 */
export function readsAs(name: string, field: string): boolean {
  if (name.length < field.length) return false
  if (name.startsWith(field)) return name.length === field.length || name.charCodeAt(field.length) === 91 // '['
  return name.charCodeAt(0) === 91 && name.startsWith(field, 1) && name.charCodeAt(field.length + 1) === 93 // '[field]'
}

/** The query string's parameters. */
export function queryParams(url: string): Params {
  const params = new Params()
  const q = url.indexOf('?')
  if (q !== -1) for (const [name, value] of new URLSearchParams(url.slice(q + 1))) params.add(name, value)
  return params
}

/** Why a body could not be read as parameters. */
export type BodyProblem = 'too-large' | 'timeout' | 'unsupported-type' | 'malformed' | 'unreadable'

/**
 * Answers to a request whose body was too large, late or unreadable close the connection:
 * the rest of the body is never read (a client could otherwise make the server drain
 * gigabytes, or hold the connection open at a byte a minute).
 */
export const CLOSE_AFTER: Readonly<Record<BodyProblem, boolean>> = { 'too-large': true, timeout: true, unreadable: true, 'unsupported-type': false, malformed: false }
/** The header that tells the adapter (and Node) to close the connection once the answer is written. */
export const CONNECTION_CLOSE = { connection: 'close' } as const

/** Decodes as `Buffer#toString('utf8')` does (a malformed sequence becomes U+FFFD), on any runtime. */
const UTF8 = new TextDecoder()

/**
 * The body's parameters, or the problem with it.
 * @param timeoutMs the body must have arrived by then, or the problem is `timeout`
 * @param numbers names whose value may be a JSON number (kept as its JSON text, for the caller to check)
 */
export async function bodyParams(request: GateRequest, limit: number, timeoutMs: number, numbers: readonly string[] = []): Promise<Params | BodyProblem> {
  if (request.readBody === undefined) return new Params()
  const deadline = new AbortController()
  const timer = setTimeout(() => deadline.abort(), timeoutMs)
  let body
  try {
    body = await request.readBody(limit, deadline.signal)
  } catch {
    return deadline.signal.aborted ? 'timeout' : 'unreadable'
  } finally {
    clearTimeout(timer)
  }
  if (body.kind === 'too-large') return 'too-large'
  if (body.kind === 'parsed') return fromParsed(body.value, numbers)
  if (body.bytes.length === 0) return new Params()
  const type = (typeof request.headers['content-type'] === 'string' ? request.headers['content-type'] : '').split(';')[0]?.trim().toLowerCase()
  const text = UTF8.decode(body.bytes)
  if (type === 'application/x-www-form-urlencoded') {
    const params = new Params()
    for (const [name, value] of new URLSearchParams(text)) params.add(name, value)
    return params
  }
  if (type === 'application/json') {
    try {
      return fromParsed(JSON.parse(text), numbers)
    } catch {
      return 'malformed'
    }
  }
  return 'unsupported-type'
}

/** What a framework's body parser produced: flat string values only (and numbers under `numbers`); an array is a repeated name. */
function fromParsed(value: unknown, numbers: readonly string[]): Params | BodyProblem {
  const params = new Params()
  if (value === undefined || value === null) return params
  if (typeof value !== 'object' || Array.isArray(value) || ArrayBuffer.isView(value)) return 'malformed'
  for (const [name, v] of Object.entries(value)) {
    if (typeof v === 'string') params.add(name, v)
    else if (typeof v === 'number' && numbers.includes(name)) params.add(name, String(v))
    else if (Array.isArray(v) && v.every((x) => typeof x === 'string')) for (const x of v) params.add(name, x)
    else return 'malformed'
  }
  return params
}
