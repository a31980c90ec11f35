import { deadLetterTopicFor, type Bus } from '@svc/bus';
import type { TopicSpec } from '@svc/contracts';
import { DataKeyReader, type IdentifierHashes, type MasterKeyRing } from '@svc/identity';
import type { Db, Logger, Tracer } from '@svc/runtime';
import { DEFAULT_RESOLVER_BATCH_SIZE } from './config';
import { createErasureHandler } from './erasure';
import { type ResolverMetrics } from './metrics';
import { OutboxRelay } from './outbox';
import { type BatchOptions } from './process-batch';
import { StallWatch, createResolverHandler, type ResolverTopics } from './resolver';

/** Connections one consumer-group member uses at once: its transaction, and its conversion-name look-ups beside it. */
const CONNECTIONS_PER_CONSUMER = 2;
/** The outbox relay's connections. */
const RELAY_CONNECTIONS = 2;

/** The connection pool a resolver of `consumers` members needs. */
export const resolverPoolSize = (consumers: number): number => CONNECTIONS_PER_CONSUMER * consumers + RELAY_CONNECTIONS;

/** How many members a pool of `poolMax` connections serves (at least one): resolverPoolSize the other way round. */
export const consumersForPool = (poolMax: number): number => Math.max(1, Math.floor((poolMax - RELAY_CONNECTIONS) / CONNECTIONS_PER_CONSUMER));

export interface StartResolverOptions {
  db: Db;
  bus: Bus;
  topics: ResolverTopics;
  logger: Logger;
  metrics?: ResolverMetrics;
  /** Unwrap the data keys that seal the raw log (RAW_LOG_MASTER_KEY). */
  masterKeys: MasterKeyRing;
  /** How identifiers are hashed for the suppression list and erasures (IDENTIFIER_HASH_KEYS). */
  hashes: IdentifierHashes;
  /** Consumer group of the raw topic (default `identity-resolver`). */
  groupId?: string;
  /** Messages per bus batch, and so at most per transaction (default DEFAULT_RESOLVER_BATCH_SIZE, as configured). */
  maxBatchSize?: number;
  /**
   * Longest a batch may gather while less than a full one is waiting
   * (default 0: at once). A transaction costs about as much to set up,
   * plan and commit whatever its size, so under load fewer, larger ones
   * cost less per event; the price is this much latency at most.
   */
  batchWaitMs?: number;
  /**
   * Members of the consumer group in this process (default 1). Each owns a
   * share of the raw topic's partitions and runs its own transactions, so
   * batches of different partitions are resolved at the same time; each
   * partition is still handled by one member, in order. More members than
   * partitions (8) leave some idle.
   */
  consumers?: number;
  batch?: Omit<BatchOptions, 'hashes'>;
  /**
   * profiles.erasure-requests: when given, one more member (in the group
   * `<groupId>-erasure`) carries erasures out (erasure.ts). The service
   * always gives it; tests of the batch path need not.
   */
  erasureRequests?: TopicSpec;
  /** Outbox relay settings. */
  relay?: { batchSize?: number; intervalMs?: number };
  /** Passed to the handler; see ResolverDeps. */
  transactionAttempts?: number;
  poisonAttempts?: number;
  tracer?: Tracer;
}

export interface RunningResolver {
  relay: OutboxRelay;
  /** Events failing without proof of bad data (retried, never dead-lettered); readiness reports them. */
  stalls: StallWatch;
  /** Finishes the batch in hand and commits it, leaves the group, then drains the outbox once more. */
  stop(): Promise<void>;
}

/** What a full batch is taken to weigh per event, for letting batches gather: a raw event of about 1 KB. */
const TYPICAL_EVENT_BYTES = 1024;

/** Consumes the raw topic into the identity projections and relays the outbox to the output topics. */
export async function startResolver(o: StartResolverOptions): Promise<RunningResolver> {
  const { topics } = o;
  await o.bus.ensureTopics([
    topics.eventsRaw,
    deadLetterTopicFor(topics.eventsRaw),
    topics.eventsResolved,
    topics.profilesChanges,
    topics.conversionsCandidates,
    topics.profilesErased,
    ...(o.erasureRequests ? [o.erasureRequests] : []),
  ]);
  const relay = new OutboxRelay({
    db: o.db,
    bus: o.bus,
    topics,
    logger: o.logger,
    ...(o.metrics ? { metrics: o.metrics } : {}),
    ...o.relay,
  });
  relay.start();
  const maxBatchSize = o.maxBatchSize ?? DEFAULT_RESOLVER_BATCH_SIZE;
  const stalls = new StallWatch();
  const handler = createResolverHandler({
    db: o.db,
    bus: o.bus,
    topics,
    logger: o.logger,
    // One key reader for every member: a key read once serves them all.
    keys: new DataKeyReader(o.db, o.masterKeys),
    ...(o.metrics ? { metrics: o.metrics } : {}),
    batch: { ...o.batch, hashes: o.hashes },
    maxEventsPerTransaction: maxBatchSize,
    ...(o.transactionAttempts === undefined ? {} : { transactionAttempts: o.transactionAttempts }),
    ...(o.poisonAttempts === undefined ? {} : { poisonAttempts: o.poisonAttempts }),
    ...(o.tracer ? { tracer: o.tracer } : {}),
    onCommitted: (resolved) => {
      relay.remember(resolved);
      relay.wake();
    },
    stalls,
  });
  const consumers = o.consumers ?? 1;
  if (!Number.isInteger(consumers) || consumers < 1) throw new RangeError(`startResolver: invalid consumers ${consumers}`);
  // The members join together, so a broker settles the group in one rebalance rather than one per member.
  const joined = await Promise.allSettled(
    Array.from({ length: consumers }, () =>
      o.bus.subscribe({
        groupId: o.groupId ?? 'identity-resolver',
        topics: [topics.eventsRaw],
        handler,
        maxBatchSize,
        ...(o.batchWaitMs ? { gather: { minBytes: maxBatchSize * TYPICAL_EVENT_BYTES, maxWaitMs: o.batchWaitMs } } : {}),
      }),
    ),
  );
  // Erasure requests: one member (they are rare), in a group of their own.
  if (o.erasureRequests) {
    joined.push(
      ...(await Promise.allSettled([
        o.bus.subscribe({
          groupId: `${o.groupId ?? 'identity-resolver'}-erasure`,
          topics: [o.erasureRequests],
          handler: createErasureHandler({ db: o.db, logger: o.logger, hashes: o.hashes, ...(o.metrics ? { metrics: o.metrics } : {}), onCommitted: () => relay.wake() }),
          maxBatchSize: 20,
        }),
      ])),
    );
  }
  const subscriptions = joined.flatMap((j) => (j.status === 'fulfilled' ? [j.value] : []));
  const stopAll = async () => {
    await Promise.all(subscriptions.map((s) => s.stop()));
    await relay.stop();
  };
  const failed = joined.find((j): j is PromiseRejectedResult => j.status === 'rejected');
  if (failed) {
    await stopAll();
    throw failed.reason;
  }
  return { relay, stalls, stop: stopAll };
}
