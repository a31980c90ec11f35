import { CompressionTypes, Partitioners, type Kafka, type Message, type Producer } from 'kafkajs';
import type { ProduceResult } from '../port';
import { FramedJson } from './framed-json';
import { shortRetry } from './client';
import { isUnavailable } from './unavailable';
import { BatchGatherer } from '../shared';

export interface SendSettings {
  compression: CompressionTypes;
  /** How long the broker may take to gather the acknowledgements (acks = all). */
  ackTimeoutMs: number;
}

/**
 * A record with its partition already chosen (by partitionFor, as Kafka's
 * default partitioner would). Its value may be a FramedJson, which only the
 * bus's produce encoder writes (produce-encoder.ts).
 */
export interface PartitionedMessage extends Omit<Message, 'value'> {
  value: Message['value'] | FramedJson;
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
 * Above this many bytes (keys, values, headers) a producer request takes no
 * more calls: a request carries one record batch per partition, and the
 * broker refuses a batch over `message.max.bytes` (1 MiB by default). A
 * single call larger than this still goes, alone, as it did before.
 */
const MAX_REQUEST_BYTES = 768 * 1024;

/** Per-record overhead in a v2 record batch (length, attributes, deltas, varints), roughly. */
const RECORD_OVERHEAD_BYTES = 24;

/** One produce() call's share of one producer's next request: which partitions it wrote and what became of them. */
interface Order {
  topic: string;
  messages: PartitionedMessage[];
  bytes: number;
  settle: (failure: (partition: number) => Error | undefined) => void;
}

/**
 * One idempotent producer and the calls waiting for it. kafkajs sends an
 * idempotent producer's requests to a broker one at a time (a lock per
 * broker), and a request per produce() call would mean many small requests
 * queued on that lock. Instead the lane keeps one request in flight and
 * gathers every call that arrives meanwhile into the next one
 * (BatchGatherer: one `sendBatch`, one record batch per partition). A
 * partition's messages are stored in the order produce() was called; a
 * retried request cannot be stored twice (idempotence).
 */
class Lane {
  private readonly gatherer: BatchGatherer<Order>;
  /** The producer of the next request; replaced after a request that failed. */
  producer: Connected<Producer>;

  constructor(
    private readonly makeProducer: () => Producer,
    private readonly settings: SendSettings,
  ) {
    this.producer = new Connected(makeProducer());
    this.gatherer = new BatchGatherer<Order>({
      maxSize: MAX_REQUEST_BYTES,
      sizeOf: (order) => order.bytes,
      run: (orders) => this.request(orders),
    });
  }

  send(topic: string, messages: PartitionedMessage[]): Promise<(partition: number) => Error | undefined> {
    let bytes = 0;
    for (const m of messages) bytes += recordBytes(m);
    return new Promise((settle) => this.gatherer.push({ topic, messages, bytes, settle }));
  }

