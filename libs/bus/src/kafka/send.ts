import { CompressionTypes, Partitioners, type Kafka, type Message, type Producer } from 'kafkajs';
import type { ProduceResult } from '../port';
import { shortRetry } from './client';
import { isUnavailable } from './unavailable';

export interface SendSettings {
  compression: CompressionTypes;
  /** How long the broker may take to gather the acknowledgements (acks = all). */
  ackTimeoutMs: number;
}

/** A record with its partition already chosen (by partitionFor, as Kafka's default partitioner would). */
export interface PartitionedMessage extends Message {
  partition: number;
}

/** A client connected on first use, and again after a failed attempt. */
export class Connected<T extends { connect(): Promise<void> }> {
  private connecting: Promise<T> | undefined;
  constructor(readonly client: T) {}
  get(): Promise<T> {
    if (!this.connecting) {
      const attempt = this.client.connect().then(() => this.client);
      attempt.catch(() => {
        if (this.connecting === attempt) this.connecting = undefined;
      });
      this.connecting = attempt;
    }
    return this.connecting;
  }
}

/**
 * Idempotent producers, each partition always served by the same one (so
 * its sequence numbers, and its order, stay within one producer). kafkajs
 * lets an idempotent producer have one request per broker in flight; with
 * several producers the per-partition requests of one produce() call go out
 * in parallel (measured: 8 partitions, one producer, ~5,000 msg/s; see bench/).
 */
export class ProducerPool {
  private readonly producers: Connected<Producer>[];

  constructor(kafka: Kafka, size: number) {
    this.producers = Array.from(
      { length: Math.max(1, size) },
      () =>
        new Connected(
          kafka.producer({
            idempotent: true,
            // kafkajs locks an idempotent producer to one produce request per broker anyway; 1 keeps
            // its sequence numbers safe across retries (Java allows up to 5 with bookkeeping kafkajs lacks).
            maxInFlightRequests: 1,
            retry: shortRetry,
            createPartitioner: Partitioners.DefaultPartitioner,
            // Re-read as often as TopicManager re-reads partition counts, so both soon agree on a grown topic.
            metadataMaxAge: 30_000,
            allowAutoTopicCreation: false,
          }),
        ),
    );
  }

  for(partition: number): Promise<Producer> {
    return (this.producers[partition % this.producers.length] as Connected<Producer>).get();
  }

  async disconnect(): Promise<void> {
    await Promise.allSettled(this.producers.map((p) => p.client.disconnect()));
  }
}

/**
 * Sends each partition's messages as a request of its own, all at once, and
 * reports per message: a partition whose request failed fails its messages
 * only. When every request failed because nothing could be reached, throws
 * that error instead (the caller makes it a BusUnavailableError).
 *
 * The producers are idempotent: a retried request cannot be stored twice,
 * and a partition's messages are stored in the order given.
 */
export async function sendByPartition(
  pool: ProducerPool,
  topic: string,
  messages: readonly PartitionedMessage[],
  settings: SendSettings,
): Promise<ProduceResult[]> {
  const groups = new Map<number, number[]>();
  messages.forEach((m, i) => {
    const group = groups.get(m.partition);
    if (group) group.push(i);
    else groups.set(m.partition, [i]);
  });
  const results: ProduceResult[] = messages.map(() => ({ ok: true }));
  const failures = await Promise.all(
    [...groups].map(async ([partition, indexes]) => {
      try {
        const producer = await pool.for(partition);
        const stored = await producer.send({
          topic,
          acks: -1,
          timeout: settings.ackTimeoutMs,
          compression: settings.compression,
          messages: indexes.map((i) => messages[i] as PartitionedMessage),
        });
        // kafkajs silently skips a partition its metadata does not know yet (a topic grown moments
        // ago) and reports success with no record for it: that is a failure, and nothing was sent.
        if (!stored.some((r) => r.partition === partition)) {
          throw new Error(
            `bus: partition ${partition} of topic ${topic} is not in the producer's metadata yet (was the topic just grown?); nothing was sent, try again`,
          );
        }
        return undefined;
      } catch (err) {
        const error = err instanceof Error ? err : new Error(String(err), { cause: err });
        for (const i of indexes) results[i] = { ok: false, error };
        return error;
      }
    }),
  );
  const [firstFailure] = failures;
  if (firstFailure && failures.every((f) => f !== undefined && isUnavailable(f))) throw firstFailure;
  return results;
}
