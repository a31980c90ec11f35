import { createHash } from 'node:crypto';
import { Limits, canonicalTimestamp, type EventType } from '@svc/contracts';

/**
 * What a Segment-style request carries besides its messages, and applies to
 * each of them: the batch's `sentAt`, `context` and `integrations`.
 */
export interface SegmentEnvelope {
  sentAt?: unknown;
  context?: unknown;
  integrations?: unknown;
}

/** Prefix of the anonymousId given to an event that names only its user (see derivedAnonymousId). */
export const USER_DERIVED_PREFIX = 'user:';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const absent = (v: unknown): boolean => v === undefined || v === null || v === '';

/**
 * One Segment message as the inbound event /v1-batch would take, with no
 * validation of its own: checkEvent, downstream, judges the result exactly
 * as it judges a /v1-batch event. Where the shapes differ (each case is in
 * services/ingest-gateway/README.md, "Segment-compatible ingestion"):
 *
 * - `type` comes from the route on /v1/track, /v1/identify, ...;
 * - an event with `userId` but no `anonymousId` (the common server-side
 *   call) gets an anonymousId derived from the userId, so it lands on that
 *   user's profile and all of that user's server-side events share one
 *   partition key;
 * - the client's time is `timestamp`, else `originalTimestamp`
 *   (RudderStack's); with `sentAt` (the event's, else the batch's) it is
 *   corrected for the client's clock skew as Segment does:
 *   timestamp = receivedAt - (sentAt - client time), and the client's value
 *   is kept as `originalTimestamp`; with no client time at all, the event
 *   happened when it was received;
 * - a page's or screen's `name` (and a page's `category`) go into
 *   properties, where this service reads a screen's name;
 * - the batch's `context` and `integrations` fill in each event's (the
 *   event's own keys win); `integrations` is kept in the raw log, not acted on;
 * - `writeKey` is removed: a credential is never stored;
 * - a message without `messageId` (Segment's HTTP API does not require one)
 *   gets one derived from its content (derivedMessageId), so that a
 *   client's exact retry is stored once.
 */
export function fromSegment(message: unknown, envelope: SegmentEnvelope, receivedAt: Date, typeFromRoute?: EventType): unknown {
  if (!isObject(message)) return message;
  const event: Record<string, unknown> = { ...message };
  delete event.writeKey;
  if (typeFromRoute) event.type = typeFromRoute;
  if (absent(event.messageId)) event.messageId = derivedMessageId(event);
  for (const field of ['context', 'integrations'] as const) {
    const shared = envelope[field];
    if (isObject(shared)) event[field] = isObject(event[field]) ? { ...shared, ...event[field] } : (event[field] ?? { ...shared });
  }
  if (absent(event.anonymousId) && typeof event.userId === 'string' && event.userId !== '') {
    event.anonymousId = derivedAnonymousId(event.userId);
  }
  Object.assign(event, eventTime(event, envelope.sentAt, receivedAt));
  if (event.type === 'page' || event.type === 'screen') nameIntoProperties(event);
  return event;
}

/**
 * The anonymousId of a user's events that carry none: `user:<userId>`, or
 * `user:<sha256 of userId>` when that would pass the 200-character limit.
 * Deterministic, so every such event of one user keys alike; prefixed, so it
 * never equals a device's own id.
 */
export function derivedAnonymousId(userId: string): string {
  const readable = `${USER_DERIVED_PREFIX}${userId}`;
  if ([...readable].length <= Limits.identifierMaxLength) return readable;
  return `${USER_DERIVED_PREFIX}${createHash('sha256').update(userId, 'utf8').digest('hex')}`;
}

/** Prefix of a messageId derived from a message's content (see derivedMessageId). */
export const CONTENT_DERIVED_PREFIX = 'content:';

/**
 * The messageId of a message that carries none: `content:` and the SHA-256
 * (hex) of the message as sent, its keys sorted at every level, without the
 * fields a retry changes (`sentAt`) and without `messageId` itself. The same
 * message sent again is the same event and is stored once; two messages
 * that differ in anything else (the time, one property) are two events.
 * Two identical messages without a time are one event: a client that sends
 * such messages apart must give them messageIds.
 */
export function derivedMessageId(message: Record<string, unknown>): string {
  const { sentAt: _sentAt, messageId: _messageId, writeKey: _writeKey, ...content } = message;
  return `${CONTENT_DERIVED_PREFIX}${createHash('sha256').update(canonicalJson(content), 'utf8').digest('hex')}`;
}

/** JSON with every object's keys in sorted order, so equal content is equal text whatever order it was written in. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isObject(value)) {
    return `{${Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** `timestamp` (and `originalTimestamp`) of the event, Segment's way; see fromSegment. */
function eventTime(event: Record<string, unknown>, batchSentAt: unknown, receivedAt: Date): { timestamp: unknown; originalTimestamp?: unknown } {
  const clientTime = absent(event.timestamp) ? event.originalTimestamp : event.timestamp;
  if (absent(clientTime)) return { timestamp: receivedAt.toISOString() };
  const client = canonicalTimestamp(clientTime);
  // Not a time at all: left as sent, for checkEvent to name (`Invalid timestamp`).
  if (client === undefined) return { timestamp: clientTime };
  const sentAt = canonicalTimestamp(absent(event.sentAt) ? batchSentAt : event.sentAt);
  if (sentAt === undefined) return { timestamp: client, originalTimestamp: clientTime };
  const corrected = new Date(receivedAt.getTime() - (Date.parse(sentAt) - Date.parse(client)));
  // Absurd clocks can move the instant out of RFC 3339's years; then the client's time stands.
  const timestamp = Number.isNaN(corrected.getTime()) ? undefined : canonicalTimestamp(corrected.toISOString());
  return { timestamp: timestamp ?? client, originalTimestamp: clientTime };
}

function nameIntoProperties(event: Record<string, unknown>): void {
  const properties = isObject(event.properties) ? { ...event.properties } : {};
  for (const field of event.type === 'page' ? (['name', 'category'] as const) : (['name'] as const)) {
    if (typeof event[field] === 'string' && properties[field] === undefined) properties[field] = event[field];
  }
  if (Object.keys(properties).length > 0 || isObject(event.properties)) event.properties = properties;
}
