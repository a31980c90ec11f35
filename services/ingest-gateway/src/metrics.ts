import { defineCounter, defineHistogram, type Metrics } from '@svc/runtime';

/** The gateway's metrics, defined once; label values are bounded (reasons come from the catalogue). */
export function gatewayMetrics({ registry }: Metrics) {
  return {
    eventsAccepted: defineCounter(registry, {
      name: 'gateway_events_accepted_total',
      help: 'Events stored in the raw log',
    }),
    eventsRejected: defineCounter(registry, {
      name: 'gateway_events_rejected_total',
      help: 'Events dropped, by per-event reason',
      labelNames: ['reason'] as const,
    }),
    softCapWarnings: defineCounter(registry, {
      name: 'gateway_soft_cap_warnings_total',
      help: 'Events stored despite breaking a warn-only cap, by cap and field',
      labelNames: ['cap', 'field'] as const,
    }),
    timestampsClamped: defineCounter(registry, {
      name: 'gateway_timestamps_clamped_total',
      help: 'Events whose future timestamp was clamped to the receive time',
    }),
    batchSize: defineHistogram(registry, {
      name: 'gateway_batch_size_events',
      help: 'Events per accepted request',
      buckets: [0, 1, 5, 10, 20, 50, 100],
    }),
    produceSeconds: defineHistogram(registry, {
      name: 'gateway_produce_duration_seconds',
      help: 'Time for the log to acknowledge a batch',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    }),
    rejectedRequests: defineCounter(registry, {
      name: 'gateway_requests_limited_total',
      help: 'Requests refused by a rate limit or plan quota',
      labelNames: ['limit'] as const,
    }),
    rateLimitFallbacks: defineCounter(registry, {
      name: 'gateway_rate_limit_fallbacks_total',
      help: 'Requests counted against their rate limits in this process because the shared counters (the database) could not be reached',
    }),
    outageAdmissions: defineCounter(registry, {
      name: 'gateway_outage_admissions_total',
      help: 'Requests admitted on a key the database confirmed recently but could not confirm now (KEY_OUTAGE_GRACE_SECONDS)',
    }),
  };
}
export type GatewayMetrics = ReturnType<typeof gatewayMetrics>;
