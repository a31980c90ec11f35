import {
  DLQ_REASON_HEADER,
  DLQ_SOURCE_HEADER,
  deadLetterTopicFor,
  type BatchHandler,
  type Bus,
  type IncomingMessage,
  type MessageBatch,
} from '@svc/bus';
import type { RawEventEnvelope, TopicSpec } from '@svc/contracts';
import type { Db, Logger } from '@svc/runtime';
import type { ResolverMetrics } from './metrics';
import type { OutputTopics } from './outbox';
import { processBatch, type BatchOptions, type BatchOutcome } from './process-batch';
import { classifyFailure, inTransactionWithRetry } from './retry';

export type ResolverTopics = OutputTopics & { eventsRaw: TopicSpec };

export interface ResolverDeps {
  db: Db;
  bus: Bus;
  topics: ResolverTopics;
  logger: Logger;
  metrics?: ResolverMetrics;
  batch?: BatchOptions;
  /** Events per transaction; a larger bus batch is split (default 200). Bounds the locks one transaction holds. */
  maxEventsPerTransaction?: number;
  /** Attempts of one transaction on deadlocks and serialization failures (default 8). */
  transactionAttempts?: number;
  /** Attempts of one event alone, after its batch failed on the data, before it is dead-lettered (default 3). */
  poisonAttempts?: number;
  /** Called after each committed transaction (the outbox relay's wake-up). */
  onCommitted?: () => void;
}

const chunk = <T>(items: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

/** Why an event was dead-lettered, in one line: the database's own message (knex prefixes the statement), or the error. */
export function deadLetterReason(err: unknown): string {
  const e = err instanceof Error ? err : new Error(String(err));
  const code = (e as { code?: unknown }).code;
  const text =
    typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)
      ? `SQLSTATE ${code}: ${e.message.split(' - ').pop() ?? e.message}`
      : `${e.name}: ${e.message}`;
  return `identity-resolver: ${text.replace(/\s+/g, ' ').trim()}`.slice(0, 1_000);
}

/**
 * The raw-topic batch handler. Each batch (split into transactions of at
 * most maxEventsPerTransaction) is resolved in one transaction, retried on
 * conflicts. Returning lets the bus commit the offsets; so only after the
 * transaction committed.
 *
 * - The database unavailable (or conflicts that do not go away): throws, so
 *   the bus keeps the batch uncommitted and delivers it again after a back-off.
 * - Any other failure is about the data: the batch is run again one event per
 *   transaction; an event that keeps failing alone is produced to the raw
 *   topic's dead-letter topic with `x-dlq-reason`, and the rest go on, so one
 *   poison event never blocks its partition.
 */
export function createResolverHandler(deps: ResolverDeps): BatchHandler<RawEventEnvelope> {
  const perTransaction = deps.maxEventsPerTransaction ?? 200;
  const poisonAttempts = deps.poisonAttempts ?? 3;
  const deadLetterTopic = deadLetterTopicFor(deps.topics.eventsRaw);

  const run = async (messages: ReadonlyArray<IncomingMessage<RawEventEnvelope>>): Promise<BatchOutcome> => {
    const started = process.hrtime.bigint();
    const outcome = await inTransactionWithRetry(deps.db, (trx) => processBatch(trx, messages.map((m) => m.value), deps.batch), {
      attempts: deps.transactionAttempts ?? 8,
      onRetry: (attempt, err) => {
        deps.metrics?.transactionRetries.inc();
        deps.logger.debug({ attempt, err }, 'resolver: transaction conflicted; running it again');
      },
    });
    deps.onCommitted?.();
    if (outcome.invalidEngagementRules.length > 0) {
      deps.logger.warn({ orgIds: outcome.invalidEngagementRules }, 'resolver: stored engagement rules fail the check; their events scored no points (svcctl rules set fixes them)');
    }
    const m = deps.metrics;
    if (m) {
      m.batchSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
      m.events.inc({ outcome: 'stored' }, outcome.stored);
      m.events.inc({ outcome: 'duplicate' }, outcome.duplicates);
      m.profilesCreated.inc(outcome.profilesCreated);
      for (const reason of outcome.merges) m.merges.inc({ reason });
    }
    return outcome;
  };

  const deadLetter = async (m: IncomingMessage<RawEventEnvelope>, err: unknown): Promise<void> => {
    const reason = deadLetterReason(err);
    const [result] = await deps.bus.produce(deadLetterTopic, [
      {
        key: m.key,
        value: m.value,
        headers: { ...m.headers, [DLQ_REASON_HEADER]: reason, [DLQ_SOURCE_HEADER]: `${m.topic}/${m.partition}/${m.offset}` },
      },
    ]);
    if (!result?.ok) throw result?.error ?? new Error('dead-letter produce returned no result');
    deps.metrics?.events.inc({ outcome: 'dead_lettered' });
    deps.logger.error({ topic: m.topic, partition: m.partition, offset: m.offset, reason }, 'resolver: dead-lettered a poison event');
  };

  const handle = async (messages: ReadonlyArray<IncomingMessage<RawEventEnvelope>>): Promise<void> => {
    try {
      await run(messages);
      return;
    } catch (err) {
      const kind = classifyFailure(err);
      deps.metrics?.batchFailures.inc({ kind });
      if (kind !== 'data') throw err;
      deps.logger.warn({ err, events: messages.length }, 'resolver: batch failed on its data; isolating the failing event');
    }
    for (const m of messages) {
      let failure: unknown;
      for (let attempt = 1; attempt <= poisonAttempts; attempt++) {
        try {
          await run([m]);
          failure = undefined;
          break;
        } catch (err) {
          if (classifyFailure(err) !== 'data') throw err;
          failure = err;
        }
      }
      if (failure !== undefined) await deadLetter(m, failure);
    }
  };

  return async (batch: MessageBatch<RawEventEnvelope>) => {
    for (const part of chunk(batch.messages, perTransaction)) await handle(part);
  };
}
