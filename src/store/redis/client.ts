/**
 * The ioredis client as the Redis store wants it: the type it takes (a `Redis` or a
 * `Cluster`), the options under which no request waits on Redis, how the store sends its
 * scripts, and the subscriber connection and the quit the store makes itself.
 */
import { Command, type Cluster, type Redis, type RedisOptions } from 'ioredis'
import { VARIADIC, type RedisScript } from './scripts.js'

type CommandOptions = NonNullable<ConstructorParameters<typeof Command>[2]>

/** A client the store can use: an ioredis `Redis` or `Cluster`. */
export type RedisClient = Redis | Cluster

/**
 * The ioredis options under which no request waits on Redis longer than
 * `commandTimeoutMs`: commands fail at once while the client is disconnected (no offline
 * queue), are never sent again after a reconnect (a rate step replayed would count
 * twice), and the client reconnects within a quarter second of Redis answering again, or
 * of a restarted Redis finishing loading its data.
 * Use them for a client you hand to the store: `new Redis(url, redisClientDefaults())`, or
 * `new Cluster(nodes, { enableOfflineQueue: false, enableAutoPipelining: true, redisOptions: redisClientDefaults() })`.
 */
export function redisClientDefaults(commandTimeoutMs = 500): Omit<RedisOptions, 'replyMapping'> {
  return {
    enableOfflineQueue: false,
    commandTimeout: commandTimeoutMs,
    connectTimeout: Math.max(commandTimeoutMs, 1000),
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    retryStrategy: (times) => Math.min(50 * times, 250),
    // A client that connects while a restarted Redis is still loading its data checks again
    // after the server's own estimate, at least a second by ioredis's default, so the gate
    // went on failing for up to seconds after Redis was ready (found by `npm run soak`).
    maxLoadingRetryTime: 100,
    // Commands of concurrent requests leave in one write and are read by Redis in one
    // read: under load, Redis spends its CPU on the scripts, not on system calls.
    enableAutoPipelining: true,
  }
}

/**
 * Runs a script with its keys and arguments: `EVALSHA`, and `EVAL` when the server does not
 * know it. `decode`, when given, makes the reply the caller's result in the same step (one
 * promise less than a `.then` of the caller's: the request lookup's path counts them).
 */
export type ScriptSender = <T = unknown>(script: RedisScript, keys: readonly string[], args: ReadonlyArray<string | number>, decode?: (reply: unknown) => T) => Promise<T>

/** Whether the server had no script of that SHA-1 (a restart, a flush, another cluster node): send it with EVAL. */
function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT')
}

/**
 * How many commands of a turn leave early when nothing else is in flight. One write per turn
 * keeps the client's work down, but Redis then sits idle until the turn ends, and the event
 * loop waits on the whole batch in the next: with 50 connections the server idled 7% of the
 * time. Sending the first 16 at once when Redis has nothing to do took that to 0 (Express,
 * OAuth token: 6,580 against 6,055 req/s in the same run), and cost nothing at 200
 * connections, where Redis always has work (docs/performance.md). At 8 the gain was the
 * same; flushing every 8 or 32 commands whatever is in flight cost more CPU at 200 connections.
 */
const EARLY_FLUSH = 16

/** Sends one script command, `evalsha` or `eval`, with its flat arguments. */
type Send = (name: 'evalsha' | 'eval', argv: string[]) => Promise<unknown>

/**
 * How the store sends its scripts through `client`: one `EVALSHA` each, and on `NOSCRIPT`
 * the same call as `EVAL` (Redis then keeps the script again by itself).
 *
 * The store makes the ioredis `Command` itself and hands it to `sendCommand`, with the
 * socket corked until the event loop's turn ends: the commands of the turn's requests leave
 * in one write, as auto-pipelining would send them, for a quarter fewer instructions and
 * about 0.6× the CPU per command on a single server (auto-pipelining builds a pipeline per
 * turn, and a promise, a callback and a `nextTick` more per command; `bench/redis-client.mjs`
 * measures both), and about half on a Cluster. A Cluster's `sendCommand` routes each command
 * to its slot's master and follows `MOVED` and `ASK` as its own commands do; every master
 * that is connected is corked for the turn. The command goes through the client's own
 * checks and timer as any other: it fails at once when the client is not connected (or
 * waits in its offline queue, if you gave it one), and fails after the client's
 * `commandTimeout`.
 */
export function scriptSender(client: RedisClient): ScriptSender {
  const send = 'isCluster' in client && client.isCluster ? clusterSend(client as Cluster) : serverSend(client as Redis)
  return (script, keys, args, decode) => {
    const argv = [script.sha, String(numKeys(script, keys))]
    for (let i = 0; i < keys.length; i++) argv.push(keys[i] as string)
    // Numbers as ioredis writes them (String(n)): its Command never sees them.
    for (let i = 0; i < args.length; i++) {
      const arg = args[i] as string | number
      argv.push(typeof arg === 'string' ? arg : String(arg))
    }
    const retry = () => {
      // A copy: the EVALSHA's Command holds `argv` as its arguments.
      const again = argv.slice()
      again[0] = script.lua
      return send('eval', again)
    }
    return withEvalFallback(send('evalsha', argv), retry, decode)
  }
}

