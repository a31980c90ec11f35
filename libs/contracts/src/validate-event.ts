import type { ErrorObject } from 'ajv';
import { EVENT_TYPES, InboundEventSchema, type InboundEvent } from './events';
import { isValidIdentifier } from './identifiers';
import { Limits } from './limits';
import { EventReasons } from './messages';
import { schemaErrors } from './schema-validator';
import { toStorable } from './storable';
import { canonicalTimestamp } from './timestamps';

export type EventCheck = { ok: true; event: InboundEvent } | { ok: false; reason: string };

/** A reason's echo of a sent value stays short, whatever the client sent. */
const MAX_ECHO = 64;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const absent = (v: unknown): boolean => v === undefined || v === null || v === '';

/**
 * Validates one inbound event against InboundEventSchema, the very schema
 * the bus enforces on `events.raw`, so the gateway and the log cannot
 * disagree about an event. ajv reports every rule the event breaks; the
 * client is told the one that comes first in the spec's table of reasons.
 * Three rules are code on top of the schema, and only ever stricter:
 * identifier screening (the junk denylist), a timestamp that names a real
 * instant, and the hard nesting cap.
 *
 * Before validating, the event is normalised (see normalise()): a field the
 * event's type does not use is dropped when malformed rather than costing
 * the event, and strings are made storable. A field that carries identity
 * (anonymousId, userId, previousId, groupId of a group) is never coerced:
 * guessing an identity would stitch or split profiles wrongly, so a
 * malformed one rejects its event alone.
 */
export function checkEvent(raw: unknown): EventCheck {
  if (!isObject(raw) || Object.keys(raw).length === 0) return fail(EventReasons.eventRequired);
  const storable = toStorable(raw);
  const { event, timestampIsInstant } = normalise(storable.ok ? storable.value : raw);

  const problems: Problem[] = schemaErrors(InboundEventSchema, event).flatMap((e) => problemOf(e, event));
  if (!storable.ok) problems.push(rank('processingFailed'));
  if (!timestampIsInstant) problems.push(rank('invalidTimestamp'));
  for (const field of ['anonymousId', 'userId', 'previousId'] as const) {
    // Only the denylist is left to check: the schema has seen to types and lengths.
    if (typeof event[field] === 'string' && !isValidIdentifier(event[field])) problems.push(rank(INVALID_IDENTIFIER[field]));
  }
  if (problems.length === 0) return { ok: true, event: event as InboundEvent };
  const first = problems.reduce((a, b) => (b.order < a.order ? b : a));
  return fail(first.reason);
}

/** The spec's per-event reasons in the order of its table: the first broken rule is the one reported. */
const ORDER = [
  'typeRequired',
  'invalidType',
  'messageIdRequired',
  'invalidMessageId',
  'anonymousIdRequired',
  'timestampRequired',
  'invalidTimestamp',
  'eventNameRequired',
  'eventNameTooLong',
  'userIdRequiredForAlias',
  'groupIdRequiredForGroup',
  'invalidAnonymousId',
  'invalidUserId',
  'invalidPreviousId',
  'processingFailed',
] as const satisfies ReadonlyArray<keyof typeof EventReasons>;
type ReasonName = (typeof ORDER)[number];

interface Problem {
  order: number;
  reason: string;
}

const rank = (name: ReasonName, reason: string = EventReasons[name] as string): Problem => ({
  order: ORDER.indexOf(name),
  reason,
});

const INVALID_IDENTIFIER = {
  anonymousId: 'invalidAnonymousId',
  userId: 'invalidUserId',
  previousId: 'invalidPreviousId',
} as const satisfies Record<string, ReasonName>;

/** The spec's reason for one schema violation, by the top-level field it concerns. */
function problemOf(error: ErrorObject, event: Record<string, unknown>): Problem[] {
  // `if` only says a `then` failed; the `then`'s own error names the field.
  if (error.keyword === 'if') return [];
  const field =
    error.keyword === 'required'
      ? String((error.params as { missingProperty?: unknown }).missingProperty)
      : (error.instancePath.split('/')[1] ?? '');
  const value = event[field];
  switch (field) {
    case 'type':
      return [absent(value) ? rank('typeRequired') : rank('invalidType', EventReasons.invalidType(String(value).slice(0, MAX_ECHO)))];
    case 'messageId':
      return [typeof value === 'string' && value !== '' ? rank('invalidMessageId') : rank('messageIdRequired')];
    case 'anonymousId':
      return [absent(value) ? rank('anonymousIdRequired') : rank('invalidAnonymousId')];
    case 'timestamp':
      return [absent(value) ? rank('timestampRequired') : rank('invalidTimestamp')];
    case 'event':
      return [typeof value === 'string' && value !== '' ? rank('eventNameTooLong') : rank('eventNameRequired')];
    case 'userId':
      return [event.type === 'alias' && absent(value) ? rank('userIdRequiredForAlias') : rank('invalidUserId')];
    case 'groupId':
      return [rank('groupIdRequiredForGroup')];
    case 'previousId':
      return [rank('invalidPreviousId')];
    default:
      return [rank('processingFailed')];
  }
}

const VALID_TYPES: ReadonlySet<unknown> = new Set(EVENT_TYPES);
const isEventName = (v: unknown): boolean => typeof v === 'string' && v !== '' && [...v].length <= Limits.eventNameMaxLength;

/**
 * What is dropped or rewritten rather than costing the event (each case is
 * in docs/architecture.md, "Per-event validation"):
 * - properties, traits, context of another shape than an object carry
 *   nothing usable: dropped;
 * - `event` on a type other than track, and `groupId` on a type other than
 *   group, are not used: dropped when malformed (a number, empty, too long);
 * - a timestamp in another ISO 8601 spelling: rewritten in RFC 3339 (see
 *   canonicalTimestamp).
 * Returns the input itself when nothing changes, and whether a timestamp
 * sent as text names a real instant.
 */
function normalise(raw: Record<string, unknown>): { event: Record<string, unknown>; timestampIsInstant: boolean } {
  const drop: string[] = [];
  for (const key of ['properties', 'traits', 'context'] as const) {
    if (key in raw && !isObject(raw[key])) drop.push(key);
  }
  if (VALID_TYPES.has(raw.type)) {
    if (raw.type !== 'track' && 'event' in raw && !isEventName(raw.event)) drop.push('event');
    if (raw.type !== 'group' && 'groupId' in raw && (typeof raw.groupId !== 'string' || raw.groupId === '')) drop.push('groupId');
  }
  const timestamp = canonicalTimestamp(raw.timestamp);
  // A timestamp of the wrong type or empty is the schema's to report (as missing or invalid).
  const timestampIsInstant = timestamp !== undefined || typeof raw.timestamp !== 'string' || raw.timestamp === '';
  const retime = timestamp !== undefined && timestamp !== raw.timestamp;
  if (drop.length === 0 && !retime) return { event: raw, timestampIsInstant };
  const out = { ...raw };
  for (const key of drop) delete out[key];
  if (retime) out.timestamp = timestamp;
  return { event: out, timestampIsInstant };
}

const fail = (reason: string): EventCheck => ({ ok: false, reason });
