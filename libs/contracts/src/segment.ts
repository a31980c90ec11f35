import { Type } from '@sinclair/typebox';
import { InboundEventSchema } from './events';
import { Limits } from './limits';

/**
 * What Segment's HTTP tracking API takes, as the Segment-compatible routes
 * accept it, built from the inbound event's own field definitions: the
 * differences are the fields Segment makes optional or adds. How each is
 * mapped onto an inbound event is services/ingest-gateway/README.md's.
 * Descriptive (for the OpenAPI document): the gateway judges each mapped
 * event with checkEvent, as on /v1-batch.
 */
const { anonymousId, messageId, timestamp, type, ...shared } = InboundEventSchema.properties;
const Timestamp = Type.String({ format: 'date-time' });
const FreeObject = Type.Record(Type.String(), Type.Unknown());

const segmentFields = {
  ...shared,
  /** Optional, as in Segment's HTTP API: absent, one is derived from the message's content (`content:<sha256>`), so an exact retry is stored once. */
  messageId: Type.Optional(messageId),
  /** Optional when userId is given: derived from it. */
  anonymousId: Type.Optional(anonymousId),
  /** The client's time; optional (absent: the receive time). Corrected for clock skew with sentAt. */
  timestamp: Type.Optional(timestamp),
  /** RudderStack's name for the client's time, used when timestamp is absent. */
  originalTimestamp: Type.Optional(Timestamp),
  /** When the client sent the message, on its clock. */
  sentAt: Type.Optional(Timestamp),
  /** Per-destination switches; kept in the raw log, not acted on. */
  integrations: Type.Optional(FreeObject),
  /** A page's or screen's name (copied into properties.name). */
  name: Type.Optional(Type.String()),
  /** A page's category (copied into properties.category). */
  category: Type.Optional(Type.String()),
};
const needsAnId = [{ required: ['anonymousId'] }, { required: ['userId'] }];

/** One message inside `batch` of POST /segment/v1/batch. */
export const SegmentMessageSchema = Type.Object(
  { type, ...segmentFields },
  { additionalProperties: true, allOf: InboundEventSchema.allOf, anyOf: needsAnId, description: 'A Segment message: anonymousId or userId, and the fields of an inbound event' },
);

/** The body of POST /segment/v1/track, /identify, ...: one message whose type is the route's. */
export const SegmentSingleEventSchema = Type.Object(
  {
    type: Type.Optional(type),
    ...segmentFields,
    /** The write key, when it is not sent as the Basic-auth user. */
    writeKey: Type.Optional(Type.String()),
  },
  { additionalProperties: true, anyOf: needsAnId, description: 'One Segment message; its type is the route’s' },
);

/** The body of POST /segment/v1/batch. */
export const SegmentBatchBodySchema = Type.Object(
  {
    batch: Type.Array(SegmentMessageSchema, { maxItems: Limits.batchMaxEvents }),
    /** When the client sent the batch, on its clock (for messages without their own). */
    sentAt: Type.Optional(Timestamp),
    /** Fills in each message's context (the message's own keys win). */
    context: Type.Optional(FreeObject),
    /** Fills in each message's integrations. */
    integrations: Type.Optional(FreeObject),
    /** The write key, when it is not sent as the Basic-auth user. */
    writeKey: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);
