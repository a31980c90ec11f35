import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import type { TopicSpec } from '@svc/contracts';
import type { Db } from '@svc/runtime';
import { BusUnavailableError } from '../errors';
import type { BatchHandler, Bus, OutgoingMessage, ProduceResult, SubscribeOptions, Subscription } from '../port';
import { assertAllValid } from '../validate';
import { isUnavailable, openSession, sessionConfig } from './connection';
import { checkedSubscribeOptions, silentLogger, subscriptionOf, withDeadline, type BusLogger } from '../shared';
import { PostgresLogConsumer } from './consumer';
import { Listener } from './listener';
import { AppendLane } from './append-lane';
import { append, deleteOlderThan, ensureTopic, type Queryable } from './store';
import type { Registry } from 'prom-client';
import { observePostgresLog } from './metrics';

export interface PostgresLogBusOptions {
  /** The database holding the `bus` schema (see busMigrations). The caller owns and destroys it. */
  db: Db;
  /** Connection URL for the bus's own sessions; defaults to the knex instance's connection settings. */
  url?: string;
  logger?: BusLogger;
  /** Messages older than this are deleted by the retention sweep (default 168 = 7 days, like Kafka). */
  retentionHours?: number;
  /** How often the retention sweep runs (default 5 minutes). */
  retentionSweepMs?: number;
  /** Consumers look for messages this often even without a notification (default 1 s). */
  pollFallbackMs?: number;
  /** Consumer-group heartbeat and rebalance check interval (default 1 s). */
  heartbeatMs?: number;
  /** A member that has not heartbeated for this long is dead even if its session lingers (default 5 s). */
  sessionTimeoutMs?: number;
  /** produce() and ensureTopics() give up with BusUnavailableError after this long (default 5 s). */
  operationTimeoutMs?: number;
  /** Names this process in group membership and pg_stat_activity (default host-pid-random). */
  instanceId?: string;
  /** Where consumer lag and dead-letter counts are exported (see metrics.ts). */
  metricsRegistry?: Registry;
}

export interface PostgresLogBus extends Bus {
  /** Runs the retention sweep now; returns how many messages it deleted. */
  sweepRetention(): Promise<number>;
  /**
   * For tests: dies like a killed process. Every consumer stops at once
   * without committing or leaving its group; its sessions close, so the
   * server releases their locks.
   */
  simulateCrash(): Promise<void>;
}

/** The Postgres-backed log: the embedded tier's bus, and a product tier of its own for small deployments. */
export function createPostgresLogBus(options: PostgresLogBusOptions): PostgresLogBus {
  return new PgLogBus(options);
}

class PgLogBus implements PostgresLogBus {
  private readonly db: Db;
  private readonly logger: BusLogger;
  private readonly instanceId: string;
  private readonly config: pg.ClientConfig;
  private readonly listener: Listener;
  private readonly consumers = new Set<PostgresLogConsumer>();
  /** Stored partition count per topic we have ensured. */
  private readonly topicCache = new Map<string, Promise<number>>();
  /** Per topic: produce() calls gathered into shared appends (group commit). */
  private readonly lanes = new Map<string, AppendLane>();
  private readonly sweepTimer: NodeJS.Timeout;
  private members = 0;
  private closed = false;

  constructor(private readonly o: PostgresLogBusOptions) {
    if (o.retentionHours !== undefined && !(o.retentionHours > 0)) throw new RangeError('retentionHours must be > 0');
    this.db = o.db;
    this.logger = o.logger ?? silentLogger;
    this.instanceId = o.instanceId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    this.config = sessionConfig(o.db, o.url);
    this.listener = new Listener((onError) => this.open(`${this.instanceId} listen`, onError), this.logger);
    this.sweepTimer = setInterval(() => {
      this.sweepRetention().catch((err: unknown) => this.logger.warn({ err }, 'bus: retention sweep failed'));
    }, o.retentionSweepMs ?? 5 * 60_000);
    this.sweepTimer.unref();
    if (o.metricsRegistry) observePostgresLog(o.metricsRegistry, o.db);
  }

  async ensureTopics(topics: readonly TopicSpec[]): Promise<void> {
    this.assertOpen();
    await this.guard('ensure topics', Promise.all(topics.map((t) => this.partitionsOf(t))));
  }

  async produce<T>(topic: TopicSpec, messages: readonly OutgoingMessage<T>[]): Promise<ProduceResult[]> {
    this.assertOpen();
    // Every message is checked before any is stored: a violation refuses the whole call.
    assertAllValid(
      topic,
      messages.map((m) => m.value),
    );
    if (messages.length === 0) return [];
    const call = this.laneOf(topic).submit(messages);
    try {
      await this.guard(`produce to ${topic.name}`, call.done);
    } catch (err) {
      // Past its deadline, a call still queued is not appended later.
      call.abandon();
      if (err instanceof BusUnavailableError) throw err;
      // One transaction holds the whole call: it stored all or nothing.
      const error = err instanceof Error ? err : new Error(String(err), { cause: err });
      return messages.map(() => ({ ok: false, error }));
    }
    return messages.map(() => ({ ok: true }));
  }

