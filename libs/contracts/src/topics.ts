import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { InboundEventSchema } from './events';

/**
 * Kafka topic payloads. Each is JSON Schema registered as `<topic>-value`, so a
 * downstream team can read any topic with stock Confluent tooling. Every payload
 * carries `v`, its schema version; a breaking change gets a new version.
 */

const Timestamp = Type.String({ format: 'date-time' });
const Uuid = Type.String({ format: 'uuid' });
const FreeObject = Type.Record(Type.String(), Type.Unknown());

/**
 * What a raw event holds that can identify a person: everything but the
 * routing facts. The gateway seals it (RawEventSealedSchema); the resolver
 * opens it into the RawEventEnvelope it works on.
 */
const rawEventContent = {
  /** The client's IP address as the gateway saw it. */
  clientIp: Type.String(),
  /** The client's timestamp as sent, when the gateway clamped a future one. */
  originalTimestamp: Type.Optional(Type.String()),
  /** The validated event, context already screened (ip_address added, fingerprint consent applied). */
  event: InboundEventSchema,
};
export const RawEventContentSchema = Type.Object(rawEventContent, { additionalProperties: false });
export type RawEventContent = Static<typeof RawEventContentSchema>;

/** The facts a raw event keeps in clear: which organisation, when, which request. */
const rawEventFacts = {
  /** Organisation that owns the event. */
  orgId: Uuid,
  /** When the gateway received the request. */
  receivedAt: Timestamp,
  /** The request's X-Request-ID. */
  requestId: Type.String(),
};

/**
 * A raw event in clear: what the resolver works on once it opened one, and
 * how events.raw held events before they were sealed (v 1; still read).
 */
export const RawEventEnvelopeSchema = Type.Object({ v: Type.Literal(1), ...rawEventFacts, ...rawEventContent }, { additionalProperties: false });
export type RawEventEnvelope = Static<typeof RawEventEnvelopeSchema>;

/**
 * A raw event as the gateway writes it (v 2): the content sealed with
 * AES-256-GCM under the data key of the event's anonymous id (crypto-
 * shredding: an erasure deletes the key, and every copy stops opening).
 */
export const RawEventSealedSchema = Type.Object(
  {
    v: Type.Literal(2),
    ...rawEventFacts,
    /** The data key that sealed `sealed` (privacy.subject_keys). */
    keyId: Uuid,
    /**
     * base64 of the sealed RawEventContent JSON: version (1 byte), IV (12), tag (16), ciphertext; associated data orgId,
     * keyId, receivedAt and requestId. No length rule: ajv counts a string's code points to check one, a microsecond per
     * event here, and a blob too short to open fails the resolver's authenticated opening anyway.
     */
    sealed: Type.String({ contentEncoding: 'base64' }),
  },
  { additionalProperties: false },
);
export type RawEventSealed = Static<typeof RawEventSealedSchema>;

/**
 * events.raw: what the gateway accepted, exactly once per accepted event:
 * sealed (v 2), or in clear as before sealing (v 1). The form follows `v`
 * (if/then/else, not anyOf: an error names the field of the message's own
 * form, and the schema registry takes it as a backward-compatible change of
 * the clear one: schema-history.integration.test.ts in libs/bus).
 */
export type RawLogMessage = RawEventSealed | RawEventEnvelope;
export const RawLogMessageSchema = Type.Unsafe<RawLogMessage>({
  $id: 'events.raw/v1',
  type: 'object',
  properties: { v: Type.Number(), ...rawEventFacts },
  required: ['v', 'orgId', 'receivedAt', 'requestId'],
  if: { properties: { v: { const: 2 } }, required: ['v'] },
  then: RawEventSealedSchema,
  else: RawEventEnvelopeSchema,
});

/** events.resolved: the stored event with the profile it resolved to. */
export const ResolvedEventSchema = Type.Object(
  {
    v: Type.Literal(1),
    orgId: Uuid,
    /** Stored event id. */
    eventId: Uuid,
    messageId: Type.String(),
    /** Profile the event now belongs to. */
    profileId: Uuid,
    /** Stored name: the track event's name, or $pageview, $screen, $identify, $alias, $group. */
    eventName: Type.String(),
    eventTimestamp: Timestamp,
    properties: FreeObject,
    context: FreeObject,
    /** Which signal found the profile, or `new_profile`. */
    resolutionMethod: Type.String(),
    receivedAt: Timestamp,
  },
  { $id: 'events.resolved/v1', additionalProperties: false },
);
export type ResolvedEvent = Static<typeof ResolvedEventSchema>;

