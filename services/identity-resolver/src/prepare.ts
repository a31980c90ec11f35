import { STORED_EVENT_NAMES, type RawEventEnvelope } from '@svc/contracts';
import { DEFAULT_PHONE_COUNTRY_CODE, eventIdFor, eventIdentity, personTraits, type EventIdentity, type PhoneDefault } from '@svc/identity';
import { clickIdsOf, fingerprintOf, sessionIdOf, storedContext, touchOf, type ClickIdSighting, type Touch } from './context';

/** An event that can never be stored, whatever is retried (bad data a producer other than the gateway let through). */
export class PoisonEventError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PoisonEventError';
  }
}

/** Everything the batch transaction needs from one raw envelope, computed before any I/O. */
export interface PreparedEvent {
  orgId: string;
  messageId: string;
  eventId: string;
  type: RawEventEnvelope['event']['type'];
  identity: EventIdentity;
  /** The traits named a phone that is not a valid number of its country: no phone signal, and a warning counted. */
  unreadablePhone: boolean;
  eventName: string;
  /** ISO 8601, normalised. */
  timestamp: string;
  receivedAt: string;
  properties: Record<string, unknown>;
  context: Record<string, unknown>;
  /** The traits as sent (stored with the event; an identify's are merged into the profile's), else null. */
  traits: Record<string, unknown> | null;
  touch: Touch | null;
  clickIds: ClickIdSighting[];
  sessionId: string | null;
  fingerprint: string | null;
  clientIp: string;
}

function isoTime(value: string, what: string): string {
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) throw new PoisonEventError(`${what} ${JSON.stringify(value)} is not a time`);
  return new Date(ms).toISOString();
}

/** Stored event_name by sent type: track keeps its event; the others are $pageview, $screen, $identify, $alias, $group. */
export function storedEventName(event: RawEventEnvelope['event']): string {
  if (event.type === 'track') {
    if (!event.event) throw new PoisonEventError('track event without an event name');
    return event.event;
  }
  return STORED_EVENT_NAMES[event.type];
}

/** `phoneDefault`: how the event's organisation reads a phone written without its country. */
export function prepareEvent(envelope: RawEventEnvelope, phoneDefault: PhoneDefault = DEFAULT_PHONE_COUNTRY_CODE): PreparedEvent {
  const event = envelope.event;
  const identity = eventIdentity(event, phoneDefault);
  const writtenPhone = personTraits(event).phone;
  const timestamp = isoTime(event.timestamp, 'timestamp');
  const context = { ...storedContext(event.context), ip_address: envelope.clientIp };
  return {
    orgId: envelope.orgId,
    messageId: event.messageId,
    eventId: eventIdFor(envelope.orgId, event.messageId),
    type: event.type,
    identity,
    unreadablePhone: identity.phone === null && writtenPhone !== undefined && writtenPhone !== null && writtenPhone !== '',
    eventName: storedEventName(event),
    timestamp,
    receivedAt: isoTime(envelope.receivedAt, 'receivedAt'),
    properties: event.properties ?? {},
    context,
    traits: event.traits ?? null,
    touch: touchOf(context, timestamp),
    clickIds: clickIdsOf(context),
    sessionId: sessionIdOf(context),
    fingerprint: fingerprintOf(context),
    clientIp: envelope.clientIp,
  };
}
