import { Type, type Static } from '@sinclair/typebox';
import { Limits } from './limits';

/** The six inbound event types. */
export const EVENT_TYPES = ['track', 'identify', 'page', 'screen', 'alias', 'group'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Stored `event_name` by sent type (`track` keeps the sent `event`). */
export const STORED_EVENT_NAMES: Readonly<Record<Exclude<EventType, 'track'>, string>> = {
  page: '$pageview',
  screen: '$screen',
  identify: '$identify',
  alias: '$alias',
  group: '$group',
};

const Identifier = Type.String({ minLength: 1, maxLength: Limits.identifierMaxLength });
const FreeObject = Type.Record(Type.String(), Type.Unknown());

/**
 * One inbound event inside `batch`, as the spec states it. Conditional
 * requirements per type are expressed with if/then so stock JSON Schema tooling
 * sees them; identifier screening (the junk denylist) is code, in identifiers.ts.
 */
export const InboundEventSchema = Type.Object(
  {
    /** One of track, identify, page, screen, alias, group. */
    type: Type.Union(EVENT_TYPES.map((t) => Type.Literal(t))),
    /** Unique per event; the server de-duplicates on it. */
    messageId: Type.String({ minLength: 1, maxLength: Limits.identifierMaxLength }),
    /** Stable per-device or per-browser identifier. */
    anonymousId: Identifier,
    /** ISO 8601 date-time of the event on the client. */
    timestamp: Type.String({ format: 'date-time' }),
    /** The event name; required for track. */
    event: Type.Optional(Type.String({ minLength: 1, maxLength: Limits.eventNameMaxLength })),
    /** Known user id; required for alias. */
    userId: Type.Optional(Type.Union([Identifier, Type.Null()])),
    /** Group or account id; required for group. */
    groupId: Type.Optional(Type.String({ minLength: 1 })),
    /** The identity being linked to userId, on alias. */
    previousId: Type.Optional(Type.Union([Identifier, Type.Null()])),
    /** Event properties (track; screen carries its name here). */
    properties: Type.Optional(FreeObject),
    /** User traits such as email, phone, name (identify). */
    traits: Type.Optional(FreeObject),
    /** Free-form context; never a reason to reject (see EventContext for known fields). */
    context: Type.Optional(FreeObject),
  },
  {
    $id: 'InboundEvent',
    additionalProperties: true,
    allOf: [
      { if: { properties: { type: { const: 'track' } } }, then: { required: ['event'] } },
      // An alias's userId may not be null, as it may elsewhere: it names who the previous identity becomes.
      { if: { properties: { type: { const: 'alias' } } }, then: { required: ['userId'], properties: { userId: { type: 'string' } } } },
      { if: { properties: { type: { const: 'group' } } }, then: { required: ['groupId'] } },
    ],
  },
);
export type InboundEvent = Static<typeof InboundEventSchema>;

/** The body of POST /v1-batch. */
export const BatchBodySchema = Type.Object(
  {
    /** 0 to 100 events; each is validated on its own. */
    batch: Type.Array(Type.Unknown(), { maxItems: Limits.batchMaxEvents }),
  },
  { $id: 'BatchBody', additionalProperties: true },
);
export type BatchBody = Static<typeof BatchBodySchema>;

/** Every click-ID field of `context.campaign` the spec lists, in the spec's order. */
export const CLICK_ID_TYPES = ['gclid', 'fbclid', 'ttclid', 'msclkid', 'li_fat_id', 'gbraid', 'wbraid', 'twclid', 'igshid', 'epik', 'dclid', 'rdt_cid', 'gad_source'] as const;
export type ClickType = (typeof CLICK_ID_TYPES)[number];
