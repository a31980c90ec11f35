import { CompressionTypes, type Admin, type Kafka, type KafkaMessage } from 'kafkajs';
import type { TopicSpec } from '@svc/contracts';
import { deadLetterMessage, deadLetterTopicFor } from '../dead-letters';
import type { BatchHandler, Bus, OutgoingMessage, ProduceResult, SubscribeOptions, Subscription } from '../port';
import { checkedSubscribeOptions, silentLogger, subscriptionOf, type BusLogger } from '../shared';
import { assertAllValid, partitionFor } from '../validate';
import { createKafka, shortRetry, Sockets } from './client';
import { Codec } from './codec';
import { LagGauge } from './lag';
import { observeDeadLetters } from '../bus-metrics';
import { kafkaDeadLetters } from './dead-letter-counts';
import { MemoizingRegistryClient } from './registry';
import { consumerSettings, type KafkaBusOptions } from './options';
import { Connected, ProducerPool, type PartitionedMessage } from './send';
import { KafkaSubscription } from './subscription';
import { TopicManager } from './topics';
import { guard } from './unavailable';

export interface KafkaBus extends Bus {
  /**
   * For tests: dies like a killed process. Every consumer stops at once and
   * commits nothing, not even for a handler still running; every broker
   * connection is cut, so no LeaveGroup is sent and the group hands the
   * partitions on after the session timeout. close() afterwards waits for
   * the in-process remains.
   */
  simulateCrash(): Promise<void>;
}

/** The Kafka adapter of the bus port: kafkajs for the log, the schema registry's JSON Schema serde for payloads. */
export function createKafkaBus(options: KafkaBusOptions): KafkaBus {
  return new KafkaBusImpl(options);
}

class KafkaBusImpl implements KafkaBus {
  private readonly logger: BusLogger;
  private readonly sockets = new Sockets();
  private readonly kafka: Kafka;
  private readonly registry: MemoizingRegistryClient;
  private readonly codec: Codec;
  private readonly producers: ProducerPool;
  private readonly admin: Connected<Admin>;
  private readonly topics: TopicManager;
  private readonly lag: LagGauge | undefined;
  private readonly subscriptions = new Set<KafkaSubscription>();
  private readonly timeoutMs: number;
  private closing: Promise<void> | undefined;

  constructor(private readonly o: KafkaBusOptions) {
    if (o.brokers.length === 0) throw new Error('createKafkaBus: no brokers given');
    this.logger = o.logger ?? silentLogger;
    this.timeoutMs = o.operationTimeoutMs ?? 8_000;
    const requestTimeoutMs = o.requestTimeoutMs ?? 5_000;
    this.registry = MemoizingRegistryClient.connect(o.registryUrl, requestTimeoutMs, o.registryAccess);
    this.codec = new Codec(this.registry);
    const kafka = createKafka(o, this.sockets, this.logger);
    this.kafka = kafka;
    this.producers = new ProducerPool(kafka, o.producers ?? 1, {
      compression: o.compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None,
      ackTimeoutMs: requestTimeoutMs,
    });
    this.admin = new Connected(kafka.admin({ retry: shortRetry }));
    this.topics = new TopicManager(() => this.admin.get(), this.registry, undefined, {
      replicationFactor: o.replicationFactor,
      minInsyncReplicas: o.minInsyncReplicas,
    });
    this.lag = o.metricsRegistry ? new LagGauge(o.metricsRegistry) : undefined;
    if (o.metricsRegistry) observeDeadLetters(o.metricsRegistry, async () => kafkaDeadLetters(await this.admin.get()));
  }

  async ensureTopics(topics: readonly TopicSpec[]): Promise<void> {
    this.assertOpen();
    await guard('ensure topics', Promise.all(topics.map((t) => this.topics.ensure(t, true))), this.timeoutMs);
  }

  async produce<T>(topic: TopicSpec, messages: readonly OutgoingMessage<T>[]): Promise<ProduceResult[]> {
    this.assertOpen();
    // Every message is checked before any is sent: a violation refuses the whole call.
    assertAllValid(
      topic,
      messages.map((m) => m.value),
    );
    if (messages.length === 0) return [];
    return guard(`produce to ${topic.name}`, this.sendChecked(topic, messages), this.timeoutMs);
  }

