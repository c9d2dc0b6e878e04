/**
 * Process warnings a test provokes on purpose are captured here and asserted, so that a
 * passing run prints none.
 */
import { vi } from 'vitest'

/** The process warnings emitted while `run` runs, as `{ code, message }`; none reaches stderr. */
export async function captureWarnings<T>(run: () => Promise<T> | T): Promise<{ result: T; warnings: Array<{ code: string | undefined; message: string }> }> {
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
  try {
    const result = await run()
    const warnings = spy.mock.calls.map(([warning, options]) => ({
      code: typeof options === 'object' && options !== null && 'code' in options ? (options.code as string | undefined) : undefined,
      message: typeof warning === 'string' ? warning : warning.message,
    }))
    return { result, warnings }
  } finally {
    spy.mockRestore()
  }
}
