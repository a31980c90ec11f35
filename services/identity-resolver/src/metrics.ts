import { defineCounter, defineHistogram, type Metrics } from '@svc/runtime';

/** The resolver's metrics, defined once per registry; label values are bounded. */
export function resolverMetrics({ registry }: Metrics) {
  return {
    events: defineCounter(registry, {
      name: 'resolver_events_total',
      help: 'Raw events handled, by outcome: stored (new), duplicate (already stored), erased (sealed under a key an erasure deleted), dead_lettered',
      labelNames: ['outcome'] as const,
    }),
    eventsSuppressed: defineCounter(registry, {
      name: 'resolver_events_suppressed_total',
      help: 'Raw events dropped before storing because they carry an erased (suppressed) identifier',
    }),
    erasures: defineCounter(registry, {
      name: 'resolver_erasures_total',
      help: 'Erasure requests carried out, by outcome: done, failed',
      labelNames: ['outcome'] as const,
    }),
    phoneRestatements: defineCounter(registry, {
      name: 'resolver_phone_restatements_total',
      help: 'Profiles whose phone signals were read again from their events (a migration, a region change, svcctl phones restate), by step: 1 (numbers no event gives dropped), 2 (numbers attached or merged by)',
      labelNames: ['step'] as const,
    }),
    unmerges: defineCounter(registry, {
      name: 'resolver_unmerges_total',
      help: 'Unmerge requests carried out, by outcome: done, failed',
      labelNames: ['outcome'] as const,
    }),
    merges: defineCounter(registry, {
      name: 'resolver_merges_total',
      help: 'Profiles merged into another, by reason',
      labelNames: ['reason'] as const,
    }),
    warnings: defineCounter(registry, {
      name: 'resolver_warnings_total',
      help: 'Ingestion warnings of stored events, by kind (libs/identity WARNING_KINDS): unreadable_phone (no phone signal made), timestamp_clamped, soft_cap; per organisation: svcctl warnings',
      labelNames: ['kind'] as const,
    }),
    profilesCreated: defineCounter(registry, {
      name: 'resolver_profiles_created_total',
      help: 'Profiles created',
    }),
    transactionRetries: defineCounter(registry, {
      name: 'resolver_transaction_retries_total',
      help: 'Batch transactions run again after a deadlock, serialization failure or concurrent write',
    }),
    batchFailures: defineCounter(registry, {
      name: 'resolver_batch_failures_total',
      help: 'Batches handed back to the bus uncommitted (database unavailable) or split to isolate a failing event',
      labelNames: ['kind'] as const,
    }),
    outboxRelayed: defineCounter(registry, {
      name: 'resolver_outbox_relayed_total',
      help: 'Outbox messages produced to their topics and removed',
    }),
    batchSeconds: defineHistogram(registry, {
      name: 'resolver_batch_duration_seconds',
      help: 'Time to resolve and store one batch (one transaction)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    }),
  };
}
export type ResolverMetrics = ReturnType<typeof resolverMetrics>;
