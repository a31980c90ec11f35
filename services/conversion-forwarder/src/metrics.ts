import { defineCounter, defineHistogram, type Metrics } from '@svc/runtime';

/** The forwarder's metrics; label values are bounded (platform, outcome). No PII, no ids. */
export function forwarderMetrics({ registry }: Metrics) {
  return {
    conversions: defineCounter(registry, {
      name: 'forwarder_conversions_total',
      help: 'Conversions by platform and outcome: queued, duplicate (message or order already queued), no_click (no usable click ID), sent, retried, failed, dead',
      labelNames: ['platform', 'outcome'] as const,
    }),
    deliverySeconds: defineHistogram(registry, {
      name: 'forwarder_delivery_duration_seconds',
      help: 'Time of one call to a platform, by platform',
      labelNames: ['platform'] as const,
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    }),
  };
}
export type ForwarderMetrics = ReturnType<typeof forwarderMetrics>;
