import { identityConfigSpec } from '@svc/identity';
import { env } from '@svc/runtime';

/**
 * Raw events per bus batch, and so at most per transaction. 500, not 200: at
 * 5,000 events/s, 5-17% less CPU per stored event on both tiers
 * (docs/benchmarks-history.md, "Batches that gather").
 */
export const DEFAULT_RESOLVER_BATCH_SIZE = 500;

/** Settings only the resolver has. */
export const resolverOwnConfigSpec = {
  RESOLVER_GROUP_ID: env.string({ description: 'Consumer group of the identity resolver on the raw-events topic', default: 'identity-resolver' }),
  RESOLVER_BATCH_SIZE: env.int({
    description: 'Raw events per batch, and at most per database transaction, of the identity resolver',
    default: DEFAULT_RESOLVER_BATCH_SIZE,
    min: 1,
    max: 2000,
  }),
  RESOLVER_BATCH_WAIT_MS: env.int({
    description:
      'Longest the identity resolver lets a batch gather while less than a full batch is waiting (milliseconds): fewer, larger transactions cost less per event; 0 takes what is there at once',
    default: 250,
    min: 0,
    max: 5_000,
  }),
  RESOLVER_CONSUMERS: env.int({
    description: 'Consumer-group members of the identity resolver in this process; each resolves its share of the raw-events partitions in its own transactions, concurrently',
    default: 4,
    min: 1,
    max: 64,
  }),
  OUTBOX_RELAY_INTERVAL_MS: env.int({
    description: 'How often the identity resolver looks for outbox messages written by other processes (milliseconds)',
    default: 500,
    min: 10,
    max: 60_000,
  }),
};

/** What the resolver reads on its own, after the shared settings (HTTP only serves /healthz, /readyz, /metrics). */
export const resolverConfigSpec = {
  ...resolverOwnConfigSpec,
  ...identityConfigSpec,
};