  private async request(orders: readonly Order[]): Promise<void> {
    const byTopic = new Map<string, PartitionedMessage[]>();
    for (const order of orders) {
      const list = byTopic.get(order.topic);
      if (list) for (const m of order.messages) list.push(m);
      else byTopic.set(order.topic, order.messages.slice());
    }
    let stored: Set<string>;
    const used = this.producer;
    try {
      const producer = await used.get();
      const metadata = await producer.sendBatch({
        acks: -1,
        timeout: this.settings.ackTimeoutMs,
        compression: this.settings.compression,
        // kafkajs carries the values to the produce encoder untouched; FramedJson is ours to write (produce-encoder.ts).
        topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages: messages as Message[] })),
      });
      stored = new Set(metadata.map((r) => `${r.topicName}\n${r.partition}`));
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err), { cause: err });
      this.renewProducer(used);
      for (const order of orders) order.settle(() => error);
      return;
    }
    for (const order of orders) {
      order.settle((partition) =>
        // kafkajs silently skips a partition its metadata does not know yet (a topic grown moments
        // ago) and reports success with no record for it: that is a failure, and nothing was sent.
        stored.has(`${order.topic}\n${partition}`)
          ? undefined
          : new Error(
              `bus: partition ${partition} of topic ${order.topic} is not in the producer's metadata yet (was the topic just grown?); nothing was sent, try again`,
            ),
      );
    }
  }

  /**
   * After a failed request the next one goes through a new producer, with a
   * producer id of its own. kafkajs hands a failed request's sequence
   * numbers back (it cannot tell a request the broker never got from one
   * whose answer was lost), so the same producer's next request would reuse
   * them: if the broker had appended the failed one after all, it would take
   * the next as a duplicate of it, answer success and drop its records
   * (acknowledged, and lost), or refuse every later one as out of order. A
   * new producer id starts its sequences afresh. The failed request's events
   * were reported failed, so their retry may put them in the log twice,
   * which consumers absorb (events are unique per organisation and messageId).
   */
  private renewProducer(failed: Connected<Producer>): void {
    if (this.producer !== failed) return;
    this.producer = new Connected(this.makeProducer());
    void failed.client.disconnect().catch(() => undefined);
  }
}

function recordBytes(m: PartitionedMessage): number {
  let n = RECORD_OVERHEAD_BYTES + byteLength(m.key) + byteLength(m.value);
  if (m.headers) {
    for (const [name, value] of Object.entries(m.headers)) {
      n += name.length + (Array.isArray(value) ? value.reduce<number>((s, v) => s + byteLength(v), 0) : byteLength(value));
    }
  }
  return n;
}

function byteLength(v: Buffer | FramedJson | string | null | undefined): number {
  if (v === null || v === undefined) return 0;
  if (v instanceof FramedJson) return v.byteLength;
  return typeof v === 'string' ? Buffer.byteLength(v) : v.length;
}

/**
 * Idempotent producers, each partition always served by the same one (so
 * its sequence numbers, and its order, stay within one producer), each with
 * one request in flight that carries every call gathered meanwhile (see
 * Lane). Several producers keep several requests in flight to the broker.
 */
export class ProducerPool {
  private readonly lanes: Lane[];

  constructor(kafka: Kafka, size: number, settings: SendSettings) {
    this.lanes = Array.from(
      { length: Math.max(1, size) },
      () =>
        new Lane(
          () =>
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
          settings,
        ),
    );
  }

  /**
   * Stores the messages, each in its given partition, and reports per
   * message: a request that failed fails its messages only. When every
   * message failed because nothing could be reached, throws that error
   * instead (the caller makes it a BusUnavailableError).
   */
  async send(topic: string, messages: readonly PartitionedMessage[]): Promise<ProduceResult[]> {
    const byLane = new Map<number, number[]>();
    messages.forEach((m, i) => {
      const lane = m.partition % this.lanes.length;
      const group = byLane.get(lane);
      if (group) group.push(i);
      else byLane.set(lane, [i]);
    });
    const results: ProduceResult[] = new Array<ProduceResult>(messages.length);
    const failures: Error[] = [];
    await Promise.all(
      [...byLane].map(async ([lane, indexes]) => {
        const failure = await (this.lanes[lane] as Lane).send(
          topic,
          indexes.map((i) => messages[i] as PartitionedMessage),
        );
        for (const i of indexes) {
          const error = failure((messages[i] as PartitionedMessage).partition);
          if (error) {
            results[i] = { ok: false, error };
            failures.push(error);
          } else {
            results[i] = { ok: true };
          }
        }
      }),
    );
    const [firstFailure] = failures;
    if (firstFailure && failures.length === messages.length && failures.every((f) => isUnavailable(f))) throw firstFailure;
    return results;
  }

  async disconnect(): Promise<void> {
    await Promise.allSettled(this.lanes.map((l) => l.producer.client.disconnect()));
  }
}
