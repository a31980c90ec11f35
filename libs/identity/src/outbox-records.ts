import { SchemaViolationError } from '@svc/bus';
import { Topics, firstSchemaError, type ProfileChange, type ResolvedEvent, type TopicSpec } from '@svc/contracts';
import { preparedRaw, type Db } from '@svc/runtime';
import { namedLockKey } from './ids';

/**
 * The transactional outbox (identity.outbox): whatever the resolver or an
 * admin merge wants to say on a topic is written here in the same
 * transaction as the effects it describes. The resolver's relay
 * (services/identity-resolver/src/outbox.ts) produces the rows through the
 * statements at the end of this file.
 */

export type OutboxTopic = 'eventsResolved' | 'profilesChanges' | 'conversionsCandidates' | 'profilesErased';

export interface OutboxMessage {
  topic: OutboxTopic;
  /** Partition key; for events.resolved the relay uses the event's profile at relay time. */
  key: string | null;
  payload: unknown;
  /**
   * events.resolved only: the stored events, in order, each read by the relay
   * (the outbox does not copy them). One row names every event of a
   * transaction: a row per event cost the database an insert, an index
   * entry, a read and a delete per event.
   */
  eventIds: readonly string[] | null;
  /** With tracing on: the W3C traceparent of the span that wrote it, sent in the message's header. */
  traceparent?: string;
}

export type OutputTopics = { [K in OutboxTopic]: TopicSpec };

/** A profiles.changes message; `other`: for `merged` the survivor it went into, for `unmerged` the profile it was split from. */
export function profileChange(orgId: string, profileId: string, change: ProfileChange['change'], other?: string): OutboxMessage {
  const payload: ProfileChange = {
    v: 1,
    orgId,
    profileId,
    change,
    ...(other === undefined ? {} : change === 'unmerged' ? { unmergedFrom: other } : { mergedInto: other }),
    at: new Date().toISOString(),
  };
  return { topic: 'profilesChanges', key: profileId, payload, eventIds: null };
}

/** The events.resolved messages of these stored events, as one outbox row. */
export const resolvedEventsRef = (eventIds: readonly string[]): OutboxMessage => ({ topic: 'eventsResolved', key: null, payload: null, eventIds });

/** Stores messages in the caller's transaction, in order. Payloads are checked against their schemas first. */
export async function writeOutbox(trx: Db, messages: readonly OutboxMessage[]): Promise<void> {
  if (messages.length === 0) return;
  await trx.raw(OUTBOX_INSERT, [outboxRecords(messages)]);
}

/**
 * The rows of `messages` for OUTBOX_INSERT, as one JSON array, after checking
 * every payload against its topic's schema (a violation throws).
 */
export function outboxRecords(messages: readonly OutboxMessage[]): string {
  for (const m of messages) {
    const problem = m.payload === null ? undefined : firstSchemaError(Topics[m.topic].schema, m.payload);
    if (problem !== undefined) throw new SchemaViolationError(Topics[m.topic].name, problem);
  }
  return JSON.stringify(messages.map((m) => ({ topic: m.topic, key: m.key, payload: m.payload, event_ids: m.eventIds, traceparent: m.traceparent ?? null })));
}

/**
 * Inserts outboxRecords (its one `?`) in their order, so ids follow it. A
 * statement of its own, or a data-modifying CTE of a larger one.
 */
export const OUTBOX_INSERT = `insert into identity.outbox (topic, message_key, payload, event_ids, traceparent)
     select r.topic, r.key, r.payload, r.event_ids, r.traceparent
     from rows from (jsonb_to_recordset(?::jsonb) as (topic text, key text, payload jsonb, event_ids uuid[], traceparent text))
       with ordinality as r (topic, key, payload, event_ids, traceparent, n)
     order by r.n`;

/** An outbox row as the relay reads it. */
export interface OutboxRow {
  id: number;
  topic: OutboxTopic;
  message_key: string | null;
  payload: unknown;
  /** events.resolved: the events a transaction stored, in order (event_id: the one event of a row an earlier release wrote). */
  event_ids: string[] | null;
  event_id: string | null;
  traceparent: string | null;
}

/** One relay at a time across every process, so rows go out in id order. */
const RELAY_LOCK = namedLockKey('identity.outbox relay');

/**
 * In the relay's transaction: the oldest `limit` rows, or null when another
 * relay holds the relay lock (held until the transaction ends).
 */
export async function claimOldestOutboxRows(trx: Db, limit: number): Promise<OutboxRow[] | null> {
  const { rows: lock } = (await preparedRaw(trx, 'select pg_try_advisory_xact_lock(?) as ok', [RELAY_LOCK.toString()])) as { rows: Array<{ ok: boolean }> };
  if (!lock[0]?.ok) return null;
  const { rows } = (await preparedRaw(trx, 'select id, topic, message_key, payload, event_ids, event_id, traceparent from identity.outbox order by id limit ?', [limit])) as {
    rows: OutboxRow[];
  };
  return rows;
}

/** An events.resolved row the log stored in part keeps only the events still to send. */
export async function keepUnsentEvents(trx: Db, rowId: number, eventIds: readonly string[]): Promise<void> {
  await preparedRaw(trx, 'update identity.outbox set event_ids = ?::uuid[], event_id = null where id = ?', [[...eventIds], rowId]);
}

/** Rows the log stored whole. */
export async function deleteOutboxRows(trx: Db, ids: readonly number[]): Promise<void> {
  if (ids.length > 0) await preparedRaw(trx, 'delete from identity.outbox where id = any(?::bigint[])', [[...ids]]);
}

/** An identity.events row as the relay reads it back, or as a batch plans it (timestamps as ISO text). */
export interface ResolvedEventRow {
  id: string;
  org_id: string;
  message_id: string;
  profile_id: string;
  event_name: string;
  event_timestamp: Date | string;
  received_at: Date | string;
  properties: Record<string, unknown>;
  context: Record<string, unknown>;
  resolution_method: string;
}

const isoOf = (t: Date | string): string => (typeof t === 'string' ? t : t.toISOString());

/** The one events.resolved message of a stored event. */
export function resolvedEventOf(row: ResolvedEventRow): ResolvedEvent {
  return {
    v: 1,
    orgId: row.org_id,
    eventId: row.id,
    messageId: row.message_id,
    profileId: row.profile_id,
    eventName: row.event_name,
    eventTimestamp: isoOf(row.event_timestamp),
    properties: row.properties,
    context: row.context,
    resolutionMethod: row.resolution_method,
    receivedAt: isoOf(row.received_at),
  };
}

/** The events.resolved messages of these stored events (an erased one is absent). */
export async function readResolvedEvents(trx: Db, eventIds: readonly string[]): Promise<ResolvedEvent[]> {
  const { rows } = (await preparedRaw(
    trx,
    `select id, org_id, message_id, profile_id, event_name, event_timestamp, received_at, properties, context, resolution_method
     from identity.events where id = any(?::uuid[])`,
    [[...eventIds]],
  )) as { rows: ResolvedEventRow[] };
  return rows.map(resolvedEventOf);
}