  async subscribe<T>(options: SubscribeOptions<T>): Promise<Subscription> {
    this.assertOpen();
    const { maxBatchSize, gather } = checkedSubscribeOptions(options);
    await this.ensureTopics(options.topics);
    const memberId = `${this.instanceId}/${++this.members}`;
    const consumer = new PostgresLogConsumer({
      groupId: options.groupId,
      memberId,
      topics: options.topics,
      // Safe: every value is checked against its topic's schema before the handler sees it.
      handler: options.handler as BatchHandler<unknown>,
      maxBatchSize,
      gather,
      fromBeginning: options.fromBeginning ?? true,
      pollFallbackMs: this.o.pollFallbackMs ?? 1_000,
      heartbeatMs: this.o.heartbeatMs ?? 1_000,
      sessionTimeoutMs: this.o.sessionTimeoutMs ?? 5_000,
      openSession: (onError) => this.open(`${memberId} ${options.groupId}`, onError),
      listener: this.listener,
      logger: this.logger,
    });
    // No deadline here: a start abandoned half-way would leave a consumer running unseen.
    // Its connection attempts are bounded by the session connect timeout instead.
    await this.guard(`subscribe ${options.groupId}`, consumer.start(), false);
    this.consumers.add(consumer);
    return subscriptionOf(consumer, this.consumers);
  }

  async endOffsets(topic: TopicSpec): Promise<string[]> {
    this.assertOpen();
    const partitions = await this.guard('end offsets', this.partitionsOf(topic));
    const rows = (await this.guard(
      `end offsets of ${topic.name}`,
      this.db('bus.partitions').where({ topic: topic.name }).select('partition', 'next_offset'),
    )) as Array<{ partition: number; next_offset: string }>;
    const ends = Array.from({ length: partitions }, () => '0');
    for (const r of rows) ends[r.partition] = String(r.next_offset);
    return ends;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.shutDown((c) => c.stop());
  }

  async simulateCrash(): Promise<void> {
    await this.shutDown((c) => c.crash());
  }

  /** Stops the sweeps, each consumer by `end` (a clean stop, or a crash), and the listener. */
  private async shutDown(end: (consumer: PostgresLogConsumer) => Promise<void>): Promise<void> {
    this.closed = true;
    clearInterval(this.sweepTimer);
    await Promise.all([...this.consumers].map(end));
    this.consumers.clear();
    await this.listener.close();
  }

  async sweepRetention(): Promise<number> {
    const hours = this.o.retentionHours ?? 168;
    return this.withConnection((q) => deleteOlderThan(q, hours));
  }

  private laneOf(topic: TopicSpec): AppendLane {
    let lane = this.lanes.get(topic.name);
    if (!lane) {
      lane = new AppendLane(async (messages) => {
        const partitions = await this.partitionsOf(topic);
        await this.singleStatement((q) => append(q, topic.name, partitions, messages));
      }, isUnavailable);
      this.lanes.set(topic.name, lane);
    }
    return lane;
  }

  /** The topic's stored partition count, creating or growing the topic on first use. */
  private partitionsOf(topic: TopicSpec): Promise<number> {
    const cached = this.topicCache.get(topic.name);
    const ensure = async (): Promise<number> => {
      const known = cached ? await cached.catch(() => 0) : 0;
      if (known >= topic.partitions) return known;
      return this.withConnection((q) => ensureTopic(q, topic.name, topic.partitions, topic.retainForever));
    };
    const next = ensure();
    this.topicCache.set(topic.name, next);
    next.catch(() => {
      if (this.topicCache.get(topic.name) === next) this.topicCache.delete(topic.name);
    });
    return next;
  }

  /**
   * Runs one statement in its own transaction, which the server commits as
   * the statement ends: the partition heads an append locks are released
   * without waiting for a round trip to this process (whose event loop may be
   * busy), so concurrent producers queue behind the statement and its commit
   * only. The statement timeout (a lock or statement stuck behind a sick
   * server must not outlive the caller's patience) is set on the session for
   * the call and reset before the connection goes back to the pool; a
   * connection that cannot be reset is discarded.
   */
  private async singleStatement<R>(fn: (q: Queryable) => Promise<R>): Promise<R> {
    const conn = (await this.db.client.acquireConnection()) as pg.Client & { __knex__disposed?: unknown };
    try {
      await conn.query(`set statement_timeout = ${Math.ceil(this.timeoutMs())}`);
      try {
        return await fn(conn);
      } finally {
        // knex's pool destroys a connection marked disposed instead of handing it out again.
        await conn.query('reset statement_timeout').catch((err: unknown) => (conn.__knex__disposed ??= err ?? 'statement_timeout not reset'));
      }
    } finally {
      await this.db.client.releaseConnection(conn);
    }
  }

  /** A pooled knex connection, used as the raw pg.Client it is (knex's pg dialect pools pg.Client). */
  private async withConnection<R>(fn: (q: Queryable) => Promise<R>): Promise<R> {
    const conn = (await this.db.client.acquireConnection()) as pg.Client;
    try {
      return await fn(conn);
    } finally {
      await this.db.client.releaseConnection(conn);
    }
  }

  /**
   * Bounds an operation by the timeout (knex would otherwise wait 10 s for a
   * connection) and turns "cannot reach the database" into BusUnavailableError.
   */
  private async guard<R>(what: string, work: Promise<R>, deadline = true): Promise<R> {
    const unavailable = (cause?: unknown) =>
      new BusUnavailableError(`bus: cannot ${what}: the database is unavailable`, { cause });
    try {
      if (!deadline) return await work;
      return await withDeadline(work, this.timeoutMs(), () => unavailable(new Error('timed out')));
    } catch (err) {
      if (err instanceof BusUnavailableError) throw err;
      if (isUnavailable(err)) throw unavailable(err);
      throw err;
    }
  }

  private timeoutMs(): number {
    return this.o.operationTimeoutMs ?? 5_000;
  }

  private open(name: string, onError: (err: Error) => void): Promise<pg.Client> {
    return openSession(this.config, `svc-bus ${name}`, onError);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('bus: closed');
  }
}