/** Sending on a single server: its socket corked for the turn, the first commands let go early while Redis is idle. */
function serverSend(redis: Redis): Send {
  // Corked only while connected: a socket being replaced drops what it holds, and ioredis
  // fails the commands that were waiting on it (none is ever sent again).
  const cork = new TurnCork(() => (redis.status === 'ready' ? [redis.stream] : []))
  // ioredis's queue of commands written and not yet answered (`commandQueue`, in ioredis 5 and 6).
  const inFlight = redis as unknown as { commandQueue?: { length: number } }
  return (name, argv) => {
    const held = cork.hold()
    const sent = redis.sendCommand(scriptCommand(name, argv, redis.options)) as Promise<unknown>
    // Redis idle while a long turn goes on: let the first commands go now, so that Redis works
    // on them while the loop builds the rest (the turn's remaining commands still leave together).
    if (held === EARLY_FLUSH && inFlight.commandQueue?.length === held) cork.flush()
    return sent
  }
}

/**
 * Sending on a Cluster: the connected masters' sockets corked for the turn (a command that a
 * redirection sends elsewhere is written at once), each command routed by the Cluster.
 */
function clusterSend(cluster: Cluster): Send {
  const cork = new TurnCork(() => (cluster.status === 'ready' ? cluster.nodes('master').filter((node) => node.status === 'ready').map((node) => node.stream) : []))
  return (name, argv) => {
    cork.hold()
    return cluster.sendCommand(scriptCommand(name, argv, cluster.options)) as Promise<unknown>
  }
}

/** Sockets corked from a turn's first command until the event loop's turn ends, so that the turn's commands leave in one write each. */
class TurnCork {
  readonly #open: () => Array<Redis['stream']>
  #streams: Array<Redis['stream']> | undefined
  #held = 0

  /** @param open the sockets to cork now: none while the client is not connected */
  constructor(open: () => Array<Redis['stream']>) {
    this.#open = open
  }

  /** Counts one more command of the turn, corking the sockets at the turn's first; returns how many the turn holds (0: nothing corked). */
  hold(): number {
    if (this.#streams === undefined) {
      const streams = this.#open()
      if (streams.length === 0) return 0
      for (const stream of streams) stream.cork()
      this.#streams = streams
      setImmediate(this.#end)
    }
    return ++this.#held
  }

  /** Writes what the turn holds now; the sockets stay corked for the rest of the turn. */
  flush(): void {
    for (const stream of this.#streams ?? []) {
      stream.uncork()
      stream.cork()
    }
  }

  readonly #end = (): void => {
    const streams = this.#streams as Array<Redis['stream']>
    this.#streams = undefined
    this.#held = 0
    for (const stream of streams) stream.uncork()
  }
}

/** The `Command` ioredis's own `evalsha` makes: the client's key prefix, and the caller's stack if asked. */
function scriptCommand(name: 'evalsha' | 'eval', argv: string[], clientOptions: { keyPrefix?: string | undefined; showFriendlyErrorStack?: boolean | undefined }): Command {
  const { keyPrefix, showFriendlyErrorStack } = clientOptions
  const options: CommandOptions = { replyEncoding: 'utf8' }
  if (showFriendlyErrorStack === true) options.errorStack = new Error()
  // ioredis prefixes keys for a `keyPrefix` it finds truthy (its default is ''), as it makes
  // the Command, from the arguments it is given.
  if (keyPrefix) {
    options.keyPrefix = keyPrefix
    return new Command(name, argv, options)
  }
  // The arguments given after the Command is made: its constructor copies them with
  // `args.flat()`, which V8 runs element by element through a runtime call (some 24,000
  // instructions for a request lookup's 18 arguments, under callgrind; 1.7 µs against
  // 0.1 µs for the rest of the constructor). `argv` is flat already, and all strings, as
  // ioredis's own conversion (String(n)) would have made them.
  const command = new Command(name, NO_ARGUMENTS, options)
  command.args = argv
  return command
}

/**
 * The reply of an `EVALSHA`, or on `NOSCRIPT` of the `EVAL` that `retry` sends, through
 * `decode` in the same step as the fallback (an error `decode` throws is never taken for
 * `NOSCRIPT`).
 */
function withEvalFallback<T>(sent: Promise<unknown>, retry: () => Promise<unknown>, decode: ((reply: unknown) => T) | undefined): Promise<T> {
  return sent.then(decode, (error: unknown) => {
    if (!isNoScript(error)) throw error
    const retried = retry()
    return decode === undefined ? retried : retried.then(decode)
  }) as Promise<T>
}

/** The arguments a Command is made with before its own are set (see `scriptSender`): flattening none costs nothing. */
const NO_ARGUMENTS: never[] = []

/** `EVALSHA`'s numkeys: the script's own count, or the call's for a script that takes any number. */
function numKeys(script: RedisScript, keys: readonly string[]): number {
  return script.keys === VARIADIC ? keys.length : script.keys
}

/** A connection of its own for SUBSCRIBE, made from the store's client. */
export function duplicate(client: RedisClient): RedisClient {
  // A subscriber must wait for its connection (and queue its SUBSCRIBE) rather than fail.
  if ('isCluster' in client && client.isCluster) return (client as Cluster).duplicate(undefined, { enableOfflineQueue: true })
  return (client as Redis).duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null, lazyConnect: false })
}

/** A connection of its own for the usage reads, made from the store's client, with its options. */
export function readerConnection(client: RedisClient): RedisClient {
  if ('isCluster' in client && client.isCluster) return (client as Cluster).duplicate()
  return (client as Redis).duplicate({ lazyConnect: false })
}

/** QUIT, or a hard disconnect when Redis cannot answer it. */
export async function quit(client: RedisClient): Promise<void> {
  try {
    await client.quit()
  } catch {
    client.disconnect()
  }
}
