/**
 * The global meter provider of `@opentelemetry/api`, an optional peer: loaded only when the
 * gate is given no `metrics.meterProvider`, and only if it is installed. The package is
 * built as ESM and CommonJS, so the API is loaded with a `require` made for this module
 * (`createRequire`), which works from both. Synchronous, so that a gate
 * counts its first request; and the CommonJS build of the API it finds shares its global
 * state with the ESM one an application imports (the API keeps it on `globalThis`).
 */
import { createRequire } from 'node:module'
import type { MeterLike, MeterProviderLike } from './metrics.js'

/** The part of `@opentelemetry/api` read here. */
interface OpenTelemetryApi {
  readonly metrics: { getMeterProvider(): MeterProviderLike }
  createNoopMeter(): MeterLike
}

/**
 * The meter the global provider gives, or `undefined` when `@opentelemetry/api` is not
 * installed or no SDK registered a provider (the API then hands out its no-op meter, and
 * recording into it would cost every request something for nothing).
 */
export function globalMeter(name: string, version: string): MeterLike | undefined {
  const api = loadApi()
  if (api === undefined) return undefined
  const meter = api.metrics.getMeterProvider().getMeter(name, version)
  return meter === api.createNoopMeter() ? undefined : meter
}

function loadApi(): OpenTelemetryApi | undefined {
  try {
    // The build gives the CommonJS output an `import.meta.url` of its own file. (Not a bare
    // `require`: the bundler turns it into a shim that throws in the ESM output.)
    const api = createRequire(import.meta.url)('@opentelemetry/api') as Partial<OpenTelemetryApi>
    return typeof api.metrics?.getMeterProvider === 'function' && typeof api.createNoopMeter === 'function' ? (api as OpenTelemetryApi) : undefined
  } catch {
    // Not installed (MODULE_NOT_FOUND): no metrics, and nothing to say about it.
    return undefined
  }
}
