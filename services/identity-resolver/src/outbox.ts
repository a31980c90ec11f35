import { DLQ_REASON_HEADER, assertValid, deadLetterTopicFor, type Bus, type OutgoingMessage } from '@svc/bus';
import { Topics, firstSchemaError, type ProfileChange, type ResolvedEvent, type TopicSpec } from '@svc/contracts';
import type { Db, Logger } from '@svc/runtime';
import { namedLockKey } from './ids';
import type { ResolverMetrics } from './metrics';

/**
 * The transactional outbox. Whatever the resolver (or an admin merge) wants
 * to say on a topic is written to identity.outbox in the same transaction as
 * the effects it describes, so a crash between commit and produce loses
 * nothing; the relay produces the rows in id order and deletes them once the
 * log has them. Delivery is at-least-once (a crash after produce and before
 * the delete sends a row again).
 *
 * Per-key order: every row for a profile is written by a transaction that
 * holds that profile's row lock, so rows of one key get ids (and commit) in
 * the order the changes happened; one relay at a time (an advisory lock)
 * produces them in id order.
 */

export type OutboxTopic = 'eventsResolved' | 'profilesChanges' | 'conversionsCandidates';

export interface OutboxMessage {
  topic: OutboxTopic;
  /** Partition key; for events.resolved the relay uses the event's profile at relay time. */
  key: string | null;
  payload: unknown;
  /** events.resolved only: the stored event, read by the relay (the outbox does not copy it). */
  eventId: string | null;
}

export type OutputTopics = { [K in OutboxTopic]: TopicSpec };

/** A profiles.changes message. */
export function profileChange(orgId: string, profileId: string, change: ProfileChange['change'], mergedInto?: string): OutboxMessage {
  const payload: ProfileChange = {
    v: 1,
    orgId,
    profileId,
    change,
    ...(mergedInto === undefined ? {} : { mergedInto }),
    at: new Date().toISOString(),
  };
  return { topic: 'profilesChanges', key: profileId, payload, eventId: null };
}

export const resolvedEventRef = (eventId: string): OutboxMessage => ({ topic: 'eventsResolved', key: null, payload: null, eventId });

/** Stores messages in the caller's transaction, in order. Payloads are checked against their schemas first. */
export async function writeOutbox(trx: Db, messages: readonly OutboxMessage[]): Promise<void> {
  if (messages.length === 0) return;
  for (const m of messages) if (m.payload !== null) assertValid(Topics[m.topic], m.payload);
  await trx.raw(
    `insert into identity.outbox (topic, message_key, payload, event_id)
     select r.topic, r.key, r.payload, r.event_id
     from rows from (jsonb_to_recordset(?::jsonb) as (topic text, key text, payload jsonb, event_id uuid))
       with ordinality as r (topic, key, payload, event_id, n)
     order by r.n`,
    [JSON.stringify(messages.map((m) => ({ topic: m.topic, key: m.key, payload: m.payload, event_id: m.eventId })))],
  );
}

interface OutboxRow {
  id: number;
  topic: OutboxTopic;
  message_key: string | null;
  payload: unknown;
  event_id: string | null;
}

interface EventRow {
  id: string;
  org_id: string;
  message_id: string;
  profile_id: string;
  event_name: string;
  event_timestamp: Date;
  received_at: Date;
  properties: Record<string, unknown>;
  context: Record<string, unknown>;
  resolution_method: string;
}

export interface OutboxRelayOptions {
  db: Db;
  bus: Bus;
  topics: OutputTopics;
  logger: Logger;
  metrics?: ResolverMetrics;
  /** Rows per cycle (default 500). */
  batchSize?: number;
  /** Polling interval when not woken (default 500 ms): rows written by other processes are found this way. */
  intervalMs?: number;
}

const RELAY_LOCK = namedLockKey('identity.outbox relay');

/** Produces outbox rows through the bus, one relay at a time across every process. */
export class OutboxRelay {
  private readonly batchSize: number;
  private readonly intervalMs: number;
  private stopped = true;
  private loop: Promise<void> | undefined;
  private pending = false;
  private release: (() => void) | undefined;

  constructor(private readonly o: OutboxRelayOptions) {
    this.batchSize = o.batchSize ?? 500;
    this.intervalMs = o.intervalMs ?? 500;
  }

  start(): void {
    if (this.loop) return;
    this.stopped = false;
    this.loop = this.run();
  }

  /** Something was written: look now rather than at the next poll. */
  wake(): void {
    this.pending = true;
    this.release?.();
  }

