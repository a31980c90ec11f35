import * as prom from 'prom-client';

export type HttpDurationLabels = 'method' | 'route' | 'status';

export interface Metrics {
  /** The registry this app's metrics live in; /metrics renders exactly this, unless `render` is set. */
  registry: prom.Registry;
  /** What /metrics serves instead of the registry alone: a cluster worker's serves every worker's (libs/service workers.ts). */
  render?: () => Promise<string>;
  /** Request latency by method, matched route pattern (or `unmatched`) and status. */
  httpRequestDuration: prom.Histogram<HttpDurationLabels>;
  /** Requests refused with a 429 before any lookup because their address sent too many keys that did not verify (FailedAuthThrottle). */
  unauthenticatedThrottled: prom.Counter;
}

export interface CreateMetricsOptions {
  /** Collect Node process metrics (CPU, memory, event loop, GC). Default true. */
  collectDefaultMetrics?: boolean;
  /** Labels added to every series of this registry, e.g. `{ service: 'ingest' }`. */
  defaultLabels?: Record<string, string>;
}

/** Route label used when no express route matched (404s, preflights, early rejections). */
export const UNMATCHED_ROUTE = 'unmatched';

/** Seconds; spans a fast cache hit to a slow 1 MiB batch insert. */
const HTTP_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * A fresh registry per call, never prom-client's global one: tests (and a process
 * hosting several apps) can create many without "metric already registered" errors.
 */
export function createMetrics(options: CreateMetricsOptions = {}): Metrics {
  const registry = new prom.Registry();
  if (options.defaultLabels) registry.setDefaultLabels(options.defaultLabels);
  if (options.collectDefaultMetrics ?? true) prom.collectDefaultMetrics({ register: registry });
  const httpRequestDuration = defineHistogram(registry, {
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration in seconds, by method, matched route pattern and status.',
    labelNames: ['method', 'route', 'status'],
    buckets: HTTP_DURATION_BUCKETS,
  });
  const unauthenticatedThrottled = defineCounter(registry, {
    name: 'http_unauthenticated_throttled_total',
    help: 'Requests refused (429) before their key was looked up: their client address sent too many keys that did not verify this minute.',
  });
  return { registry, httpRequestDuration, unauthenticatedThrottled };
}

/*
 * Helpers for other modules' own metrics: they bind the metric to the given
 * registry (and only that one) so callers cannot forget `registers` and leak into
 * the global registry.
 */

export function defineCounter<L extends string = string>(
  registry: prom.Registry,
  config: Omit<prom.CounterConfiguration<L>, 'registers'>,
): prom.Counter<L> {
  return new prom.Counter<L>({ ...config, registers: [registry] });
}

export function defineGauge<L extends string = string>(
  registry: prom.Registry,
  config: Omit<prom.GaugeConfiguration<L>, 'registers'>,
): prom.Gauge<L> {
  return new prom.Gauge<L>({ ...config, registers: [registry] });
}

export function defineHistogram<L extends string = string>(
  registry: prom.Registry,
  config: Omit<prom.HistogramConfiguration<L>, 'registers'>,
): prom.Histogram<L> {
  return new prom.Histogram<L>({ ...config, registers: [registry] });
}
