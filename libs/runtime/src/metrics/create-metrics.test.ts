import { describe, expect, it } from '@jest/globals';
import * as prom from 'prom-client';
import { createMetrics, defineCounter, defineGauge, defineHistogram } from './create-metrics';

describe('createMetrics', () => {
  it('collects default Node metrics into its own registry, not the global one', async () => {
    const metrics = createMetrics();
    const text = await metrics.registry.metrics();
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('nodejs_eventloop_lag_seconds');
    expect(text).toContain('# TYPE http_request_duration_seconds histogram');
    expect(await prom.register.metrics()).not.toContain('http_request_duration_seconds');
  });

  it('can be created several times in one process', () => {
    expect(() => [createMetrics(), createMetrics(), createMetrics()]).not.toThrow();
  });

  it('records the request-duration histogram with method, route and status labels', async () => {
    const metrics = createMetrics({ collectDefaultMetrics: false });
    metrics.httpRequestDuration.observe({ method: 'POST', route: '/functions/v1/v1-batch', status: '200' }, 0.02);
    const text = await metrics.registry.metrics();
    expect(text).toContain(
      'http_request_duration_seconds_bucket{le="0.025",method="POST",route="/functions/v1/v1-batch",status="200"} 1',
    );
  });

  it('applies default labels', async () => {
    const metrics = createMetrics({ collectDefaultMetrics: false, defaultLabels: { service: 'ingest' } });
    metrics.httpRequestDuration.observe({ method: 'GET', route: 'unmatched', status: '404' }, 0.001);
    expect(await metrics.registry.metrics()).toContain('service="ingest"');
  });
});

describe('define* helpers', () => {
  it('register metrics on the given registry only', async () => {
    const { registry } = createMetrics({ collectDefaultMetrics: false });
    const counter = defineCounter(registry, { name: 'events_ingested_total', help: 'Events.', labelNames: ['outcome'] });
    const gauge = defineGauge(registry, { name: 'consumer_lag', help: 'Lag.' });
    const histogram = defineHistogram(registry, { name: 'db_query_seconds', help: 'Queries.', buckets: [0.1, 1] });
    counter.inc({ outcome: 'accepted' }, 3);
    gauge.set(7);
    histogram.observe(0.5);

    const text = await registry.metrics();
    expect(text).toContain('events_ingested_total{outcome="accepted"} 3');
    expect(text).toContain('consumer_lag 7');
    expect(text).toContain('db_query_seconds_bucket{le="1"} 1');
    expect(await prom.register.metrics()).not.toContain('events_ingested_total');
  });

  it('the same name can live in two registries', () => {
    const a = createMetrics({ collectDefaultMetrics: false });
    const b = createMetrics({ collectDefaultMetrics: false });
    defineCounter(a.registry, { name: 'dup_total', help: 'x' });
    expect(() => defineCounter(b.registry, { name: 'dup_total', help: 'x' })).not.toThrow();
    expect(() => defineCounter(a.registry, { name: 'dup_total', help: 'x' })).toThrow();
  });
});