  /** Stops polling after the cycle in hand, then makes one last attempt to drain. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.loop;
    this.loop = undefined;
    try {
      while ((await this.relayOnce()) >= this.batchSize);
    } catch (err) {
      this.o.logger.warn({ err }, 'outbox relay: final drain failed; the rows stay for the next relay');
    }
  }

  /**
   * One cycle: takes the relay lock (or returns -1 when another relay has
   * it), produces up to batchSize rows in id order and deletes those the log
   * stored. Returns how many rows it removed.
   */
  async relayOnce(): Promise<number> {
    return this.o.db.transaction(async (trx) => {
      const { rows: lock } = (await trx.raw('select pg_try_advisory_xact_lock(?) as ok', [RELAY_LOCK.toString()])) as {
        rows: Array<{ ok: boolean }>;
      };
      if (!lock[0]?.ok) return -1;
      const { rows } = (await trx.raw(
        'select id, topic, message_key, payload, event_id from identity.outbox order by id limit ?',
        [this.batchSize],
      )) as { rows: OutboxRow[] };
      if (rows.length === 0) return 0;
      const events = await this.loadEvents(trx, rows);
      const done: number[] = [];
      const byTopic = new Map<OutboxTopic, Array<{ row: OutboxRow; message: OutgoingMessage }>>();
      const dead: Array<{ row: OutboxRow; message: OutgoingMessage; reason: string }> = [];
      for (const row of rows) {
        const message = this.messageOf(row, events);
        if (!message) {
          this.o.logger.warn({ outboxId: row.id, eventId: row.event_id }, 'outbox relay: the event is gone; dropping its row');
          done.push(row.id);
          continue;
        }
        const problem = firstSchemaError(Topics[row.topic].schema, message.value);
        if (problem !== undefined) dead.push({ row, message, reason: `${row.topic} payload ${problem}` });
        else byTopic.set(row.topic, [...(byTopic.get(row.topic) ?? []), { row, message }]);
      }
      for (const { row, message, reason } of dead) {
        const [result] = await this.o.bus.produce(deadLetterTopicFor(this.o.topics[row.topic]), [
          { ...message, headers: { [DLQ_REASON_HEADER]: reason } },
        ]);
        if (result?.ok) done.push(row.id);
        this.o.logger.error({ outboxId: row.id, reason }, 'outbox relay: a message does not match its schema; dead-lettered');
      }
      let failed: Error | undefined;
      for (const [topic, items] of byTopic) {
        const results = await this.o.bus.produce(
          this.o.topics[topic],
          items.map((i) => i.message),
        );
        // A failed message holds back the rest of its key, so a key's order survives a partial failure.
        const blocked = new Set<string>();
        items.forEach((item, i) => {
          const result = results[i];
          if (result?.ok && !blocked.has(item.message.key)) done.push(item.row.id);
          else {
            blocked.add(item.message.key);
            if (result && !result.ok) failed ??= result.error;
          }
        });
      }
      if (done.length > 0) await trx.raw('delete from identity.outbox where id = any(?::bigint[])', [done]);
      this.o.metrics?.outboxRelayed.inc(done.length);
      if (failed && done.length === 0) throw failed;
      return done.length;
    });
  }

  private async loadEvents(trx: Db, rows: readonly OutboxRow[]): Promise<Map<string, EventRow>> {
    const ids = rows.flatMap((r) => (r.event_id ? [r.event_id] : []));
    if (ids.length === 0) return new Map();
    const { rows: events } = (await trx.raw(
      `select id, org_id, message_id, profile_id, event_name, event_timestamp, received_at, properties, context, resolution_method
       from identity.events where id = any(?::uuid[])`,
      [ids],
    )) as { rows: EventRow[] };
    return new Map(events.map((e) => [e.id, e]));
  }

  private messageOf(row: OutboxRow, events: ReadonlyMap<string, EventRow>): OutgoingMessage | undefined {
    if (row.topic !== 'eventsResolved') return { key: row.message_key ?? '', value: row.payload };
    const e = row.event_id ? events.get(row.event_id) : undefined;
    if (!e) return undefined;
    const value: ResolvedEvent = {
      v: 1,
      orgId: e.org_id,
      eventId: e.id,
      messageId: e.message_id,
      profileId: e.profile_id,
      eventName: e.event_name,
      eventTimestamp: e.event_timestamp.toISOString(),
      properties: e.properties,
      context: e.context,
      resolutionMethod: e.resolution_method,
      receivedAt: e.received_at.toISOString(),
    };
    return { key: e.profile_id, value };
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      let relayed: number;
      try {
        relayed = await this.relayOnce();
        failures = 0;
      } catch (err) {
        failures++;
        this.o.logger.warn({ err, failures }, 'outbox relay: cycle failed; backing off');
        await this.wait(Math.min(5_000, 100 * 2 ** Math.min(failures, 6)));
        continue;
      }
      if (relayed < this.batchSize) await this.wait(this.intervalMs);
    }
  }

  private async wait(ms: number): Promise<void> {
    if (!this.pending && !this.stopped) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => this.release?.(), ms);
        this.release = () => {
          clearTimeout(timer);
          this.release = undefined;
          resolve();
        };
      });
    }
    this.pending = false;
  }
}
