import { SchemaViolationError, deadLetterMessage, deadLetterTopicFor, type Bus, type OutgoingMessage, type ProduceResult } from '@svc/bus';
import { Topics, firstSchemaError, type ResolvedEvent } from '@svc/contracts';
import { TRACEPARENT_HEADER, type Db, type Logger } from '@svc/runtime';
import { claimOldestOutboxRows, deleteOutboxRows, keepUnsentEvents, readResolvedEvents, type OutboxRow, type OutboxTopic, type OutputTopics } from '@svc/identity';
import { type ResolverMetrics } from './metrics';

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

/** The events an events.resolved row names, in order. */
const eventIdsOf = (row: OutboxRow): readonly string[] => row.event_ids ?? (row.event_id ? [row.event_id] : []);

/** How many messages a row carries: one, or one per event it names. */
const messagesIn = (row: OutboxRow): number => (row.topic === 'eventsResolved' ? eventIdsOf(row).length : 1);

/** One message of a row; eventId names which of an events.resolved row's events it is. */
interface Item {
  row: OutboxRow;
  eventId: string | null;
  message: OutgoingMessage;
}

/** The messages of a row, and the events it names that are gone (erased since). */
function itemsOf(row: OutboxRow, events: ReadonlyMap<string, ResolvedEvent>): { items: Item[]; gone: string[] } {
  const headers = row.traceparent === null ? undefined : { [TRACEPARENT_HEADER]: row.traceparent };
  if (row.topic !== 'eventsResolved') return { items: [{ row, eventId: null, message: { key: row.message_key ?? '', value: row.payload, ...(headers ? { headers } : {}) } }], gone: [] };
  const items: Item[] = [];
  const gone: string[] = [];
  for (const eventId of eventIdsOf(row)) {
    const event = events.get(eventId);
    if (event) items.push({ row, eventId, message: { key: event.profileId, value: event, ...(headers ? { headers } : {}) } });
    else gone.push(eventId);
  }
  return { items, gone };
}

/**
 * How many committed events the relay keeps in memory until it has relayed
 * them (seconds of load); beyond it the oldest are forgotten, and read back
 * from identity.events when their rows come up.
 */
const REMEMBERED_EVENTS = 10_000;

/** The bus refused a produce call because a payload does not match the topic's schema (duck-typed: errors may cross realms in tests). */
const isSchemaViolation = (err: unknown): boolean =>
  err instanceof SchemaViolationError || (typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'SchemaViolationError');

export interface OutboxRelayOptions {
  db: Db;
  bus: Pick<Bus, 'produce'>;
  topics: OutputTopics;
  logger: Logger;
  metrics?: ResolverMetrics;
  /**
   * Messages per cycle, about (default 2,000; a cycle takes whole rows). A
   * cycle costs a transaction, a produce round trip per topic and a delete
   * whatever its size, and one resolver transaction writes a message per
   * event and more (up to RESOLVER_BATCH_SIZE, from several members at
   * once): cycles much smaller than that fall behind when the machine is busy.
   */
  batchSize?: number;
  /** Polling interval when not woken (default 500 ms): rows written by other processes are found this way. */
  intervalMs?: number;
}

/** The oldest rows up to about `messages` messages (at least one row, however many it carries). */
function withinBatch(rows: readonly OutboxRow[], messages: number): OutboxRow[] {
  let n = 0;
  let end = 0;
  while (end < rows.length && (end === 0 || n + messagesIn(rows[end]!) <= messages)) n += messagesIn(rows[end++]!);
  return rows.slice(0, end);
}

/** Produces outbox rows through the bus, one relay at a time across every process. */
export class OutboxRelay {
  private readonly batchSize: number;
  /**
   * The events.resolved messages of what this process committed, by event
   * id, until relayed: the relay need not read each event (about 1 KB of
   * JSON) back from the database it was just written to. An event another
   * process committed, or one forgotten, is read back as before.
   */
  private readonly committed = new Map<string, ResolvedEvent>();
  private readonly intervalMs: number;
  private stopped = true;
  private loop: Promise<void> | undefined;
  private pending = false;
  private release: (() => void) | undefined;

  constructor(private readonly o: OutboxRelayOptions) {
    this.batchSize = o.batchSize ?? 2_000;
    this.intervalMs = o.intervalMs ?? 500;
  }

  start(): void {
    if (this.loop) return;
    this.stopped = false;
    this.loop = this.run();
  }

