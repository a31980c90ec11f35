import { EVENT_TYPES, type EventType, type InboundEvent } from './events';
import { isValidIdentifier } from './identifiers';
import { Limits } from './limits';
import { EventReasons } from './messages';

export type EventCheck = { ok: true; event: InboundEvent } | { ok: false; reason: string };

const ISO_8601 =
  /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}(:?\d{2})?)?$/;

/** A reason's echo of a sent value stays short, whatever the client sent. */
const MAX_ECHO = 64;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const absent = (v: unknown): boolean => v === undefined || v === null || v === '';

/** True when `value` is an ISO 8601 date-time that names a real instant. */
export function isIsoTimestamp(value: unknown): value is string {
  // Year 0000 parses in JavaScript but names no instant PostgreSQL can store.
  return typeof value === 'string' && ISO_8601.test(value) && !value.startsWith('0000') && !Number.isNaN(Date.parse(value));
}

/**
 * Validates one inbound event, returning the spec's per-event reason for the
 * first rule it breaks. The order of checks is the order of the spec's table,
 * so a client always sees the most basic problem first.
 */
export function checkEvent(raw: unknown): EventCheck {
  if (!isObject(raw) || Object.keys(raw).length === 0) return fail(EventReasons.eventRequired);

  const { type } = raw;
  if (absent(type)) return fail(EventReasons.typeRequired);
  if (typeof type !== 'string' || !(EVENT_TYPES as readonly string[]).includes(type)) {
    return fail(EventReasons.invalidType(String(type).slice(0, MAX_ECHO)));
  }
  if (absent(raw.messageId) || typeof raw.messageId !== 'string') {
    return fail(EventReasons.messageIdRequired);
  }
  if ([...raw.messageId].length > Limits.identifierMaxLength) {
    return fail(EventReasons.invalidMessageId);
  }
  if (absent(raw.anonymousId)) return fail(EventReasons.anonymousIdRequired);
  if (absent(raw.timestamp)) return fail(EventReasons.timestampRequired);
  if (!isIsoTimestamp(raw.timestamp)) return fail(EventReasons.invalidTimestamp);

  const requirement = typeRequirement(type as EventType, raw);
  if (requirement) return fail(requirement);

  if (!isValidIdentifier(raw.anonymousId)) return fail(EventReasons.invalidAnonymousId);
  if (raw.userId != null && !isValidIdentifier(raw.userId)) return fail(EventReasons.invalidUserId);
  if (raw.previousId != null && !isValidIdentifier(raw.previousId)) {
    return fail(EventReasons.invalidPreviousId);
  }

  return { ok: true, event: normaliseObjects(raw) as InboundEvent };
}

function typeRequirement(type: EventType, raw: Record<string, unknown>): string | undefined {
  switch (type) {
    case 'track':
      if (absent(raw.event) || typeof raw.event !== 'string') return EventReasons.eventNameRequired;
      if ([...raw.event].length > Limits.eventNameMaxLength) return EventReasons.eventNameTooLong;
      return undefined;
    case 'alias':
      return absent(raw.userId) ? EventReasons.userIdRequiredForAlias : undefined;
    case 'group':
      return absent(raw.groupId) || typeof raw.groupId !== 'string'
        ? EventReasons.groupIdRequiredForGroup
        : undefined;
    default:
      return undefined;
  }
}

/**
 * properties, traits and context are free-form objects; a value of another
 * shape carries nothing usable, so it is dropped rather than failing the event.
 */
function normaliseObjects(raw: Record<string, unknown>): Record<string, unknown> {
  const out = { ...raw };
  for (const key of ['properties', 'traits', 'context'] as const) {
    if (key in out && !isObject(out[key])) delete out[key];
  }
  return out;
}

const fail = (reason: string): EventCheck => ({ ok: false, reason });
