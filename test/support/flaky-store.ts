import { MemoryStore } from '../../src/index.js'

type Mode = 'ok' | 'async' | 'throw' | 'reject' | 'hang'

/**
 * A real MemoryStore whose methods can be made to fail or hang on demand, and which
 * counts calls: the one stand-in in the tests, for an outage the embedded store cannot
 * have. (A Redis store, when it comes, is tested against a real Redis going away.)
 */
export class FlakyStore extends MemoryStore {
  readonly modes = new Map<string, Mode>()
  readonly calls = new Map<string, number>()

  constructor() {
    super()
    for (const name of ['getApplication', 'consumeRate'] as const) {
      const original = this[name].bind(this) as (...args: unknown[]) => unknown
      ;(this as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
        this.calls.set(name, (this.calls.get(name) ?? 0) + 1)
        switch (this.modes.get(name) ?? 'ok') {
          case 'throw':
            throw new Error(`${name} exploded`)
          case 'reject':
            return Promise.reject(new Error(`${name} connection refused`))
          case 'hang':
            return new Promise(() => {})
          case 'async':
            // Answers correctly, a turn later: a store in another process.
            return Promise.resolve().then(() => original(...args))
          default:
            return original(...args)
        }
      }
    }
  }

  count(name: string): number {
    return this.calls.get(name) ?? 0
  }
}
