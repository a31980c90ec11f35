import type { Batch, Consumer, EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import type { TopicSpec } from '@svc/contracts';
import type { BatchHandler, GatherOptions, IncomingMessage, Subscription } from '../port';
import { backoffMs, type BusLogger } from '../shared';
import { headersToRecord, type Codec, type Decoded } from './codec';
import type { LagGauge } from './lag';
import type { ResolvedConsumerSettings } from './options';
import { PauseControl } from './pauses';
import { whenServed } from './topics';

export interface SubscriptionSettings {
  kafka: Kafka;
  groupId: string;
  topics: readonly TopicSpec[];
  handler: BatchHandler<unknown>;
  maxBatchSize: number;
  /** The broker holds a fetch until this much is waiting or the wait is over. */
  gather: GatherOptions | undefined;
  fromBeginning: boolean;
  codec: Codec;
  /** Parks an undecodable message in `<topic>.dlq`; resolves once the broker has it. */
  deadLetter(spec: TopicSpec, partition: number, message: KafkaMessage, reason: string): Promise<void>;
  lag: LagGauge | undefined;
  consumer: ResolvedConsumerSettings;
  logger: BusLogger;
}

const keyOf = (topic: string, partition: number) => `${topic}/${partition}`;

/**
 * One kafkajs consumer (one group member). Each fetched batch of a partition
 * is handed to the handler in runs of at most maxBatchSize; after a run
 * returns, its offsets are committed and resolved, so the next fetch starts
 * past it. When the handler throws, nothing is resolved or committed and the
 * partition is paused for a back-off: kafkajs fetches from the last resolved
 * offset, so the failed run (and everything after it) comes again once the
 * pause ends, while the member's other partitions go on.
 */
export class KafkaSubscription implements Subscription {
  private readonly consumer: Consumer;
  private readonly specs: ReadonlyMap<string, TopicSpec>;
  private readonly pauses: PauseControl;
  private readonly failures = new Map<string, number>();
  /** Partitions whose lag series this member has set. */
  private readonly reported = new Set<string>();
  private joined = false;
  private stopping: Promise<void> | undefined;
  private crashed = false;

  constructor(private readonly s: SubscriptionSettings) {
    this.specs = new Map(s.topics.map((t) => [t.name, t]));
    this.consumer = s.kafka.consumer({
      groupId: s.groupId,
      sessionTimeout: s.consumer.sessionTimeoutMs,
      rebalanceTimeout: s.consumer.rebalanceTimeoutMs,
      heartbeatInterval: s.consumer.heartbeatIntervalMs,
      // A fetch returns once minBytes are waiting, or after maxWaitTimeInMs with what there is.
      maxWaitTimeInMs: s.gather?.maxWaitMs ?? s.consumer.maxWaitTimeMs,
      minBytes: s.gather?.minBytes ?? 1,
      allowAutoTopicCreation: false,
      retry: {
        retries: 5,
        initialRetryTime: 200,
        maxRetryTime: 5_000,
        // After a crash (e.g. the broker went away for longer than the retries), kafkajs rejoins
        // on its own, unless we are going away or never joined (then start() reports the failure).
        restartOnFailure: async () => this.joined && !this.stopping && !this.crashed,
      },
    });
    this.pauses = new PauseControl(this.consumer, [...this.specs.keys()], (err) =>
      s.logger.debug({ err, groupId: s.groupId }, 'bus: pause state not applied yet; the next join applies it'),
    );
  }

  /** Connects, joins the group and starts consuming; rejects (and leaves nothing running) if it cannot join. */
  async start(): Promise<void> {
    const { events } = this.consumer;
    let onFirstJoin = () => {};
    let onEarlyCrash = (_err: Error) => {};
    const firstJoin = new Promise<void>((resolve, reject) => {
      onFirstJoin = resolve;
      onEarlyCrash = reject;
    });
    this.consumer.on(events.GROUP_JOIN, ({ payload }) => {
      this.joined = true;
      // A (re)joined member may hold a fresh kafkajs consumer group: tell it our pauses again.
      this.pauses.apply();
      this.forgetLagOutside(payload.memberAssignment);
      onFirstJoin();
    });
    this.consumer.on(events.CRASH, ({ payload }) => {
      if (!this.joined) onEarlyCrash(payload.error);
      else if (!this.crashed) this.s.logger.warn({ err: payload.error, groupId: this.s.groupId, restart: payload.restart }, 'bus: consumer crashed');
    });
    try {
      await this.consumer.connect();
      // Moments after a topic was created (here or elsewhere) the broker may not serve it yet; kafkajs's
      // subscribe then fails at once, forgetting the topics, so asking again is clean.
      await whenServed(() => this.consumer.subscribe({ topics: [...this.specs.keys()], fromBeginning: this.s.fromBeginning }));
      await this.consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        eachBatch: (payload) => this.eachBatch(payload),
      });
      await firstJoin;
    } catch (err) {
      this.stopping = Promise.resolve();
      await this.consumer.disconnect().catch(() => undefined);
      throw err;
    }
  }

  pause(): void {
    this.pauses.pause();
  }

  resume(): void {
    this.pauses.resume();
  }

  /** kafkajs's disconnect waits for the batch in hand (whose runs commit as they finish), leaves the group and closes. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.pauses.clear();
      await this.consumer.disconnect();
      this.forgetLagOutside({});
    })();
    return this.stopping;
  }

  /**
   * As if the process died: from now on nothing is committed, not even for
   * the run a handler is still busy with. The caller cuts the sockets, so the
   * broker hears no goodbye and gives the partitions away after the session
   * timeout. Returns the in-process teardown, which finishes once that
   * handler has returned.
   */
  crash(): Promise<void> {
    this.crashed = true;
    this.pauses.clear();
    this.stopping ??= this.consumer.disconnect().catch(() => undefined);
    return this.stopping;
  }

  private async eachBatch(payload: EachBatchPayload): Promise<void> {
    const spec = this.specs.get(payload.batch.topic);
    if (!spec || this.crashed) return;
    // kafkajs heartbeats only between batches; a slow handler must not cost us the membership.
    const keepAlive = setInterval(() => {
      if (!this.crashed) payload.heartbeat().catch(() => undefined);
    }, this.s.consumer.heartbeatIntervalMs);
    try {
      await this.deliver(payload, spec);
    } finally {
      clearInterval(keepAlive);
    }
  }

  /** Hands the batch over run by run: decodable runs to the handler, each undecodable message to the dead-letter topic. */
  private async deliver(payload: EachBatchPayload, spec: TopicSpec): Promise<void> {
    const { batch } = payload;
    const decoded = new Map<number, Decoded>();
    let i = 0;
    while (i < batch.messages.length) {
      // Stopping or pausing takes effect between runs; what is left is fetched again later (or by the next owner).
      if (this.crashed || this.pauses.paused || !payload.isRunning() || payload.isStale()) return;
      const run = batch.messages.slice(i, i + this.s.maxBatchSize);
      let results: Decoded[];
      try {
        results = await Promise.all(run.map(async (m, j) => decoded.get(i + j) ?? (await this.s.codec.decode(spec, m.value))));
      } catch (err) {
        return this.backOff(batch, err, 'bus: cannot decode a batch (schema registry unavailable?); will retry');
      }
      results.forEach((r, j) => decoded.set(i + j, r));

      const bad = results.findIndex((r) => !r.ok);
      const first = results[0];
      const head = run[0];
      if (bad === 0 && head && first && !first.ok) {
        try {
          await this.s.deadLetter(spec, batch.partition, head, first.reason);
        } catch (err) {
          return this.backOff(batch, err, 'bus: cannot dead-letter a message; will retry');
        }
        this.s.logger.warn({ topic: batch.topic, partition: batch.partition, offset: head.offset, reason: first.reason }, 'bus: dead-lettered a message');
        if (!(await this.commit(payload, head.offset))) return;
        i += 1;
        continue;
      }

      const good = bad < 0 ? run : run.slice(0, bad);
      const messages = good.map((m, j) => toIncoming(batch, m, results[j]));
      try {
        await this.s.handler({ topic: batch.topic, partition: batch.partition, messages });
      } catch (err) {
        return this.backOff(batch, err, 'bus: handler failed; will redeliver');
      }
      const last = good[good.length - 1];
      if (!last || !(await this.commit(payload, last.offset))) return;
      this.failures.delete(keyOf(batch.topic, batch.partition));
      i += good.length;
    }
  }

  /**
   * Commits past `offset`, then resolves it (the next fetch starts after it).
   * False when the process "died" meanwhile: then nothing is committed.
   * A failed commit throws to kafkajs, which rejoins on a rebalance and
   * otherwise retries; the run was not resolved, so it is delivered again.
   */
  private async commit(payload: EachBatchPayload, offset: string): Promise<boolean> {
    if (this.crashed) return false;
    const { topic, partition, highWatermark } = payload.batch;
    const next = BigInt(offset) + 1n;
    await payload.commitOffsetsIfNecessary({ topics: [{ topic, partitions: [{ partition, offset: next.toString() }] }] });
    payload.resolveOffset(offset);
    if (this.s.lag) {
      this.s.lag.set(this.s.groupId, topic, partition, highWatermark, next);
      this.reported.add(keyOf(topic, partition));
    }
    return true;
  }

  private backOff(batch: Batch, err: unknown, message: string): void {
    const key = keyOf(batch.topic, batch.partition);
    const failures = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, failures);
    const ms = backoffMs(failures);
    this.s.logger.warn({ err, groupId: this.s.groupId, topic: batch.topic, partition: batch.partition, failures, backoffMs: ms }, message);
    if (!this.crashed) this.pauses.backOff(batch.topic, batch.partition, ms);
  }

  /** Drops lag series of partitions this member no longer owns. */
  private forgetLagOutside(assignment: Record<string, number[] | undefined>): void {
    const lag = this.s.lag;
    if (!lag) return;
    for (const key of this.reported) {
      const slash = key.lastIndexOf('/');
      const topic = key.slice(0, slash);
      const partition = Number(key.slice(slash + 1));
      if (assignment[topic]?.includes(partition)) continue;
      lag.remove(this.s.groupId, topic, partition);
      this.reported.delete(key);
    }
  }
}

function toIncoming(batch: Batch, m: KafkaMessage, decoded: Decoded | undefined): IncomingMessage<unknown> {
  return {
    topic: batch.topic,
    partition: batch.partition,
    offset: m.offset,
    key: m.key ? m.key.toString('utf8') : '',
    value: decoded?.ok ? decoded.value : undefined,
    headers: headersToRecord(m.headers),
    timestamp: new Date(Number(m.timestamp)),
  };
}
