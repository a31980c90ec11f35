import { deadLetterTopicFor, type Bus } from '@svc/bus';
import type { Db, Logger } from '@svc/runtime';
import type { ResolverMetrics } from './metrics';
import { OutboxRelay } from './outbox';
import type { BatchOptions } from './process-batch';
import { createResolverHandler, type ResolverTopics } from './resolver';

export interface StartResolverOptions {
  db: Db;
  bus: Bus;
  topics: ResolverTopics;
  logger: Logger;
  metrics?: ResolverMetrics;
  /** Consumer group of the raw topic (default `identity-resolver`). */
  groupId?: string;
  /** Messages per bus batch, and so at most per transaction (default 200). */
  maxBatchSize?: number;
  batch?: BatchOptions;
  /** Outbox relay settings. */
  relay?: { batchSize?: number; intervalMs?: number };
  /** Passed to the handler; see ResolverDeps. */
  transactionAttempts?: number;
  poisonAttempts?: number;
}

export interface RunningResolver {
  relay: OutboxRelay;
  /** Finishes the batch in hand and commits it, leaves the group, then drains the outbox once more. */
  stop(): Promise<void>;
}

/** Consumes the raw topic into the identity projections and relays the outbox to the output topics. */
export async function startResolver(o: StartResolverOptions): Promise<RunningResolver> {
  const { topics } = o;
  await o.bus.ensureTopics([
    topics.eventsRaw,
    deadLetterTopicFor(topics.eventsRaw),
    topics.eventsResolved,
    topics.profilesChanges,
    topics.conversionsCandidates,
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
  const maxBatchSize = o.maxBatchSize ?? 200;
  const handler = createResolverHandler({
    db: o.db,
    bus: o.bus,
    topics,
    logger: o.logger,
    ...(o.metrics ? { metrics: o.metrics } : {}),
    ...(o.batch ? { batch: o.batch } : {}),
    maxEventsPerTransaction: maxBatchSize,
    ...(o.transactionAttempts === undefined ? {} : { transactionAttempts: o.transactionAttempts }),
    ...(o.poisonAttempts === undefined ? {} : { poisonAttempts: o.poisonAttempts }),
    onCommitted: () => relay.wake(),
  });
  try {
    const subscription = await o.bus.subscribe({
      groupId: o.groupId ?? 'identity-resolver',
      topics: [topics.eventsRaw],
      handler,
      maxBatchSize,
    });
    return {
      relay,
      async stop() {
        await subscription.stop();
        await relay.stop();
      },
    };
  } catch (err) {
    await relay.stop();
    throw err;
  }
}