  private async sendChecked<T>(topic: TopicSpec, messages: readonly OutgoingMessage<T>[]): Promise<ProduceResult[]> {
    const state = await this.topics.ensure(topic, true);
    const records = messages.map((m) => {
      const record: PartitionedMessage = {
        key: m.key,
        value: this.codec.encode(state.schemaId, m.value),
        partition: partitionFor(m.key, state.partitions),
      };
      if (m.headers) record.headers = m.headers;
      return record;
    });
    return this.producers.send(topic.name, records);
  }

  async subscribe<T>(options: SubscribeOptions<T>): Promise<Subscription> {
    this.assertOpen();
    const { maxBatchSize, gather } = checkedSubscribeOptions(options);
    // Creates missing topics, but registers no schema: a reader must not add versions to a writer's subject.
    await guard('ensure topics', Promise.all(options.topics.map((t) => this.topics.ensure(t, false))), this.timeoutMs);
    const sub = new KafkaSubscription({
      kafka: this.kafka,
      groupId: options.groupId,
      topics: options.topics,
      // Safe: every value is checked against its topic's schema before the handler sees it.
      handler: options.handler as BatchHandler<unknown>,
      maxBatchSize,
      gather,
      fromBeginning: options.fromBeginning ?? true,
      codec: this.codec,
      deadLetter: (spec, partition, message, reason) => this.deadLetter(spec, partition, message, reason),
      lag: this.lag,
      consumer: consumerSettings(this.o),
      logger: this.logger,
    });
    this.subscriptions.add(sub);
    try {
      // No deadline: a start abandoned half-way would leave a member running unseen. Connecting
      // is bounded by kafkajs's retries; joining may wait for the group's other members.
      await guard(`subscribe ${options.groupId}`, sub.start(), undefined);
    } catch (err) {
      this.subscriptions.delete(sub);
      throw err;
    }
    return subscriptionOf(sub, this.subscriptions);
  }

  async endOffsets(topic: TopicSpec): Promise<string[]> {
    this.assertOpen();
    const state = await guard('ensure topics', this.topics.ensure(topic, false), this.timeoutMs);
    const offsets = await guard(`end offsets of ${topic.name}`, this.admin.get().then((a) => a.fetchTopicOffsets(topic.name)), this.timeoutMs);
    const ends = Array.from({ length: state.partitions }, () => '0');
    for (const o of offsets) ends[o.partition] = o.high;
    return ends;
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.subscriptions].map((s) => s.stop()));
      this.subscriptions.clear();
      await Promise.allSettled([this.producers.disconnect(), this.admin.client.disconnect()]);
      await this.registry.close();
    })();
    return this.closing;
  }

  async simulateCrash(): Promise<void> {
    if (this.closing) return;
    // All synchronous, before any kafkajs teardown can send a thing: no commit, no goodbye.
    const subscriptions = [...this.subscriptions];
    this.subscriptions.clear();
    this.sockets.kill();
    const remains = Promise.allSettled([
      ...subscriptions.map((s) => s.crash()),
      this.producers.disconnect(),
      this.admin.client.disconnect(),
    ]);
    // close() (the test's cleanup) waits for the remains: they end once the handlers in hand return.
    this.closing = remains.then(() => this.registry.close());
  }

  /** Parks an undecodable message: original key, value and headers, plus why and where from. */
  private async deadLetter(spec: TopicSpec, partition: number, m: KafkaMessage, reason: string): Promise<void> {
    const dlq = deadLetterTopicFor(spec);
    const state = await this.topics.ensure(dlq, false);
    const key = m.key ? m.key.toString('utf8') : '';
    const parked = deadLetterMessage(m, reason, { topic: spec.name, partition, offset: m.offset });
    const [result] = await this.producers.send(dlq.name, [{ ...parked, partition: partitionFor(key, state.partitions) }]);
    if (result && !result.ok) throw result.error;
  }

  private assertOpen(): void {
    if (this.closing) throw new Error('bus: closed');
  }
}
