/**
 * The commands Redis runs, as MONITOR shows them, read up to a marker instead of after a
 * quiet spell: MONITOR shows commands in the order Redis ran them, so once it shows an
 * `ECHO` sent after a call has been answered, it has shown every command of that call. A
 * wait for silence (100 ms without a command) counted a step twice, or not at all, when
 * MONITOR fell behind on a loaded machine.
 */
import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { setTimeout as sleep } from 'node:timers/promises'

/** One MONITOR entry: the command and its arguments, and where it ran (`lua` for a script's own calls). */
export interface Monitored {
  readonly args: readonly string[]
  readonly source: string
}

export interface CommandLog {
  /** Every command shown so far, markers included. */
  readonly seen: readonly Monitored[]
  /** Resolves once MONITOR has shown every command Redis ran before this call. */
  settled(): Promise<void>
  /** The commands `work` made Redis run (markers left out), once MONITOR has shown them all. */
  during(work: () => Promise<unknown>): Promise<Monitored[]>
  stop(): void
}

/** MONITOR on a connection of `admin`'s, with `admin` sending the markers. */
export async function monitorCommands(admin: Redis): Promise<CommandLog> {
  const monitor = await admin.monitor()
  const seen: Monitored[] = []
  monitor.on('monitor', (_time: string, args: string[], source: string) => seen.push({ args, source }))
  const isMarker = (entry: Monitored, marker: string) => /^echo$/i.test(entry.args[0] ?? '') && entry.args[1] === marker
  const settled = async (): Promise<void> => {
    const marker = `monitor-marker-${randomUUID()}`
    await admin.echo(marker)
    const deadline = Date.now() + 10_000
    while (!seen.some((entry) => isMarker(entry, marker))) {
      if (Date.now() > deadline) throw new Error('MONITOR did not show the marker within 10 s')
      await sleep(5)
    }
  }
  return {
    seen,
    settled,
    async during(work) {
      await settled()
      const from = seen.length
      await work()
      await settled()
      return seen.slice(from).filter((entry) => !(/^echo$/i.test(entry.args[0] ?? '') && entry.args[1]?.startsWith('monitor-marker-')))
    },
    stop: () => monitor.disconnect(),
  }
}
