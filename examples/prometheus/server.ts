/**
 * The gate's metrics for Prometheus: the OpenTelemetry SDK with its Prometheus exporter,
 * `/metrics` served on a port of its own (9464, the exporter's usual one), so that scrapes
 * neither pass through the gate nor reach the public.
 *
 *   npx tsx examples/prometheus/server.ts     (PORT=8084, METRICS_PORT=9464 by default; 0 for free ports)
 *   curl http://127.0.0.1:9464/metrics
 *
 * docs/guides/telemetry.md says what each metric means.
 */
import http from 'node:http'
import { metrics } from '@opentelemetry/api'
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import { createGate } from 'open-data-gate'
import { nodeGate } from 'open-data-gate/node'

// The SDK first: the gate takes its meter from the global provider when it is created.
// (Or leave the global alone and pass it: createGate({ metrics: { meterProvider } }).)
const exporter = new PrometheusExporter({ preventServerStart: true })
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [exporter] }))

const gate = createGate({
  throttle: {
    application: { limit: 1000, windowMs: 3_600_000 },
    anonymous: { limit: 5, windowMs: 60_000, scope: 'ip' },
  },
})
const { appToken } = await gate.applications.register({ name: 'Prometheus example client' })

const api = http.createServer(
  nodeGate(gate, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ application: req.gate.application?.name ?? null }))
  }),
)
const scrapes = http.createServer((req, res) => {
  if (req.url === '/metrics') exporter.getMetricsRequestHandler(req, res)
  else res.writeHead(404).end()
})

const listen = (server: http.Server, port: number) =>
  new Promise<number>((resolve) => server.listen(port, '127.0.0.1', () => resolve((server.address() as { port: number }).port)))
const apiPort = await listen(api, Number(process.env.PORT ?? 8084))
const metricsPort = await listen(scrapes, Number(process.env.METRICS_PORT ?? 9464))
console.log(`API on http://127.0.0.1:${apiPort}
  curl -i http://127.0.0.1:${apiPort}/resource/bike-racks.json -H 'X-App-Token: ${appToken}'
metrics on http://127.0.0.1:${metricsPort}/metrics`)
