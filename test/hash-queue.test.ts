import { describe, expect, it } from 'vitest'
import { PlatformError } from '../src/errors.js'
import { HashQueue } from '../src/secrets/hash-queue.js'

/** A task that runs until the test releases it, and says when it started. */
function gatedTask(log: string[], name: string) {
  let release!: () => void
  const done = new Promise<void>((resolve) => (release = resolve))
  return {
    task: async () => {
      log.push(name)
      await done
      return name
    },
    release: () => release(),
  }
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

describe('HashQueue', () => {
  it('runs at most `concurrency` tasks at once, and one per address', async () => {
    const queue = new HashQueue({ concurrency: 2, queue: 10, queuePerAddress: 10 })
    const log: string[] = []
    const a1 = gatedTask(log, 'a1')
    const a2 = gatedTask(log, 'a2')
    const b1 = gatedTask(log, 'b1')
    const c1 = gatedTask(log, 'c1')
    const runs = [queue.run('a', a1.task), queue.run('a', a2.task), queue.run('b', b1.task), queue.run('c', c1.task)]
    await tick()
    expect(log).toEqual(['a1', 'b1'])
    a1.release()
    await tick()
    // a has had a run already; c has had none, so c goes first.
    expect(log).toEqual(['a1', 'b1', 'c1'])
    b1.release()
    await tick()
    expect(log).toEqual(['a1', 'b1', 'c1', 'a2'])
    a2.release()
    c1.release()
    expect(await Promise.all(runs)).toEqual(['a1', 'a2', 'b1', 'c1'])
  })

  it('lets a quiet address go before a flood that queued earlier', async () => {
    const queue = new HashQueue({ concurrency: 1, queue: 50, queuePerAddress: 50 })
    const log: string[] = []
    const flood = Array.from({ length: 10 }, (_, i) => gatedTask(log, `flood${i}`))
    const floodRuns = flood.map((t) => queue.run('flood', t.task))
    const quiet = gatedTask(log, 'quiet')
    const quietRun = queue.run('quiet', quiet.task)
    flood[0]?.release()
    await tick()
    expect(log).toEqual(['flood0', 'quiet'])
    quiet.release()
    await quietRun
    for (const t of flood) t.release()
    await Promise.all(floodRuns)
  })

  it('refuses with 503 busy and a Retry-After once too many wait, in all or from one address', async () => {
    const queue = new HashQueue({ concurrency: 1, queue: 2, queuePerAddress: 1 })
    const log: string[] = []
    const running = gatedTask(log, 'running')
    const first = queue.run('a', running.task)
    const second = gatedTask(log, 'waiting')
    const waiting = queue.run('a', second.task)
    expect(() => queue.run('a', async () => 'x')).toThrow(expect.objectContaining({ code: 'busy', status: 503 }))
    const other = queue.run('b', async () => 'b')
    let refused: unknown
    try {
      void queue.run('c', async () => 'c')
    } catch (error) {
      refused = error
    }
    expect(refused).toBeInstanceOf(PlatformError)
    expect(Number((refused as PlatformError).headers?.['retry-after'])).toBeGreaterThan(0)
    running.release()
    await first
    await tick()
    expect(log).toEqual(['running', 'waiting'])
    second.release()
    expect(await Promise.all([waiting, other])).toEqual(['waiting', 'b'])
  })

  it('passes a task’s failure to its caller and keeps serving', async () => {
    const queue = new HashQueue({ concurrency: 1, queue: 5, queuePerAddress: 5 })
    await expect(queue.run('a', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom')
    await expect(queue.run('a', async () => 'next')).resolves.toBe('next')
  })
})
