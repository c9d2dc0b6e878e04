/**
 * A metric reader the tests collect from when they want, with the real OpenTelemetry SDK:
 * what a Prometheus scrape or an OTLP export sees.
 */
import { AggregationTemporality, MetricReader, type MetricData } from '@opentelemetry/sdk-metrics'

export class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE })
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve()
  }
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve()
  }
  async metrics(): Promise<MetricData[]> {
    const { resourceMetrics } = await this.collect()
    return resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics)
  }
}
