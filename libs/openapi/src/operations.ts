import { Type, type TSchema } from '@sinclair/typebox';
import {
  BatchResultSchema,
  ConsentDecisionSchema,
  ConsentMessages,
  ConsentReadSchema,
  ConsentRecordedSchema,
  ERASABLE_IDENTIFIER_TYPES,
  EVENT_TYPES,
  ErasureConflictSchema,
  ErasureFoundSchema,
  EventReasons,
  InboundEventSchema,
  Limits,
  LivenessSchema,
  Messages,
  ProfileEventsSchema,
  ProfileFoundSchema,
  ProfileIdentitiesSchema,
  ProfileMergesSchema,
  ProfileListSchema,
  ProfileSearchSchema,
  ProfilesMergedSchema,
  ErrorEnvelopeSchema,
  MergeUndoneSchema,
  ReadinessSchema,
  UnmergeFoundSchema,
  SegmentBatchBodySchema,
  SegmentSingleEventSchema,
} from '@svc/contracts';
import {
  badRequest,
  batchTooLarge,
  example,
  forbidden,
  ingestionRateLimited,
  internalError,
  notFound,
  ok,
  rateLimited,
  smallBodyTooLarge,
  unauthorized,
  unauthorizedWriteKey,
  unavailable,
  type Example,
  type ResponseSpec,
} from './responses';

export type Security = 'write' | 'read' | 'admin' | 'segment' | 'none';

export interface Parameter {
  name: string;
  in: 'query' | 'path';
  description: string;
  schema: TSchema;
  required?: boolean;
}

