/**
 * What an operator can do about a store that fails, from the error its driver gave: the
 * hint of the `storeError` log line. Only failures whose cause is plain from the error
 * itself get one; a guess would send people the wrong way.
 */

/** A hint for a store failure, or `undefined` when the error does not say enough. */
export function storeFailureHint(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined
  const { code, message, address, port } = error as { code?: unknown; message?: unknown; address?: unknown; port?: unknown }
  const text = typeof message === 'string' ? message : ''
  switch (code) {
    // SQLSTATE: undefined_table, invalid_schema_name, undefined_column (a schema older than the gate).
    case '42P01':
    case '3F000':
    case '42703':
      return 'the PostgreSQL schema is not migrated (or older than this version of the gate): run `open-data-gate migrate` or `store.migrate()`'
    // SQLSTATE: invalid_password, invalid_authorization_specification.
    case '28P01':
    case '28000':
      return 'PostgreSQL refused the user or password of the store\'s connection: check its connection string'
    case '3D000':
      return 'the database of the store\'s connection string does not exist: create it, or fix the name'
    case 'ECONNREFUSED':
      return `nothing accepted a connection${typeof address === 'string' ? ` at ${address}${typeof port === 'number' ? `:${port}` : ''}` : ''}: is the store's server running there, and is its host and port in the connection settings right?`
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'the store\'s host name does not resolve: check the host in its connection settings'
  }
  if (/^NOSCRIPT\b/.test(text)) return 'Redis does not hold the gate\'s scripts (flushed, or another server behind the same address): the store loads them again on its next connection; if this repeats, check what runs SCRIPT FLUSH'
  if (/^(NOAUTH|WRONGPASS)\b|invalid (username-)?password|ERR AUTH\b/i.test(text)) return 'Redis refused the store\'s credentials: check the user and password of its connection'
  if (/enableOfflineQueue|Connection is closed|Stream isn't writeable/i.test(text)) {
    return 'the Redis connection is down and the client is reconnecting: check that the server the RedisStore was given is running and reachable'
  }
  if (/^store call timed out after \d+ ms$/.test(text)) return 'the store did not answer within storeTimeoutMs: a paused, overloaded or unreachable server, or a timeout too short for it'
  return undefined
}
