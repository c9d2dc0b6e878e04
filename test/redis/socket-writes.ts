/** Counts the writes a Redis client's socket makes: every one goes through `_write` (one chunk) or `_writev` (several). */
export function countWrites(client: { stream: unknown }): { count: number } {
  const writes = { count: 0 }
  const socket = client.stream as { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void }
  const [write, writev] = [socket._write, socket._writev]
  socket._write = (...a) => (writes.count++, write.apply(socket, a))
  socket._writev = (...a) => (writes.count++, writev.apply(socket, a))
  return writes
}