/** What happened to a profile, on profiles.changes. */
export const PROFILE_CHANGE_KINDS = ['created', 'updated', 'merged', 'unmerged'] as const;
export type ProfileChangeKind = (typeof PROFILE_CHANGE_KINDS)[number];

/** profiles.changes: a profile was created, updated, merged away, or split off again by an unmerge. */
export const ProfileChangeSchema = Type.Object(
  {
    v: Type.Literal(1),
    orgId: Uuid,
    profileId: Uuid,
    /**
     * The kinds are listed, not enumerated: the schema registry we test with
     * (Apicurio) refuses every later version of a schema holding an anyOf of
     * constants, which the first version of this one did (its `change` was
     * one), so this field was widened to carry the `unmerged` kind
     * (schema-history.integration.test.ts). The producer's type still admits
     * only these.
     */
    change: Type.Unsafe<ProfileChangeKind>({
      description: `One of ${PROFILE_CHANGE_KINDS.join(', ')}; a consumer skips a kind it does not know (kinds are added within v1)`,
      examples: [...PROFILE_CHANGE_KINDS],
    }),
    /** For `merged`: the surviving profile the source was merged into. */
    mergedInto: Type.Optional(Uuid),
    /** For `unmerged`: the profile it had been merged into, which it is apart from again. */
    unmergedFrom: Type.Optional(Uuid),
    at: Timestamp,
  },
  { $id: 'profiles.changes/v1', additionalProperties: false },
);
export type ProfileChange = Static<typeof ProfileChangeSchema>;

/** conversions.candidates: an event whose name qualifies under the org's connectors. */
export const ConversionCandidateSchema = Type.Object(
  {
    v: Type.Literal(1),
    orgId: Uuid,
    profileId: Uuid,
    eventId: Uuid,
    /** Also the Meta event_id, so browser pixel and server events de-duplicate. */
    messageId: Type.String(),
    eventName: Type.String(),
    eventTimestamp: Timestamp,
    /** properties.value when numeric and in range, else null. */
    value: Type.Union([Type.Number(), Type.Null()]),
    /** properties.currency, a three-letter code; INR by default. */
    currency: Type.String({ pattern: '^[A-Z]{3}$' }),
    /** properties.order_id; de-duplicates the conversion per platform. */
    orderId: Type.Union([Type.String(), Type.Null()]),
    /** SHA-256 hex of the normalised email and E.164 phone: clear PII never enters the topic. */
    hashedEmail: Type.Union([Type.String(), Type.Null()]),
    hashedPhone: Type.Union([Type.String(), Type.Null()]),
    /** SHA-256 hex of the phone's E.164 digits without `+`, as Meta expects (added in v1; absent from older messages). */
    hashedPhoneDigits: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    clientIp: Type.Union([Type.String(), Type.Null()]),
    userAgent: Type.Union([Type.String(), Type.Null()]),
    pageUrl: Type.Union([Type.String(), Type.Null()]),
  },
  { $id: 'conversions.candidates/v1', additionalProperties: false },
);
export type ConversionCandidate = Static<typeof ConversionCandidateSchema>;

/** consent.decisions: one recorded consent decision. */
export const ConsentDecisionEventSchema = Type.Object(
  {
    v: Type.Literal(1),
    orgId: Uuid,
    /** Stored consent record id. */
    recordId: Uuid,
    anonymousId: Type.String(),
    userId: Type.Union([Type.String(), Type.Null()]),
    /** Purpose name → granted (true) or denied (false). */
    purposes: Type.Record(Type.String(), Type.Boolean()),
    source: Type.String(),
    clientTimestamp: Type.Union([Timestamp, Type.Null()]),
    receivedAt: Timestamp,
  },
  { $id: 'consent.decisions/v1', additionalProperties: false },
);
export type ConsentDecisionEvent = Static<typeof ConsentDecisionEventSchema>;

/** The identifier types an erasure suppresses (the identity signal types). */
export const ERASABLE_IDENTIFIER_TYPES = ['user_id', 'email', 'phone', 'anonymous_id'] as const;
export type ErasableIdentifierType = (typeof ERASABLE_IDENTIFIER_TYPES)[number];

const Sha256Hex = Type.String({ pattern: '^[0-9a-f]{64}$' });

