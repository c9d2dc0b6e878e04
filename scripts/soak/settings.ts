/** The settings the soak's gate processes share with the soak itself. */
export interface SoakGateSettings {
  /** The gate's `storeTimeoutMs`: no request may take longer than this + 100 ms. */
  storeTimeoutMs: number
  /** The RedisStore's command timeout, below the gate's own bound. */
  commandTimeoutMs: number
  /** scrypt cost of the soak's passwords (low, so the soak's CPU is not all scrypt). */
  scryptLogN: number
  /** The window of every application's limit (the hot application's limit is counted against it). */
  applicationWindowMs: number
}

export const GATE_SETTINGS: SoakGateSettings = { storeTimeoutMs: 250, commandTimeoutMs: 200, scryptLogN: 10, applicationWindowMs: 10_000 }

/** The latency bound the issue sets: `storeTimeoutMs` + 100 ms. */
export const LATENCY_BOUND_MS = GATE_SETTINGS.storeTimeoutMs + 100

/** The soak's port range; it never touches the shared Redis on 6379. */
export const PORT_RANGE = [18000, 18099] as const
