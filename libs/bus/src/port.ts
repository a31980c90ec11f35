import type { TopicSpec } from '@svc/contracts';

/**
 * The bus port: the only way services talk to each other. Two adapters
 * implement it (Kafka for scale-out, a Postgres-backed log for the embedded
 * tier) and both pass one contract suite (contract.suite.ts).
 *
 * Guarantees: a message is stored durably before produce() reports it ok;
 * messages with the same key go to the same partition and are delivered in
 * order; delivery is at-least-once: a batch whose handler throws, or whose
 * consumer dies before committing, is delivered again.
 */

export interface OutgoingMessage<T = unknown> {
  /** Partitioning key: equal keys keep their order. */
  key: string;
  value: T;
  headers?: Record<string, string>;
}

/** Per message, in the order given: stored, or why not. */
export type ProduceResult = { ok: true } | { ok: false; error: Error };

export interface IncomingMessage<T = unknown> {
  topic: string;
  partition: number;
  /** Position in the partition, as a decimal string (Kafka offsets exceed 2^53 in principle). */
  offset: string;
  key: string;
  value: T;
  headers: Record<string, string>;
  /** When the log stored the message. */
  timestamp: Date;
}

/** Consecutive messages of one partition. */
export interface MessageBatch<T = unknown> {
  topic: string;
  partition: number;
  messages: IncomingMessage<T>[];
}

/**
 * Handles one batch. Returning commits the offsets past the batch; throwing
 * commits nothing, and the batch is delivered again after a back-off.
 */
export type BatchHandler<T = unknown> = (batch: MessageBatch<T>) => Promise<void>;

/**
 * What becomes of a consumed message, for a handler that decides it as a
 * value: stored (the handler returns, and the offset is committed); retried
 * (it throws `cause`, and the batch comes again after a back-off); or parked
 * on its topic's dead-letter topic with a one-line reason (deadLetterMessage),
 * as the adapters park a message that does not decode, and a handler one it
 * proves bad before it returns.
 */
export type HandlerOutcome = { kind: 'stored' } | { kind: 'retry'; cause: unknown } | { kind: 'dead-letter'; reason: string };

export interface SubscribeOptions<T = unknown> {
  groupId: string;
  topics: readonly TopicSpec[];
  handler: BatchHandler<T>;
  /** Upper bound of messages per batch. */
  maxBatchSize?: number;
  /**
   * Let batches gather: while less than `minBytes` of messages are waiting,
   * wait up to `maxWaitMs` for more before handing a batch over. For a
   * handler whose cost is mostly per batch (a transaction each), fewer and
   * larger batches cost less per message, for at most maxWaitMs of latency.
   * Default: whatever is there goes at once.
   */
  gather?: GatherOptions;
  /** Start from the earliest message when the group has no committed offset (default true). */
  fromBeginning?: boolean;
}

export interface GatherOptions {
  minBytes: number;
  maxWaitMs: number;
}

export interface Subscription {
  pause(): void;
  resume(): void;
  /** Finishes the batch in hand, commits it, and leaves the group. */
  stop(): Promise<void>;
}

export interface Bus {
  /** Creates missing topics with their partition counts (and registers their schemas). */
  ensureTopics(topics: readonly TopicSpec[]): Promise<void>;
  /**
   * Validates each message against its topic's schema (a violation is refused
   * with a SchemaViolationError naming the topic and field, and nothing is
   * sent), then stores them. Throws BusUnavailableError (retriable) when the
   * log cannot be reached at all.
   */
  produce<T>(topic: TopicSpec, messages: readonly OutgoingMessage<T>[]): Promise<ProduceResult[]>;
  subscribe<T>(options: SubscribeOptions<T>): Promise<Subscription>;
  /**
   * Per partition (by index), the offset the next stored message will get:
   * everything below it is readable. How a reader of the whole log (a replay)
   * knows where "now" ends.
   */
  endOffsets(topic: TopicSpec): Promise<string[]>;
  /** Stops every subscription, flushes and disconnects. */
  close(): Promise<void>;
}
