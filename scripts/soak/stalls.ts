/**
 * Stalls of a process's event loop: a timer due every 10 ms that fires late by at least
 * `minMs` means the process was not running (a busy CPU shared with other work, a long GC).
 * A request in flight across a stall of the process that serves it, or of the driver that
 * times it, says something about the machine, not the gate.
 */
export interface Stall {
  /** Epoch ms. */
  from: number
  to: number
}

export function watchStalls(minMs: number, onStall: (stall: Stall) => void): () => void {
  const every = 10
  let last = Date.now()
  const timer = setInterval(() => {
    const now = Date.now()
    if (now - last >= every + minMs) onStall({ from: last, to: now })
    last = now
  }, every)
  timer.unref()
  return () => clearInterval(timer)
}