/**
 * profiles.erasure-requests: an erasure recorded by the Profiles API or
 * svcctl, for the identity resolver to carry out. Keyed by the profile id,
 * like the profile topics. It carries no personal data: the resolver reads
 * the profile's identifiers itself.
 */
export const ErasureRequestSchema = Type.Object(
  {
    v: Type.Literal(1),
    orgId: Uuid,
    /** The erasure request's id (privacy.erasure_requests). */
    erasureId: Uuid,
    /** The live profile the request named when it was recorded (the resolver follows a later merge). */
    profileId: Uuid,
    requestedAt: Timestamp,
  },
  { $id: 'profiles.erasure-requests/v1', additionalProperties: false },
);
export type ErasureRequest = Static<typeof ErasureRequestSchema>;

/**
 * profiles.erased: the tombstone. A person was erased from the identity
 * projections; every consumer of the other topics should erase them too.
 * Keyed by the surviving profile id, like profiles.changes. No personal data:
 * profile ids, and the person's identifiers as keyed hashes of
 * `<orgId>\u0000<type>\u0000<normalised value>` (the suppression hash:
 * HMAC-SHA256 layers under IDENTIFIER_HASH_KEYS over its SHA-256, as 64 hex
 * digits without the stored form's `k<layers>.` prefix; libs/identity
 * hash.ts), so the schema registered before keyed hashes still holds.
 * Only a holder of the keys can hash what it stores the same way to find
 * them; downstream teams match on the profile ids. Tombstones from before
 * keyed hashes carry the plain SHA-256.
 */
export const ProfileErasedSchema = Type.Object(
  {
    v: Type.Literal(1),
    orgId: Uuid,
    erasureId: Uuid,
    /** The surviving profile that was erased. */
    profileId: Uuid,
    /** Every profile id erased: the survivor and every profile merged into it. */
    profileIds: Type.Array(Uuid, { minItems: 1 }),
    /** The person's identifiers, hashed per organisation; now suppressed. */
    identifiers: Type.Array(Type.Object({ type: Type.Union(ERASABLE_IDENTIFIER_TYPES.map((t) => Type.Literal(t))), hash: Sha256Hex }, { additionalProperties: false })),
    /** The person's click IDs, keyed the same way over `<orgId>\u0000<click type>\u0000<click id>`. */
    clickIds: Type.Array(Type.Object({ type: Type.String(), hash: Sha256Hex }, { additionalProperties: false })),
    erasedAt: Timestamp,
  },
  { $id: 'profiles.erased/v1', additionalProperties: false },
);
export type ProfileErased = Static<typeof ProfileErasedSchema>;

export interface TopicSpec<S extends TSchema = TSchema> {
  /** Base topic name; deployments and tests may prefix it. */
  name: string;
  partitions: number;
  schema: S;
  /**
   * Never deleted by retention: the raw events are the source of truth that
   * a replay rebuilds every projection from. Other topics keep the log's
   * retention.
   */
  retainForever?: boolean;
}

/** Every topic the services use, with its payload schema and partition count. */
export const Topics = {
  eventsRaw: { name: 'events.raw', partitions: 8, schema: RawLogMessageSchema, retainForever: true },
  eventsResolved: { name: 'events.resolved', partitions: 8, schema: ResolvedEventSchema },
  profilesChanges: { name: 'profiles.changes', partitions: 4, schema: ProfileChangeSchema },
  conversionsCandidates: {
    name: 'conversions.candidates',
    partitions: 4,
    schema: ConversionCandidateSchema,
  },
  consentDecisions: { name: 'consent.decisions', partitions: 4, schema: ConsentDecisionEventSchema },
  erasureRequests: { name: 'profiles.erasure-requests', partitions: 4, schema: ErasureRequestSchema },
  profilesErased: { name: 'profiles.erased', partitions: 4, schema: ProfileErasedSchema },
} as const satisfies Record<string, TopicSpec>;

/** Where a consumer parks a message it cannot decode or keeps failing on. */
export const deadLetterTopicName = (topic: string): string => `${topic}.dlq`;

/** The headers of a parked message. */
export const DEAD_LETTER_HEADERS = {
  /** Why it was parked: the error, or that it did not match its schema. */
  reason: 'x-dlq-reason',
  /** Where it came from: `<topic>/<partition>/<offset>`. */
  source: 'x-dlq-source',
} as const;
