/**
 * Schedules password hashing (scrypt), which runs in libuv's small thread pool: left
 * alone, a flood of guesses fills the pool and a legitimate sign-in waits behind every
 * one of them (83 ms idle became 7 s in the security review).
 *
 * - At most `concurrency` runs at once in this process, leaving the rest of the pool to
 *   file, DNS and other crypto work.
 * - At most one run per client address at a time. When a slot frees, the waiting address
 *   that has had the fewest runs since it last went idle goes next, not the oldest
 *   request: a quiet address waits only for the runs already under way, however many
 *   requests a flood has queued, and flooding addresses take turns among themselves.
 * - A bounded number wait, in all and per address; past either bound the attempt is
 *   refused at once with 503 `busy` and a `Retry-After` estimated from recent run times,
 *   rather than queued without limit.
 *
 * @see docs/security.md "scrypt exhaustion"
 */
import { PlatformError, retryAfterSeconds } from '../errors.js'

/** The bounds of a `HashQueue`. */
export interface HashQueueLimits {
  /** Runs at once in this process. */
  readonly concurrency: number
  /** Attempts waiting, from all addresses together. */
  readonly queue: number
  /** Attempts waiting from one address. */
  readonly queuePerAddress: number
}

interface AddressLine {
  running: boolean
  /** Runs since the address last had nothing running or waiting. */
  served: number
  readonly waiting: Array<() => void>
}

/**
 * The per-process queue every password verification goes through.
 * @example
 * const hashes = new HashQueue({ concurrency: 2, queue: 64, queuePerAddress: 4 })
 * const ok = await hashes.run('203.0.113.7', () => verifyPassword(password, hash))
 */
export class HashQueue {
  readonly #limits: HashQueueLimits
  readonly #lines = new Map<string, AddressLine>()
  /** Addresses with work waiting and none running. */
  readonly #turns = new Set<string>()
  #running = 0
  #waiting = 0
  /** Recent run time in ms (moving average), for `Retry-After`. */
  #runMs = 50

  constructor(limits: HashQueueLimits) {
    this.#limits = limits
  }

  /**
   * Runs `task` when `address` has its turn.
   * @throws {PlatformError} 503 `busy` (synchronously) when too many attempts wait already
   */
  run<T>(address: string, task: () => Promise<T>): Promise<T> {
    let line = this.#lines.get(address)
    if (line === undefined) {
      line = { running: false, served: 0, waiting: [] }
      this.#lines.set(address, line)
    }
    if (!line.running && line.waiting.length === 0 && this.#running < this.#limits.concurrency) return this.#start(address, line, task)
    if (this.#waiting >= this.#limits.queue || line.waiting.length >= this.#limits.queuePerAddress) {
      if (!line.running && line.waiting.length === 0) this.#lines.delete(address)
      throw this.#busy()
    }
    const queued = line
    this.#waiting++
    return new Promise<T>((resolve, reject) => {
      queued.waiting.push(() => {
        this.#start(address, queued, task).then(resolve, reject)
      })
      if (!queued.running) this.#turns.add(address)
    })
  }

  #start<T>(address: string, line: AddressLine, task: () => Promise<T>): Promise<T> {
    line.running = true
    line.served++
    this.#running++
    const started = performance.now()
    let running: Promise<T>
    try {
      running = task()
    } catch (error) {
      running = Promise.reject(error)
    }
    return running.finally(() => {
      this.#runMs = 0.8 * this.#runMs + 0.2 * (performance.now() - started)
      line.running = false
      this.#running--
      if (line.waiting.length > 0) this.#turns.add(address)
      else this.#lines.delete(address)
      this.#next()
    })
  }

  /** Gives free slots to the waiting addresses served least so far (a few dozen at most: a linear scan). */
  #next(): void {
    while (this.#running < this.#limits.concurrency && this.#turns.size > 0) {
      let chosen: string | undefined
      let fewest = Infinity
      for (const address of this.#turns) {
        const served = this.#lines.get(address)?.served ?? 0
        if (served < fewest) {
          fewest = served
          chosen = address
        }
      }
      this.#turns.delete(chosen as string)
      const job = this.#lines.get(chosen as string)?.waiting.shift()
      if (job === undefined) continue
      this.#waiting--
      job()
    }
  }

  #busy(): PlatformError {
    const waitMs = ((this.#waiting + this.#running) / this.#limits.concurrency) * this.#runMs
    return new PlatformError('busy', 'The server is busy verifying passwords; retry shortly', {
      headers: { 'retry-after': String(retryAfterSeconds(waitMs)) },
    })
  }
}
