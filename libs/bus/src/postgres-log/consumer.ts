import type pg from 'pg';
import { firstSchemaError, type TopicSpec } from '@svc/contracts';
import { deadLetterMessage, deadLetterTopicFor } from '../dead-letters';
import { SchemaViolationError } from '../errors';
import type { BatchHandler, GatherOptions, IncomingMessage, Subscription } from '../port';
import { assignedTo, type TopicPartition } from './assignment';
import { closeQuietly, Signal } from './connection';
import { backoffMs, type BusLogger } from '../shared';
import { GroupSession } from './group';
import type { Listener, Wakeable } from './listener';
import { append, ensureTopic, partitionEnd, read, type StoredMessage } from './store';

export interface ConsumerSettings {
  groupId: string;
  memberId: string;
  topics: readonly TopicSpec[];
  handler: BatchHandler<unknown>;
  maxBatchSize: number;
  /** After a poll that found less than minBytes, the next waits maxWaitMs (notifications do not cut it short). */
  gather: GatherOptions | undefined;
  fromBeginning: boolean;
  pollFallbackMs: number;
  heartbeatMs: number;
  sessionTimeoutMs: number;
  /** Opens this member's own session. */
  openSession(onError: (err: Error) => void): Promise<pg.Client>;
  listener: Listener;
  logger: BusLogger;
}

interface Owned extends TopicPartition {
  /** Next offset to deliver. */
  next: number;
  /** Handler failures in a row, for the back-off. */
  failures: number;
  retryAt: number;
}

const keyOf = (tp: TopicPartition) => `${tp.topic}/${tp.partition}`;

/**
 * One member of a consumer group. A single loop owns everything: it joins,
 * rebalances between batches (so a partition is never released mid-batch),
 * reads all its partitions in one query, hands each partition's run to the
 * handler and commits after it returns. Any database error drops the
 * session, which releases every lock server-side, and the loop reconnects
 * with back-off and claims its partitions afresh from their committed offsets.
 */
export class PostgresLogConsumer implements Subscription, Wakeable {
  readonly topics: readonly string[];
  readonly groupId: string;
  private readonly specs: ReadonlyMap<string, TopicSpec>;
  private client: pg.Client | undefined;
  private session: GroupSession | undefined;
  private readonly owned = new Map<string, Owned>();
  private readonly signal = new Signal();
  private loop: Promise<void> | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private inTransaction = false;
  private paused = false;
  private stopping = false;
  private crashed = false;
  private rebalanceDue = true;
  /** Letting a batch gather: a notification of new messages does not end the wait. */
  private gathering = false;
  private nextRebalanceAt = 0;

  constructor(private readonly s: ConsumerSettings) {
    this.groupId = s.groupId;
    this.topics = s.topics.map((t) => t.name);
    this.specs = new Map(s.topics.map((t) => [t.name, t]));
  }

  /** Joins the group (throws if the database cannot be reached) and starts consuming. */
  async start(): Promise<void> {
    await this.s.listener.add(this);
    try {
      await this.connect();
    } catch (err) {
      this.s.listener.remove(this);
      throw err;
    }
    this.heartbeat = setInterval(() => this.beat(), this.s.heartbeatMs);
    this.heartbeat.unref();
    this.loop = this.run();
  }

  onMessages(): void {
    if (!this.gathering) this.signal.wake();
  }

  onGroupChange(): void {
    this.rebalanceDue = true;
    this.signal.wake();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.signal.wake();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.signal.wake();
    await this.loop;
  }

