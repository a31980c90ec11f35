import { STORED_EVENT_NAMES, softCapBreaches, type RawEventEnvelope } from '@svc/contracts';
import { eventIdFor, eventIdentity, personTraits, signalKey, type CompiledIdentityRules, type EventIdentity, type Touch, type WarningKind } from '@svc/identity';
import { clickIdsOf, fingerprintOf, sessionIdOf, storedContext, touchOf, type ClickIdSighting } from './context';

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
  /** The gateway request that brought the event (its trace, when tracing is on: BatchOptions.traceparents). */
  requestId: string;
  messageId: string;
  eventId: string;
  type: RawEventEnvelope['event']['type'];
  identity: EventIdentity;
  /** What the event was stored despite (the organisation's ingestion warnings; warnings.ts in libs/identity). */
  warnings: Array<{ kind: WarningKind; detail: string | null }>;
  eventName: string;
  /** ISO 8601, normalised. */
  timestamp: string;
  receivedAt: string;
  properties: Record<string, unknown>;
  context: Record<string, unknown>;
  /** The traits as sent (stored with the event; an identify's are merged into the profile's), else null. */
  traits: Record<string, unknown> | null;
  /**
   * An alias's previousId as sent, '' for an alias without one, null for
   * other types: stored, so that the event resolves again as it did
   * (unmerge.ts); null on an alias means it was stored before the column.
   */
  previousId: string | null;
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

/** `rules`: the event's organisation's identity rules (how it reads a phone, what it blocks). */
export function prepareEvent(envelope: RawEventEnvelope, rules: CompiledIdentityRules): PreparedEvent {
  const event = envelope.event;
  const traits = personTraits(event);
  const { identity, blocked } = withoutBlocked(eventIdentity(event, rules.phoneDefault, traits), rules.blocked);
  const writtenPhone = traits.phone;
  const timestamp = isoTime(event.timestamp, 'timestamp');
  const context = { ...storedContext(event.context), ip_address: envelope.clientIp };
  return {
    orgId: envelope.orgId,
    requestId: envelope.requestId,
    messageId: event.messageId,
    eventId: eventIdFor(envelope.orgId, event.messageId),
    type: event.type,
    identity,
    warnings: [
      ...eventWarnings(envelope, identity.phone === null && !blocked.includes('phone') && writtenPhone !== undefined && writtenPhone !== null && writtenPhone !== ''),
      ...blocked.map((type) => ({ kind: 'blocked_identifier' as const, detail: type })),
    ],
    eventName: storedEventName(event),
    timestamp,
    receivedAt: isoTime(envelope.receivedAt, 'receivedAt'),
    properties: event.properties ?? {},
    context,
    traits: event.traits ?? null,
    previousId: event.type === 'alias' ? (event.previousId ?? '') : null,
    touch: touchOf(context, timestamp),
    clickIds: clickIdsOf(context),
    sessionId: sessionIdOf(context),
    fingerprint: fingerprintOf(context),
    clientIp: envelope.clientIp,
  };
}

/** The ingestion warnings of an event: an unreadable phone, a clamped timestamp, properties or traits over a soft cap. */
function eventWarnings(envelope: RawEventEnvelope, unreadablePhone: boolean): PreparedEvent['warnings'] {
  const out: PreparedEvent['warnings'] = [];
  if (unreadablePhone) out.push({ kind: 'unreadable_phone', detail: null });
  if (envelope.originalTimestamp !== undefined) out.push({ kind: 'timestamp_clamped', detail: envelope.originalTimestamp });
  for (const field of ['properties', 'traits'] as const) {
    for (const breach of softCapBreaches(envelope.event[field])) out.push({ kind: 'soft_cap', detail: `${field}: ${breach}` });
  }
  return out;
}

/** The identity without the identifiers the organisation blocked (a previousId as a userId), and which types those were. */
function withoutBlocked(identity: EventIdentity, blockedKeys: ReadonlySet<string>): { identity: EventIdentity; blocked: string[] } {
  if (blockedKeys.size === 0) return { identity, blocked: [] };
  const out = { ...identity };
  const blocked: string[] = [];
  const check = (field: 'userId' | 'email' | 'phone' | 'previousId', type: 'user_id' | 'email' | 'phone') => {
    const value = out[field];
    if (value !== null && blockedKeys.has(signalKey(type, value))) {
      out[field] = null;
      blocked.push(field === 'previousId' ? 'previous_id' : type);
    }
  };
  check('userId', 'user_id');
  check('email', 'email');
  check('phone', 'phone');
  check('previousId', 'user_id');
  return { identity: out, blocked };
}
