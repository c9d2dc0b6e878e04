/**
 * Counts the commands an ioredis client sends and the round trips they cost in latency,
 * without timing anything: each command sent is given a depth, one more than the deepest
 * command whose reply had arrived when it was sent. Commands sent together (to one node or
 * several) share a depth; a command sent after a reply is one round trip further. The
 * round trips of a call are the deepest depth among its commands.
 *
 * It wraps `sendCommand` of each connection (each master of a cluster, or the one
 * connection of a single server), where ioredis hands over every command, pipelined or not,
 * and the command's own `resolve` and `reject`, which its reply calls before any code
 * awaiting the command runs. Count one call at a time: commands of anything else in flight
 * would be counted with it.
 */
import type { Cluster, Redis } from 'ioredis'

interface CountedCommand {
  name: string
  args: unknown[]
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

export interface RoundTrips {
  /** Counts what `call` sends, from nothing. */
  count<T>(call: () => Promise<T>): Promise<{ value: T; commands: string[]; roundTrips: number }>
  /** Puts the connections' own `sendCommand` back. */
  stop(): void
}

export function countRoundTrips(client: Redis | Cluster): RoundTrips {
  const connections: Redis[] = 'isCluster' in client && client.isCluster ? (client as Cluster).nodes('master') : [client as Redis]
  let counting = false
  let epoch = 0
  let replied = 0
  let deepest = 0
  let sent: string[] = []
  const originals = connections.map((connection) => {
    const original = connection.sendCommand
    connection.sendCommand = function (this: Redis, command: CountedCommand, ...rest: unknown[]) {
      if (!counting) return (original as (...args: unknown[]) => unknown).call(this, command, ...rest)
      const mine = epoch
      const depth = replied + 1
      deepest = Math.max(deepest, depth)
      // The first key: a script's comes after its SHA-1 and the number of keys.
      sent.push(`${command.name} ${String(command.args[/^eval/i.test(command.name) ? 2 : 0] ?? '')}`)
      const { resolve, reject } = command
      const arrived = () => {
        if (mine === epoch) replied = Math.max(replied, depth)
      }
      command.resolve = (value) => {
        arrived()
        resolve(value)
      }
      command.reject = (error) => {
        arrived()
        reject(error)
      }
      return (original as (...args: unknown[]) => unknown).call(this, command, ...rest)
    } as Redis['sendCommand']
    return original
  })
  return {
    async count(call) {
      epoch++
      replied = 0
      deepest = 0
      sent = []
      counting = true
      try {
        const value = await call()
        return { value, commands: sent, roundTrips: deepest }
      } finally {
        counting = false
        epoch++
      }
    },
    stop() {
      connections.forEach((connection, i) => (connection.sendCommand = originals[i] as Redis['sendCommand']))
    },
  }
}