  /** As if the process died: no more batches, no commit, no goodbye; the server drops the session and its locks. */
  async crash(): Promise<void> {
    this.crashed = true;
    this.stopping = true;
    clearInterval(this.heartbeat);
    this.s.listener.remove(this);
    const client = this.client;
    this.client = undefined;
    this.session = undefined;
    await closeQuietly(client);
    this.signal.wake();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      try {
        if (!this.session) await this.connect();
        if (this.rebalanceDue || Date.now() >= this.nextRebalanceAt) await this.rebalance();
        const found = this.paused ? 'nothing' : await this.pollOnce();
        failures = 0;
        if (found === 'nothing') await this.signal.wait(this.idleMs());
        else if (found === 'little') await this.gather();
      } catch (err) {
        if (this.stopping) break;
        failures++;
        this.s.logger.warn({ err, groupId: this.groupId, failures }, 'bus: consumer lost its session; backing off');
        await this.disconnect();
        await this.signal.wait(backoffMs(failures));
      }
    }
    if (!this.crashed) await this.leave();
  }

  private async connect(): Promise<void> {
    const client = await this.s.openSession((err) =>
      this.s.logger.debug({ err, groupId: this.groupId }, 'bus: consumer session error'),
    );
    if (this.crashed) {
      await closeQuietly(client);
      return;
    }
    this.client = client;
    this.session = new GroupSession(client, this.s.groupId, this.s.memberId);
    this.owned.clear();
    await this.session.heartbeat(this.topics);
    await this.session.announce();
    this.rebalanceDue = true;
  }

  private async disconnect(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.session = undefined;
    // The locks die with the session; so does our claim to these partitions.
    this.owned.clear();
    await closeQuietly(client);
  }

  private beat(): void {
    // Keeps us a member during a long handler; skipped inside a transaction so it cannot poison it.
    if (!this.session || this.inTransaction) return;
    this.session.heartbeat(this.topics).catch((err: unknown) => this.s.logger.debug({ err }, 'bus: heartbeat failed'));
  }

  private async rebalance(): Promise<void> {
    const session = this.need();
    this.rebalanceDue = false;
    this.nextRebalanceAt = Date.now() + this.s.heartbeatMs;
    await session.heartbeat(this.topics);
    const members = await session.liveMembers(this.s.sessionTimeoutMs);
    const counts = await session.partitionCounts(this.topics);
    const wanted = new Map(assignedTo(this.s.memberId, members, counts).map((tp) => [keyOf(tp), tp]));

    let released = false;
    for (const [key, o] of this.owned) {
      if (wanted.has(key)) continue;
      await session.release(o);
      this.owned.delete(key);
      released = true;
    }
    for (const [key, tp] of wanted) {
      if (this.owned.has(key)) continue;
      const claim = await session.claim(tp);
      // Still held by its previous owner, which releases it after its batch; we retry next time.
      if (!claim.owned) continue;
      const next = claim.committed ?? (await this.startingOffset(session, tp));
      this.owned.set(key, { ...tp, next, failures: 0, retryAt: 0 });
    }
    // Whoever waits for what we let go can take it now.
    if (released) await session.announce();
  }

  /** Where a group with no committed offset starts: the beginning, or the end as of now (pinned by a commit). */
  private async startingOffset(session: GroupSession, tp: TopicPartition): Promise<number> {
    if (this.s.fromBeginning) return 0;
    const end = await partitionEnd(this.need('client'), tp.topic, tp.partition);
    await session.commit(tp, end);
    return end;
  }

  private idleMs(): number {
    const now = Date.now();
    let until = Math.min(now + this.s.pollFallbackMs, this.nextRebalanceAt);
    for (const o of this.owned.values()) if (o.retryAt > now) until = Math.min(until, o.retryAt);
    return until - now;
  }

  /**
   * Waits gather.maxWaitMs before the next poll, so that more messages are
   * read at once; a stop, pause, resume or rebalance ends the wait early.
   */
  private async gather(): Promise<void> {
    const wait = this.s.gather?.maxWaitMs;
    if (wait === undefined || this.stopping || this.rebalanceDue) return;
    this.gathering = true;
    try {
      // Notifications that came while the last batch was handled are what we wait to gather.
      this.signal.clear();
      await this.signal.wait(wait);
    } finally {
      this.gathering = false;
    }
  }

  /**
   * Reads every ready partition at once and delivers what it found: nothing,
   * little (under gather.minBytes and no partition's run full) or plenty.
   */
  private async pollOnce(): Promise<'nothing' | 'little' | 'plenty'> {
    const now = Date.now();
    const ready = [...this.owned.values()].filter((o) => o.retryAt <= now);
    const rows = await read(
      this.need('client'),
      ready.map((o) => ({ topic: o.topic, partition: o.partition, from: o.next })),
      this.s.maxBatchSize,
    );
    if (rows.length === 0) return 'nothing';
    const runs = new Map<string, StoredMessage[]>();
    let bytes = 0;
    for (const r of rows) {
      const run = runs.get(keyOf(r));
      if (run) run.push(r);
      else runs.set(keyOf(r), [r]);
      bytes += r.bytes;
    }
    for (const [key, run] of runs) {
      if (this.stopping || this.paused || this.rebalanceDue) break;
      const o = this.owned.get(key);
      if (o) await this.deliver(o, run);
    }
    const full = [...runs.values()].some((run) => run.length >= this.s.maxBatchSize);
    return this.s.gather && bytes < this.s.gather.minBytes && !full ? 'little' : 'plenty';
  }

  /**
   * Hands the run to the handler up to the first message that does not match
   * its topic's schema; that one is dead-lettered (with its offset commit, in
   * one transaction) and the rest follows.
   */
  private async deliver(o: Owned, run: StoredMessage[]): Promise<void> {
    const spec = this.specs.get(o.topic);
    if (!spec) return;
    let rest = run;
    while (rest.length > 0 && !this.crashed) {
      const problems = rest.map((m) => firstSchemaError(spec.schema, m.value));
      const bad = problems.findIndex((p) => p !== undefined);
      if (bad === 0) {
        const [first] = rest;
        if (first) await this.deadLetter(o, spec, first, problems[0] ?? 'is invalid');
        rest = rest.slice(1);
        continue;
      }
      const good = bad < 0 ? rest : rest.slice(0, bad);
      const last = good[good.length - 1];
      if (!last) return;
      try {
        await this.s.handler({ topic: o.topic, partition: o.partition, messages: good.map(toIncoming) });
      } catch (err) {
        o.failures++;
        o.retryAt = Date.now() + backoffMs(o.failures);
        this.s.logger.warn({ err, groupId: this.groupId, topic: o.topic, partition: o.partition }, 'bus: handler failed; will redeliver');
        return;
      }
      // A process that died while the handler ran commits nothing.
      if (this.crashed) return;
      await this.need().commit(o, last.offset + 1);
      o.next = last.offset + 1;
      o.failures = 0;
      rest = rest.slice(good.length);
      if (this.stopping) return;
    }
  }

  private async deadLetter(o: Owned, spec: TopicSpec, m: StoredMessage, problem: string): Promise<void> {
    const client = this.need('client');
    const reason = new SchemaViolationError(o.topic, problem).message;
    const dlq = deadLetterTopicFor(spec);
    this.inTransaction = true;
    try {
      await client.query('begin');
      const partitions = await ensureTopic(client, dlq.name, dlq.partitions);
      await append(client, dlq.name, partitions, [deadLetterMessage(m, reason, m)]);
      await this.need().commit(o, m.offset + 1);
      await client.query('commit');
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw err;
    } finally {
      this.inTransaction = false;
    }
    o.next = m.offset + 1;
    this.s.logger.warn({ topic: o.topic, partition: o.partition, offset: m.offset, reason }, 'bus: dead-lettered a message');
  }

  private async leave(): Promise<void> {
    clearInterval(this.heartbeat);
    this.s.listener.remove(this);
    try {
      await this.session?.leave();
    } catch (err) {
      // The session is gone anyway, and with it our locks; our member row dies with its pid.
      this.s.logger.debug({ err }, 'bus: leaving the group failed');
    }
    await this.disconnect();
  }

  private need(what: 'client'): pg.Client;
  private need(what?: 'session'): GroupSession;
  private need(what: 'client' | 'session' = 'session'): pg.Client | GroupSession {
    const it = what === 'client' ? this.client : this.session;
    if (!it) throw new Error('bus: consumer session is gone');
    return it;
  }
}

function toIncoming(m: StoredMessage): IncomingMessage<unknown> {
  return {
    topic: m.topic,
    partition: m.partition,
    offset: String(m.offset),
    key: m.key,
    value: m.value,
    headers: m.headers,
    timestamp: m.createdAt,
  };
}