/** One operation of the API, everything the document says about it. */
export interface Operation {
  method: 'get' | 'post';
  /** Path as the document writes it, under the API's base (`/functions/v1`) unless `atRoot`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: 'Ingestion' | 'Segment-compatible ingestion' | 'Consent' | 'Profiles' | 'Operations';
  security: Security;
  atRoot?: boolean;
  parameters?: Parameter[];
  requestBody?: { schema: TSchema; contentTypes: string[]; examples?: Example[] };
  responses: Record<number, ResponseSpec>;
}

const at = '2026-11-21T12:00:00.000Z';
const sampleEvent = { type: 'track', event: 'purchase', messageId: 'msg-1', anonymousId: 'anon_6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f', timestamp: at, properties: { value: 49.5, currency: 'EUR' } };

const BATCH_RESULTS = [
  example('accepted', 'Every event accepted', { success: true, processed: 2, failed: 0, duration_ms: 12 }),
  example('partial', 'One event dropped alone, with the spec’s reason', { success: false, processed: 1, failed: 1, errors: [`msg-2: ${EventReasons.eventNameRequired}`], duration_ms: 9 }),
  example('empty', 'An empty batch', { success: true, processed: 0, failed: 0, duration_ms: 1 }),
];

/** The statuses every ingestion way in shares, past authentication. */
const ingestionResponses = (auth: ResponseSpec, badRequests: Array<[string, string, string]>): Record<number, ResponseSpec> => ({
  200: ok('Processed; inspect failed and errors. A 200 does not guarantee every event landed', BatchResultSchema, BATCH_RESULTS),
  400: badRequest('The request as a whole is malformed (permanent)', badRequests),
  401: auth,
  403: forbidden('write or admin'),
  413: batchTooLarge(),
  429: ingestionRateLimited(),
  500: internalError(),
  503: unavailable(true),
});

const BATCH_SHAPE: Array<[string, string, string]> = [
  ['invalid_json', 'Unparsable body', Messages.invalidJson],
  ['empty', 'No body', Messages.emptyBody],
  ['no_batch', 'No batch array', Messages.batchRequired],
  ['too_many', 'Over 100 events', Messages.batchTooLarge],
];

const ingestion: Operation[] = [
  {
    method: 'post',
    path: '/v1-batch',
    operationId: 'ingestBatch',
    summary: 'Ingest a batch of events',
    description: 'Processing order: authentication, batch shape, rate limits, plan quota, per-event validation. A bad event is dropped alone.',
    tag: 'Ingestion',
    security: 'write',
    requestBody: {
      schema: Type.Object({ batch: Type.Array(InboundEventSchema, { maxItems: Limits.batchMaxEvents }) }, { additionalProperties: true }),
      contentTypes: ['application/json'],
      examples: [example('one', 'One track event', { batch: [sampleEvent] })],
    },
    responses: ingestionResponses(unauthorized(), [['content_type', 'Content-Type is not application/json', Messages.contentTypeNotJson], ...BATCH_SHAPE]),
  },
];

/** Segment's libraries post any of these; the body is read as JSON whatever the type. */
const SEGMENT_CONTENT_TYPES = ['application/json', 'text/plain'];
const SEGMENT_BAD: Array<[string, string, string]> = [
  ['encoding', 'Content-Encoding other than gzip or identity', Messages.unsupportedContentEncoding],
  ['gzip', 'Content-Encoding: gzip on a body that does not decompress', Messages.invalidGzipBody],
];
const segmentNote =
  'Segment-compatible (services/ingest-gateway/README.md): the write key is the Basic-auth user (empty password), a Bearer key, or `writeKey` in the body; gzip bodies are accepted; a message without `messageId` gets one derived from its content (`content:<sha256>`), so an exact retry is stored once; the answer is the /v1-batch answer.';
/** Segment's browser library (@segment/analytics-next) posts to these short paths under its apiHost. */
const browserNote = 'The path Segment’s browser library (`@segment/analytics-next`) posts to, with the write key in a `text/plain` body.';
const capitalised = (word: string) => `${word[0]!.toUpperCase()}${word.slice(1)}`;

const segmentBatch = (path: string, operationId: string, note: string): Operation => ({
  method: 'post',
  path,
  operationId,
  summary: 'Ingest a Segment batch',
  description: note,
  tag: 'Segment-compatible ingestion',
  security: 'segment',
  requestBody: { schema: SegmentBatchBodySchema, contentTypes: SEGMENT_CONTENT_TYPES, examples: [example('one', 'A server-side track with only a userId', { batch: [{ type: 'track', event: 'Order Completed', userId: 'user-42', messageId: 'msg-1', timestamp: at }], sentAt: at })] },
  responses: ingestionResponses(unauthorizedWriteKey(), [...SEGMENT_BAD, ...BATCH_SHAPE]),
});

const segment: Operation[] = [
  segmentBatch('/segment/v1/batch', 'segmentBatch', segmentNote),
  segmentBatch('/segment/v1/b', 'segmentBrowserBatch', `${segmentNote} ${browserNote}`),
  ...EVENT_TYPES.flatMap((type) => [
    { type, path: `/segment/v1/${type}`, operationId: `segment${capitalised(type)}`, note: segmentNote },
    { type, path: `/segment/v1/${type[0]!}`, operationId: `segmentBrowser${capitalised(type)}`, note: `${segmentNote} ${browserNote}` },
  ]).map(
    ({ type, path, operationId, note }): Operation => ({
      method: 'post',
      path,
      operationId,
      summary: `Ingest one Segment ${type} call`,
      description: `${note} The message's type is \`${type}\` whatever it says.`,
      tag: 'Segment-compatible ingestion',
      security: 'segment',
      requestBody: { schema: SegmentSingleEventSchema, contentTypes: SEGMENT_CONTENT_TYPES },
      responses: ingestionResponses(unauthorizedWriteKey(), [
        ...SEGMENT_BAD,
        ['invalid_json', 'Unparsable body', Messages.invalidJson],
        ['empty', 'No body', Messages.emptyBody],
        ['not_one_event', 'The body is not one JSON object', Messages.singleEventRequired],
      ]),
    }),
  ),
];

const consentErrors = (required: 'write or admin' | 'read or admin'): Record<number, ResponseSpec> => ({
  401: unauthorized(),
  403: forbidden(required),
  429: rateLimited(Limits.rate.consentPerOrgIp),
  500: internalError(),
});

const consent: Operation[] = [
  {
    method: 'post',
    path: '/v1-consent',
    operationId: 'recordConsent',
    summary: 'Record a consent decision',
    tag: 'Consent',
    security: 'write',
    requestBody: { schema: ConsentDecisionSchema, contentTypes: ['application/json'], examples: [example('grant', 'Analytics granted from the banner', { anonymousId: sampleEvent.anonymousId, purposes: { analytics: true }, source: 'banner', timestamp: at })] },
    responses: {
      200: ok('Recorded (and published to consent.decisions)', ConsentRecordedSchema),
      400: badRequest('Unreadable body, or an invalid decision (`Invalid consent: ...` naming the problem)', [
        ['content_type', 'Content-Type is not application/json', Messages.contentTypeNotJson],
        ['invalid_json', 'Unparsable body', Messages.invalidJson],
      ]),
      413: smallBodyTooLarge(),
      503: unavailable(),
      ...consentErrors('write or admin'),
    },
  },
  {
    method: 'get',
    path: '/v1-consent',
    operationId: 'readConsent',
    summary: 'Read a subject’s current consent and history',
    tag: 'Consent',
    security: 'read',
    parameters: [
      { name: 'anonymous_id', in: 'query', description: 'The visitor (one of anonymous_id, user_id is required)', schema: Type.String() },
      { name: 'user_id', in: 'query', description: 'The user, including the visitors stitched to their profile', schema: Type.String() },
      { name: 'limit', in: 'query', description: 'History entries per page, 1 to 200 (default 50)', schema: Type.Integer({ minimum: 1, maximum: 200, default: 50 }) },
      { name: 'cursor', in: 'query', description: 'next_cursor of the previous page', schema: Type.String() },
    ],
    responses: {
      200: ok('Current decision per purpose, and history newest first', ConsentReadSchema),
      400: badRequest('Invalid parameters', [
        ['subject', 'Neither anonymous_id nor user_id', ConsentMessages.subjectRequired],
        ['limit', 'limit out of range', ConsentMessages.invalidLimit],
        ['cursor', 'Unreadable cursor', ConsentMessages.invalidCursor],
      ]),
      ...consentErrors('read or admin'),
    },
  },
];

const profileId: Parameter = { name: 'id', in: 'path', required: true, description: 'Profile UUID or canonical_id (a merged-away id stands for its survivor)', schema: Type.String({ minLength: 1 }) };
/** The Profiles API's own 400 messages (invalid limit, offset, ...) are not the spec's: described, not quoted. */
const readErrors = (notFoundMessages: Array<[string, string, string]>, badRequests: Array<[string, string, string]>): Record<number, ResponseSpec> => ({
  400: badRequest('Invalid parameters (limit, offset, sort, a repeated parameter, ...), or a merge of a profile into itself', badRequests),
  401: unauthorized(),
  403: forbidden('read or admin'),
  404: notFound(notFoundMessages),
  413: smallBodyTooLarge(),
  429: rateLimited(Limits.rate.profilesReadPerOrgIp),
  500: internalError(),
  503: unavailable(),
});
const UNMATCHED: [string, string, string] = ['route', 'Unmatched route under /v1-profiles', Messages.notFound];
const NO_PROFILE: [string, string, string] = ['profile', 'Unknown or other-organisation profile', Messages.profileNotFound];
const query = (name: string, description: string, schema: TSchema): Parameter => ({ name, in: 'query', description, schema });
const limitParam = (bounds: { defaultLimit: number; maxLimit: number }) => query('limit', `Default ${bounds.defaultLimit}; larger values are clamped to ${bounds.maxLimit}`, Type.Integer({ minimum: 1, default: bounds.defaultLimit }));
const offsetParam = query('offset', 'Rows to skip', Type.Integer({ minimum: 0, default: 0 }));

const profiles: Operation[] = [
  {
    method: 'get',
    path: '/v1-profiles',
    operationId: 'listProfiles',
    summary: 'List profiles',
    tag: 'Profiles',
    security: 'read',
    parameters: [
      limitParam(Limits.profileList),
      offsetParam,
      query('identified', 'Only profiles with (true) or without (false) a known userId', Type.Boolean()),
      query('sort_by', 'Sort field', Type.Union(['last_seen_at', 'first_seen_at', 'event_count', 'session_count', 'engagement_score', 'created_at'].map((f) => Type.Literal(f)), { default: 'last_seen_at' })),
      query('sort_order', 'Sort order', Type.Union([Type.Literal('desc'), Type.Literal('asc')], { default: 'desc' })),
    ],
    responses: { 200: ok('A page of profiles', ProfileListSchema), ...readErrors([UNMATCHED], []) },
  },
  {
    method: 'get',
    path: '/v1-profiles/search',
    operationId: 'searchProfiles',
    summary: 'Search profiles by email, user_id, anonymous_id or free text',
    tag: 'Profiles',
    security: 'read',
    parameters: [
      query('email', 'Exact email (lower-cased)', Type.String()),
      query('user_id', 'Known user id', Type.String()),
      query('anonymous_id', 'Anonymous id', Type.String()),
      query('q', `Free text, at most ${Limits.search.maxQueryLength} characters (alias: query)`, Type.String({ maxLength: Limits.search.maxQueryLength })),
      query('partial', 'Substring matching', Type.Boolean({ default: false })),
      limitParam(Limits.search),
    ],
    responses: { 200: ok('Matching profiles', ProfileSearchSchema), ...readErrors([UNMATCHED], [['missing', 'No search parameter', Messages.searchParameterRequired]]) },
  },
  {
    method: 'get',
    path: '/v1-profiles/{id}',
    operationId: 'getProfile',
    summary: 'A profile’s detail',
    tag: 'Profiles',
    security: 'read',
    parameters: [profileId],
    responses: { 200: ok('The profile', ProfileFoundSchema), ...readErrors([NO_PROFILE, UNMATCHED], []) },
  },
  {
    method: 'get',
    path: '/v1-profiles/{id}/events',
    operationId: 'listProfileEvents',
    summary: 'A profile’s events, newest first',
    tag: 'Profiles',
    security: 'read',
    parameters: [
      profileId,
      limitParam(Limits.profileEvents),
      offsetParam,
      query('cursor', 'next_cursor of the previous page; takes precedence over offset', Type.String()),
      query('event_name', 'Only events of this stored name', Type.String({ maxLength: Limits.eventNameMaxLength })),
      query('precise_total', '1: an exact total on the cursor path', Type.Union([Type.Literal('1'), Type.Literal('0')])),
    ],
    responses: { 200: ok('A page of events', ProfileEventsSchema), ...readErrors([NO_PROFILE], [['cursor', 'Malformed cursor', Messages.invalidCursor]]) },
  },
  {
    method: 'get',
    path: '/v1-profiles/{id}/identities',
    operationId: 'getProfileIdentities',
    summary: 'A profile’s identity signals, fingerprints and click IDs',
    tag: 'Profiles',
    security: 'read',
    parameters: [profileId],
    responses: { 200: ok('Signals, fingerprints and click IDs', ProfileIdentitiesSchema), ...readErrors([NO_PROFILE], []) },
  },
  {
    method: 'get',
    path: '/v1-profiles/{id}/merges',
    operationId: 'listProfileMerges',
    summary: 'The merge journal of a profile, newest first',
    description:
      'Additive within v1. Every merge that made the profile: into it, or into a profile merged into it (alias, identify, shared identifier, admin merge), with what caused it (the rule, the identifier kind that linked the two, the event, the actor) and when. A merged-away id stands for its survivor. Keyset-paged: pass `next_cursor` as `cursor` for older entries. Rate limit: the GET routes’ bucket.',
    tag: 'Profiles',
    security: 'read',
    parameters: [
      profileId,
      limitParam(Limits.profileMerges),
      query('cursor', 'next_cursor of the previous page', Type.String()),
    ],
    responses: { 200: ok('A page of the journal', ProfileMergesSchema), ...readErrors([NO_PROFILE], [['cursor', 'Malformed cursor', Messages.invalidCursor]]) },
  },
  {
    method: 'post',
    path: '/v1-profiles/merge',
    operationId: 'mergeProfiles',
    summary: 'Merge one profile into another (destructive)',
    tag: 'Profiles',
    security: 'admin',
    requestBody: {
      schema: Type.Object({ source_profile_id: Type.String(), target_profile_id: Type.String(), reason: Type.Optional(Type.String()) }, { additionalProperties: true }),
      contentTypes: ['application/json'],
    },
    responses: {
      200: ok('Merged', ProfilesMergedSchema),
      ...readErrors([['profiles', 'A missing or other-organisation profile', Messages.mergeProfilesNotFound], UNMATCHED], []),
      403: forbidden('admin'),
      429: rateLimited(Limits.rate.profilesMergePerOrgIp),
    },
  },
];

const erasureExample = {
  success: true,
  erasure: {
    id: '0b7e4c1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b',
    status: 'pending',
    failure_reason: null,
    requested_by_kind: 'email',
    profile_id: '8d0f3a4c-5b6e-8f70-8a1b-2c3d4e5f6a7b',
    canonical_id: 'prf_0123456789abcdefghjkmnpqrs',
    scope: ['profiles', 'identities', 'events', 'sessions', 'click_ids', 'fingerprints', 'conversions', 'consent'],
    actor: 'admin-key:5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b',
    reason: 'Data subject request #4411',
    requested_at: at,
    completed_at: null,
    profiles_erased: null,
  },
};
const erasureConflict = { description: 'An erasure of this profile (or identifier) was requested before, pending or done; `erasure_id` names it', schemas: [ErasureConflictSchema], examples: [example('repeated', 'A second request', { success: false, error: Messages.erasureAlreadyRequested, erasure_id: erasureExample.erasure.id })] };
/** The erasure routes: admin key, their own rate bucket, 256 KiB bodies. */
const erasureErrors = (notFoundMessages: Array<[string, string, string]>, badRequests: Array<[string, string, string]>): Record<number, ResponseSpec> => ({
  ...readErrors(notFoundMessages, badRequests),
  400: badRequest('Invalid body', badRequests),
  403: forbidden('admin'),
  429: rateLimited(Limits.rate.profilesErasePerOrgIp),
});
const withoutBadRequest = (responses: Record<number, ResponseSpec>): Record<number, ResponseSpec> => Object.fromEntries(Object.entries(responses).filter(([status]) => status !== '400'));
const ERASE_BODY_ERRORS: Array<[string, string, string]> = [
  ['content_type', 'Content-Type is not application/json', Messages.contentTypeNotJson],
  ['invalid_json', 'Unparsable body', Messages.invalidJson],
  ['empty', 'No body (send `{}`)', Messages.emptyBody],
  ['not_object', 'The body is not a JSON object', Messages.erasureBodyNotObject],
  ['reason', 'reason is not a string of at most 1000 characters', Messages.erasureReasonInvalid],
];
const erasureNote =
  'Additive within v1. Records the request (who, when, what, scope) and answers 202 with status `pending`; the identity resolver erases the person asynchronously from every store (profile and every profile merged into it, identities, events, sessions, click IDs, fingerprints, unsent conversions; sent conversions keep only hashes; consent decisions keep only that a decision existed), suppresses their identifiers (new events carrying them are dropped) and publishes the tombstone on `profiles.erased`. Poll `GET /v1-profiles/{id}/erase` (the erasure’s id or the profile’s) until `done` or `failed`. Rate limit: 10 per minute per (organisation, IP), a bucket of its own.';

profiles.push(
  {
    method: 'post',
    path: '/v1-profiles/{id}/erase',
    operationId: 'eraseProfile',
    summary: 'Erase the person of a profile (and every profile merged into it)',
    description: erasureNote,
    tag: 'Profiles',
    security: 'admin',
    parameters: [profileId],
    requestBody: {
      schema: Type.Object({ reason: Type.Optional(Type.String({ maxLength: 1000 })) }, { additionalProperties: true }),
      contentTypes: ['application/json'],
      examples: [example('reason', 'With the operator’s note', { reason: 'Data subject request #4411' })],
    },
    responses: {
      202: ok('Recorded; carried out asynchronously', ErasureFoundSchema, [example('pending', 'Recorded', erasureExample)]),
      409: erasureConflict,
      ...erasureErrors([NO_PROFILE, UNMATCHED], ERASE_BODY_ERRORS),
    },
  },
  {
    method: 'post',
    path: '/v1-profiles/erase',
    operationId: 'eraseByIdentifier',
    summary: 'Erase the person an identifier names (user_id, anonymous_id, email or phone)',
    description: `${erasureNote} Exactly one identifier; email and phone are normalised as the resolver normalises them. An identifier nobody has is 404 \`Profile not found\`.`,
    tag: 'Profiles',
    security: 'admin',
    requestBody: {
      schema: Type.Object(
        { ...Object.fromEntries(ERASABLE_IDENTIFIER_TYPES.map((t) => [t, Type.Optional(Type.String({ minLength: 1, maxLength: Limits.identifierMaxLength }))])), reason: Type.Optional(Type.String({ maxLength: 1000 })) },
        { additionalProperties: true },
      ),
      contentTypes: ['application/json'],
      examples: [example('email', 'By email', { email: 'ann@example.com', reason: 'Data subject request #4411' })],
    },
    responses: {
      202: ok('Recorded; carried out asynchronously', ErasureFoundSchema, [example('pending', 'Recorded', erasureExample)]),
      409: erasureConflict,
      ...erasureErrors(
        [NO_PROFILE],
        [
          ...ERASE_BODY_ERRORS,
          ['identifier', 'None, or more than one, of the identifiers', Messages.erasureIdentifierRequired],
          ['email', 'Not an email address', Messages.erasureIdentifierInvalid('email')],
          ['phone', 'Not a phone number', Messages.erasureIdentifierInvalid('phone')],
          ['user_id', 'Not a string of 1 to 200 characters', Messages.erasureIdentifierInvalid('user_id')],
        ],
      ),
    },
  },
  {
    method: 'get',
    path: '/v1-profiles/{id}/erase',
    operationId: 'getErasure',
    summary: 'An erasure request and its status (pending, done, failed)',
    tag: 'Profiles',
    security: 'admin',
    parameters: [{ name: 'id', in: 'path', required: true, description: 'The erasure’s id (as answered), or the profile’s UUID or canonical_id (also once erased)', schema: Type.String({ minLength: 1 }) }],
    responses: {
      200: ok('The request; `done` once every identity store is erased and the tombstone is queued', ErasureFoundSchema, [
        example('done', 'Carried out', { ...erasureExample, erasure: { ...erasureExample.erasure, status: 'done', completed_at: at, profiles_erased: 2 } }),
      ]),
      ...withoutBadRequest(erasureErrors([['erasure', 'Unknown or other-organisation erasure request', Messages.erasureNotFound]], [])),
    },
  },
);

const unmergeExample = {
  success: true,
  unmerge: {
    id: '3c9d2e1f-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
    merge_id: '1042',
    status: 'pending',
    failure_reason: null,
    actor: 'admin-key:5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b',
    requested_at: at,
    completed_at: null,
    profile_ids: null,
  },
};
const UNMERGE_BODY_ERRORS: Array<[string, string, string]> = [
  ['content_type', 'Content-Type is not application/json', Messages.contentTypeNotJson],
  ['invalid_json', 'Unparsable body', Messages.invalidJson],
  ['empty', 'No body', Messages.emptyBody],
  ['not_object', 'The body is not a JSON object', Messages.unmergeBodyNotObject],
  ['merge_id', 'merge_id missing', Messages.unmergeMergeIdRequired],
  ['merge_id_invalid', 'merge_id is not a journal entry’s id', Messages.unmergeMergeIdInvalid],
];

profiles.push(
  {
    method: 'post',
    path: '/v1-profiles/{id}/unmerge',
    operationId: 'unmergeProfile',
    summary: 'Undo a merge of the profile’s journal',
    description:
      'Additive within v1. `merge_id` names an entry of `GET /v1-profiles/{id}/merges`. Records the request and answers 202 with status `pending`; the identity resolver then resolves the merged profile’s stored events again, in the order they arrived, with a rule that keeps the identifiers that made the two profiles apart: both come back as the events make them had the merge never happened (events, identities, click IDs, sessions, fingerprints, first and last touch by event time, engagement, traits), under their own ids. Later merges that depended on it are undone with it; admin merges are applied again. The rule stays: an identify, shared identifier or alias never joins the two again (a refused merge is an ingestion warning), also in a replay; an admin merge of the two lifts it. `profiles.changes` carries `unmerged` for the profile that came back (`unmergedFrom` names the other) and `updated` for the other. Nothing is counted as usage, and conversions already sent stay sent. Idempotent: the same entry again answers the same request (202 while pending, 200 once settled). Poll `GET /v1-profiles/{id}/unmerge` with the request’s id. A profile made and merged within one batch of the resolver was never stored apart, so it has no journal entry to undo. Rate limit: the merge bucket.',
    tag: 'Profiles',
    security: 'admin',
    parameters: [profileId],
    requestBody: {
      schema: Type.Object({ merge_id: Type.String({ pattern: '^[1-9][0-9]*$' }) }, { additionalProperties: true }),
      contentTypes: ['application/json'],
      examples: [example('entry', 'The journal entry to undo', { merge_id: '1042' })],
    },
    responses: {
      200: ok('Asked before, and settled (done or failed): the same request', UnmergeFoundSchema, [
        example('done', 'Done', { ...unmergeExample, unmerge: { ...unmergeExample.unmerge, status: 'done', completed_at: at, profile_ids: ['8d0f3a4c-5b6e-8f70-8a1b-2c3d4e5f6a7b', '1a2b3c4d-5e6f-8a7b-8c9d-0e1f2a3b4c5d'] } }),
      ]),
      202: ok('Recorded (or asked before and still pending); carried out asynchronously', UnmergeFoundSchema, [example('pending', 'Recorded', unmergeExample)]),
      ...readErrors([NO_PROFILE, ['merge', 'No such entry in the profile’s journal', Messages.mergeNotFound], UNMATCHED], []),
      400: badRequest('Invalid body', UNMERGE_BODY_ERRORS),
      403: forbidden('admin'),
      409: {
        description: 'The merge cannot be undone: another unmerge undid it already (`undone_by` names it), the profile holds more events than one unmerge resolves again, or it holds alias events stored before unmerges existed (replay first)',
        schemas: [MergeUndoneSchema, ErrorEnvelopeSchema],
        examples: [
          example('undone', 'Undone by another unmerge', { success: false, error: Messages.mergeAlreadyUndone, undone_by: unmergeExample.unmerge.id }),
          example('too_large', `More than ${Limits.unmergeMaxEvents} events`, { success: false, error: Messages.unmergeTooLarge }),
          example('needs_replay', 'Alias events without their previousId', { success: false, error: Messages.unmergeNeedsReplay }),
        ],
      },
      429: rateLimited(Limits.rate.profilesMergePerOrgIp),
    },
  },
  {
    method: 'get',
    path: '/v1-profiles/{id}/unmerge',
    operationId: 'getUnmerge',
    summary: 'An unmerge request and its status (pending, done, failed)',
    tag: 'Profiles',
    security: 'admin',
    parameters: [{ name: 'id', in: 'path', required: true, description: 'The unmerge’s id, as answered', schema: Type.String({ minLength: 1 }) }],
    responses: {
      200: ok('The request; `done` with the two profiles’ ids once carried out', UnmergeFoundSchema, [example('pending', 'Pending', unmergeExample)]),
      ...withoutBadRequest(readErrors([['unmerge', 'Unknown or other-organisation unmerge request', Messages.unmergeNotFound]], [])),
      403: forbidden('admin'),
    },
  },
);

const operations: Operation[] = [
  {
    method: 'get',
    path: '/openapi.json',
    operationId: 'getOpenApiDocument',
    summary: 'This document',
    tag: 'Operations',
    security: 'none',
    responses: { 200: ok('The OpenAPI 3.1 document', Type.Object({ openapi: Type.Literal('3.1.0') }, { additionalProperties: true })) },
  },
  { method: 'get', path: '/healthz', atRoot: true, operationId: 'liveness', summary: 'Liveness: the process serves HTTP', tag: 'Operations', security: 'none', responses: { 200: ok('Alive', LivenessSchema) } },
  {
    method: 'get',
    path: '/readyz',
    atRoot: true,
    operationId: 'readiness',
    summary: 'Readiness: every dependency check',
    tag: 'Operations',
    security: 'none',
    responses: { 200: ok('Ready (checks ok or degraded)', ReadinessSchema), 503: ok('Not ready (a check failed)', ReadinessSchema) },
  },
];

/** Every operation of the HTTP API, in document order. */
export const OPERATIONS: readonly Operation[] = [...ingestion, ...segment, ...consent, ...profiles, ...operations];