  /** Events this process has just committed (their outbox rows name them): relayed from memory. */
  remember(events: readonly ResolvedEvent[]): void {
    for (const e of events) this.committed.set(e.eventId, e);
    for (const id of this.committed.keys()) {
      if (this.committed.size <= REMEMBERED_EVENTS) break;
      this.committed.delete(id);
    }
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
      while ((await this.relayOnce()).moreWaiting);
    } catch (err) {
      this.o.logger.warn({ err }, 'outbox relay: final drain failed; the rows stay for the next relay');
    }
  }

  /**
   * One cycle: takes the relay lock (or returns -1 when another relay has
   * it), produces the oldest rows' messages (about batchSize of them) in id
   * order, and deletes the rows the log stored whole; an events.resolved row
   * the log stored in part keeps only the events it did not. Says whether
   * rows beyond the cycle's wait (false when another relay has the lock).
   */
  async relayOnce(): Promise<{ moreWaiting: boolean }> {
    return this.o.db.transaction(async (trx) => {
      const oldest = await claimOldestOutboxRows(trx, this.batchSize);
      if (oldest === null) return { moreWaiting: false };
      const rows = withinBatch(oldest, this.batchSize);
      if (rows.length === 0) return { moreWaiting: false };
      const moreWaiting = rows.length < oldest.length || oldest.length === this.batchSize;
      const events = await this.resolvedEvents(trx, rows);
      const itemsOfRow = new Map<OutboxRow, Item[]>();
      const byTopic = new Map<OutboxTopic, Item[]>();
      for (const row of rows) {
        const { items, gone } = itemsOf(row, events);
        if (gone.length > 0) this.o.logger.warn({ outboxId: row.id, eventIds: gone }, 'outbox relay: events are gone; dropping their messages');
        itemsOfRow.set(row, items);
        const topicItems = byTopic.get(row.topic);
        if (topicItems) topicItems.push(...items);
        else byTopic.set(row.topic, [...items]);
      }
      const done = new Set<Item>();
      let failed: Error | undefined;
      for (const [topic, all] of byTopic) {
        let items = all;
        let results: ProduceResult[];
        try {
          // The bus checks every payload against the topic's schema before it stores any of them.
          results = await this.o.bus.produce(
            this.o.topics[topic],
            items.map((i) => i.message),
          );
        } catch (err) {
          if (!isSchemaViolation(err)) throw err;
          // Only then one by one: a message that does not match goes to the topic's DLQ rather than
          // blocking the relay, and the rest are produced.
          items = [];
          for (const item of all) {
            const problem = firstSchemaError(Topics[topic].schema, item.message.value);
            if (problem === undefined) items.push(item);
            else if (await this.deadLetter(topic, item.row, item.message, `${topic} payload ${problem}`)) done.add(item);
          }
          results = items.length > 0 ? await this.o.bus.produce(this.o.topics[topic], items.map((i) => i.message)) : [];
        }
        // A failed message holds back the rest of its key, so a key's order survives a partial failure.
        const blocked = new Set<string>();
        items.forEach((item, i) => {
          const result = results[i];
          if (result?.ok && !blocked.has(item.message.key)) done.add(item);
          else {
            blocked.add(item.message.key);
            if (result && !result.ok) failed ??= result.error;
          }
        });
      }
      const finished: number[] = [];
      for (const [row, items] of itemsOfRow) {
        const left = items.filter((i) => !done.has(i));
        if (left.length === 0) finished.push(row.id);
        else if (left.length < messagesIn(row)) {
          // Some sent or gone (rare: a partial failure): the row keeps what is still to send, so nothing sent is sent again.
          await keepUnsentEvents(
            trx,
            row.id,
            left.flatMap((i) => (i.eventId === null ? [] : [i.eventId])),
          );
        }
      }
      await deleteOutboxRows(trx, finished);
      for (const row of rows) for (const eventId of eventIdsOf(row)) this.committed.delete(eventId);
      this.o.metrics?.outboxRelayed.inc(done.size);
      if (failed && done.size === 0) throw failed;
      return { moreWaiting };
    });
  }

  /**
   * The events.resolved message of every such row: from memory when this
   * process committed the event, else read back (absent when the event is gone).
   */
  private async resolvedEvents(trx: Db, rows: readonly OutboxRow[]): Promise<ReadonlyMap<string, ResolvedEvent>> {
    const found = new Map<string, ResolvedEvent>();
    const unknown: string[] = [];
    for (const row of rows) {
      if (row.topic !== 'eventsResolved') continue;
      for (const eventId of eventIdsOf(row)) {
        const event = this.committed.get(eventId);
        if (event) found.set(eventId, event);
        else unknown.push(eventId);
      }
    }
    if (unknown.length > 0) for (const e of await readResolvedEvents(trx, unknown)) found.set(e.eventId, e);
    return found;
  }

  /** Parks a message its topic's schema refuses; true once the DLQ has it. */
  private async deadLetter(topic: OutboxTopic, row: OutboxRow, message: OutgoingMessage, reason: string): Promise<boolean> {
    const [result] = await this.o.bus.produce(deadLetterTopicFor(this.o.topics[topic]), [deadLetterMessage(message, reason)]);
    this.o.logger.error({ outboxId: row.id, reason }, 'outbox relay: a message does not match its schema; dead-lettered');
    return result?.ok === true;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      let moreWaiting: boolean;
      try {
        ({ moreWaiting } = await this.relayOnce());
        failures = 0;
      } catch (err) {
        failures++;
        this.o.logger.warn({ err, failures }, 'outbox relay: cycle failed; backing off');
        await this.wait(Math.min(5_000, 100 * 2 ** Math.min(failures, 6)));
        continue;
      }
      if (!moreWaiting) await this.wait(this.intervalMs);
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
