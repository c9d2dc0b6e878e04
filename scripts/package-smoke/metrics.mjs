// The installed tarball with OpenTelemetry installed beside it (run once the smokes without
// it passed): the gate records into the global meter provider from ESM and from CommonJS.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { metrics } from '@opentelemetry/api'
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'

class Reader extends MetricReader {
  onShutdown() { return Promise.resolve() }
  onForceFlush() { return Promise.resolve() }
}
const reader = new Reader()
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }))

const request = { method: 'GET', url: '/resource/x.json', headers: {}, peerAddress: '127.0.0.1', tls: false }
const { createGate } = await import('open-data-gate')
await createGate().handle(request)
await createRequire(import.meta.url)('open-data-gate').createGate().handle(request)

const { resourceMetrics } = await reader.collect()
const requests = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics).find((m) => m.descriptor.name === 'open_data_gate.requests')
assert.equal(requests?.dataPoints.reduce((sum, point) => sum + point.value, 0), 2, 'one request counted by the ESM build and one by the CommonJS build')
console.log('package: metrics recorded from ESM and CommonJS')
