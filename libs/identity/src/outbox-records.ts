import { SchemaViolationError } from '@svc/bus';
import { Topics, firstSchemaError, type ProfileChange, type TopicSpec } from '@svc/contracts';
import type { Db } from '@svc/runtime';

/**
 * The rows of the transactional outbox (identity.outbox): whatever the
 * resolver or an admin merge wants to say on a topic is written here in the
 * same transaction as the effects it describes. The resolver's relay
 * produces them (services/identity-resolver/src/outbox.ts).
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
