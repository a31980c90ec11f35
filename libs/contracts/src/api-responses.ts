import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { CONSENT_PURPOSES } from './consent';
import { Limits } from './limits';

/**
 * The response bodies of the HTTP API, as JSON Schema: the one definition
 * the services' types are derived from (Static<...>) and the OpenAPI
 * document (libs/openapi) is generated from. Objects are closed
 * (additionalProperties: false), so a field a service adds without adding it
 * here fails the response checks of the integration tests.
 */

const Timestamp = Type.String({ format: 'date-time' });
const Uuid = Type.String({ format: 'uuid' });
const Count = Type.Integer({ minimum: 0 });
const FreeObject = Type.Record(Type.String(), Type.Unknown());
const closed = <T extends Parameters<typeof Type.Object>[0]>(properties: T, description?: string) =>
  Type.Object(properties, { additionalProperties: false, ...(description ? { description } : {}) });
const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

// ---------------------------------------------------------------- errors

/** The request-level failure body: `{ success: false, error, code? }`. */
export const ErrorEnvelopeSchema = closed(
  {
    success: Type.Literal(false),
    /** One of the spec's messages (or an additive one of ours). */
    error: Type.String(),
    /** Machine-readable: `rate_limited`, `ip_not_allowed`, `origin_not_allowed`. */
    code: Type.Optional(Type.String()),
  },
  'Request-level failure',
);

/** 413: the envelope plus the limit and a hint. */
export const BodyTooLargeSchema = closed(
  {
    success: Type.Literal(false),
    error: Type.String(),
    limit_bytes: Type.Integer({ minimum: 1 }),
    hint: Type.String(),
  },
  'Request body too large',
);

/** The paused-ingestion 429: the envelope plus where to upgrade. */
export const QuotaPausedSchema = closed(
  {
    success: Type.Literal(false),
    error: Type.String(),
    upgrade_url: Type.String(),
  },
  'Ingestion paused by the plan',
);

/** The spec's per-organisation 429 carries only `error`. */
export const PerOrgRateLimitedSchema = closed({ error: Type.String() }, 'Per-organisation rate limit hit');

// ---------------------------------------------------------------- ingestion

/** 200 of POST /v1-batch (and of the Segment-compatible routes). */
export const BatchResultSchema = closed(
  {
    /** false when any event failed. */
    success: Type.Boolean(),
    processed: Count,
    failed: Count,
    /** `<messageId>: <reason>`, at most the first ten failures; only when some failed. */
    errors: Type.Optional(Type.Array(Type.String(), { maxItems: 10 })),
    duration_ms: Count,
  },
  'Batch processed; inspect failed and errors',
);
export type BatchResult = Static<typeof BatchResultSchema>;

// ---------------------------------------------------------------- consent

/** One stored decision as GET /v1-consent returns it (history entries). */
export const ConsentRecordViewSchema = closed({
  id: Uuid,
  anonymous_id: Type.String(),
  user_id: nullable(Type.String()),
  purposes: Type.Partial(closed(Object.fromEntries(CONSENT_PURPOSES.map((p) => [p, Type.Boolean()])) as Record<(typeof CONSENT_PURPOSES)[number], ReturnType<typeof Type.Boolean>>)),
  source: Type.String(),
  client_timestamp: nullable(Timestamp),
  received_at: Timestamp,
});
export type ConsentRecordView = Static<typeof ConsentRecordViewSchema>;

/** The current decision for one purpose: the newest record that named it. */
export const CurrentConsentSchema = closed({
  granted: Type.Boolean(),
  source: Type.String(),
  decided_at: Timestamp,
  record_id: Uuid,
});
export type CurrentConsent = Static<typeof CurrentConsentSchema>;

export const ConsentRecordedSchema = closed({ success: Type.Literal(true), id: Uuid, received_at: Timestamp }, 'Decision recorded');

export const ConsentReadSchema = closed(
  {
    success: Type.Literal(true),
    anonymous_id: nullable(Type.String()),
    user_id: nullable(Type.String()),
    /** Per purpose, the newest decision that named it. */
    current: Type.Partial(closed(Object.fromEntries(CONSENT_PURPOSES.map((p) => [p, CurrentConsentSchema])) as Record<(typeof CONSENT_PURPOSES)[number], typeof CurrentConsentSchema>)),
    /** Newest first. */
    history: Type.Array(ConsentRecordViewSchema),
    limit: Type.Integer({ minimum: 1, maximum: 200 }),
    has_more: Type.Boolean(),
    next_cursor: nullable(Type.String()),
  },
  'Current decisions and history',
);

// ---------------------------------------------------------------- profiles

/** A campaign touch: where a visit came from, and when (event time). */
export const TouchSchema = closed({
  source: nullable(Type.String()),
  medium: nullable(Type.String()),
  campaign: nullable(Type.String()),
  at: Timestamp,
});
export type Touch = Static<typeof TouchSchema>;

export const SIGNAL_TYPES = ['user_id', 'email', 'phone', 'anonymous_id'] as const;

export const IdentitySignalViewSchema = closed({
  signal_type: Type.Union(SIGNAL_TYPES.map((t) => Type.Literal(t))),
  signal_value: Type.String(),
  confidence: Type.Number(),
  first_seen_at: Timestamp,
  last_seen_at: Timestamp,
  occurrence_count: Count,
});
export type IdentitySignalView = Static<typeof IdentitySignalViewSchema>;

export const FingerprintViewSchema = closed({
  fingerprint_hash: Type.String(),
  stability_score: Type.Number(),
  first_seen_at: Timestamp,
  last_seen_at: Timestamp,
  occurrence_count: Count,
});
export type FingerprintView = Static<typeof FingerprintViewSchema>;

export const ClickIdViewSchema = closed({
  click_type: Type.String(),
  click_id: Type.String(),
  campaign_source: nullable(Type.String()),
  campaign_medium: nullable(Type.String()),
  first_seen_at: Timestamp,
  is_exhausted: Type.Boolean(),
});
export type ClickIdView = Static<typeof ClickIdViewSchema>;

/** One entry of the profile list and of search results. */
export const ProfileListItemSchema = closed({
  id: Uuid,
  canonical_id: Type.String(),
  last_seen_at: Timestamp,
  first_seen_at: Timestamp,
  event_count: Count,
  session_count: Count,
  engagement_score: Type.Number(),
  created_at: Timestamp,
  identified: Type.Boolean(),
  first_touch: nullable(TouchSchema),
  last_touch: nullable(TouchSchema),
});
export type ProfileListItem = Static<typeof ProfileListItemSchema>;

export const ProfileDetailSchema = closed({
  id: Uuid,
  canonical_id: Type.String(),
  /** Active identity signals, strongest first. */
  identities: Type.Array(IdentitySignalViewSchema),
  stats: closed({ total_sessions: Count, events_last_30_days: Count }),
  identified: Type.Boolean(),
  user_id: nullable(Type.String()),
  first_touch: nullable(TouchSchema),
  last_touch: nullable(TouchSchema),
  first_seen_at: Timestamp,
  last_seen_at: Timestamp,
  event_count: Count,
  engagement_score: Type.Number(),
  created_at: Timestamp,
});
export type ProfileDetail = Static<typeof ProfileDetailSchema>;

export const StoredEventViewSchema = closed({
  id: Uuid,
  /** The track event's name, or `$pageview`, `$screen`, `$identify`, `$alias`, `$group`. */
  event_name: Type.String(),
  event_timestamp: Timestamp,
  properties: FreeObject,
  context: FreeObject,
  resolution_method: Type.Union(['new_profile', ...SIGNAL_TYPES].map((m) => Type.Literal(m))),
});
export type StoredEventView = Static<typeof StoredEventViewSchema>;

export const ProfileListSchema = closed(
  {
    success: Type.Literal(true),
    profiles: Type.Array(ProfileListItemSchema, { maxItems: Limits.profileList.maxLimit }),
    total: Count,
    limit: Type.Integer({ minimum: 1, maximum: Limits.profileList.maxLimit }),
    offset: Count,
  },
  'A page of profiles',
);

export const ProfileSearchSchema = closed(
  {
    success: Type.Literal(true),
    profiles: Type.Array(ProfileListItemSchema, { maxItems: Limits.search.maxLimit }),
    count: Count,
  },
  'Matching profiles, most recently seen first',
);

export const ProfileFoundSchema = closed({ success: Type.Literal(true), profile: ProfileDetailSchema }, 'The profile');

export const ProfileEventsSchema = closed(
  {
    success: Type.Literal(true),
    events: Type.Array(StoredEventViewSchema, { maxItems: Limits.profileEvents.maxLimit }),
    total: Count,
    limit: Type.Integer({ minimum: 1, maximum: Limits.profileEvents.maxLimit }),
    /** Offset path only. */
    offset: Type.Optional(Count),
    /** True on the cursor path without precise_total. */
    total_is_estimate: Type.Boolean(),
    has_more: Type.Boolean(),
    /** Pass as `cursor` for the next page; null on the last. */
    next_cursor: nullable(Type.String()),
  },
  'A page of the profile’s events, newest first',
);

export const ProfileIdentitiesSchema = closed(
  {
    success: Type.Literal(true),
    identities: closed({
      signals: Type.Array(IdentitySignalViewSchema),
      fingerprints: Type.Array(FingerprintViewSchema),
      click_ids: Type.Array(ClickIdViewSchema),
    }),
  },
  'Signals, fingerprints and click IDs',
);

export const ProfilesMergedSchema = closed(
  {
    success: Type.Literal(true),
    merged: closed({
      source_profile_id: Uuid,
      target_profile_id: Uuid,
      reason: nullable(Type.String()),
      merged_at: nullable(Timestamp),
    }),
  },
  'Source merged into target',
);

/** Why two profiles were merged: the resolver's rules (identify, trait, alias) or an admin. */
export const MERGE_REASONS = ['identify', 'trait', 'alias', 'admin'] as const;

/** One entry of a profile's merge journal. */
export const MergeJournalEntrySchema = closed(
  {
    /** The entry's id (decimal digits): names it for an unmerge. */
    id: Type.String({ pattern: '^[0-9]+$' }),
    merged_at: Timestamp,
    reason: Type.Union(MERGE_REASONS.map((r) => Type.Literal(r))),
    /** The identifier that linked them: identify and trait, the signal the event shared with the source; alias, the previousId's kind; admin, null. Never its value. */
    signal_type: nullable(Type.Union(['user_id', 'email', 'phone', 'anonymous_id'].map((t) => Type.Literal(t)))),
    /** The profile merged away (its id and canonical_id now stand for the target's survivor). */
    source_profile_id: Uuid,
    source_canonical_id: Type.String(),
    target_profile_id: Uuid,
    /** `identity-resolver`, or `admin-key:<key id>` / `svcctl:<operator>`. */
    actor: Type.String(),
    /** The event that caused it (resolver merges): its id and messageId. */
    event_id: nullable(Uuid),
    message_id: nullable(Type.String()),
    /** What an admin gave as the reason. */
    note: nullable(Type.String()),
    /** When it was undone (by the unmerge `undone_by`, which asked for it or re-resolved its profiles apart), else null. */
    undone_at: nullable(Timestamp),
    undone_by: nullable(Uuid),
  },
  'One merge into the profile or into a profile merged into it (or, once undone, out of it)',
);
export type MergeJournalEntry = Static<typeof MergeJournalEntrySchema>;

export const ProfileMergesSchema = closed(
  {
    success: Type.Literal(true),
    merges: Type.Array(MergeJournalEntrySchema, { maxItems: Limits.profileMerges.maxLimit }),
    limit: Type.Integer({ minimum: 1, maximum: Limits.profileMerges.maxLimit }),
    has_more: Type.Boolean(),
    /** Pass as `cursor` for the next (older) page; null on the last. */
    next_cursor: nullable(Type.String()),
  },
  'The merges that made the profile, newest first',
);

/** What an erasure reaches (every store holding the person; see services/profile-api/README.md). */
export const ERASURE_SCOPE = ['profiles', 'identities', 'events', 'sessions', 'click_ids', 'fingerprints', 'conversions', 'consent'] as const;
/** How an erasure named its person: a profile id / canonical_id, or one of the identifiers. */
export const ERASURE_TARGET_KINDS = ['profile', 'user_id', 'anonymous_id', 'email', 'phone'] as const;
export type ErasureTargetKind = (typeof ERASURE_TARGET_KINDS)[number];
export const ERASURE_STATUSES = ['pending', 'done', 'failed'] as const;
export type ErasureStatus = (typeof ERASURE_STATUSES)[number];

/** An erasure request and where it stands. Carries no personal data (an identifier it was requested by is not repeated). */
export const ErasureViewSchema = closed({
  id: Uuid,
  /** pending → done, or failed with failure_reason. */
  status: Type.Union(ERASURE_STATUSES.map((s) => Type.Literal(s))),
  failure_reason: nullable(Type.String()),
  /** How the request named the person. */
  requested_by_kind: Type.Union(ERASURE_TARGET_KINDS.map((k) => Type.Literal(k))),
  /** The live profile named when the request was recorded. */
  profile_id: Uuid,
  canonical_id: Type.String(),
  scope: Type.Array(Type.Union(ERASURE_SCOPE.map((s) => Type.Literal(s)))),
  /** Who asked: `admin-key:<key id>` or `svcctl:<operator>`. */
  actor: Type.String(),
  reason: nullable(Type.String()),
  requested_at: Timestamp,
  completed_at: nullable(Timestamp),
  /** Once done: profiles erased (the survivor and those merged into it). */
  profiles_erased: nullable(Count),
});
export type ErasureView = Static<typeof ErasureViewSchema>;

export const ErasureFoundSchema = closed({ success: Type.Literal(true), erasure: ErasureViewSchema }, 'The erasure request');

/** 409: an erasure of the profile was requested before; `erasure_id` names it. */
export const ErasureConflictSchema = closed(
  { success: Type.Literal(false), error: Type.String(), erasure_id: Uuid },
  'An erasure of this profile exists already',
);

export const UNMERGE_STATUSES = ['pending', 'done', 'failed'] as const;

/** An unmerge request (POST /v1-profiles/:id/unmerge, additive within v1). */
export const UnmergeViewSchema = closed({
  id: Uuid,
  /** The journal entry undone. */
  merge_id: Type.String({ pattern: '^[0-9]+$' }),
  /** pending → done, or failed with failure_reason. */
  status: Type.Union(UNMERGE_STATUSES.map((s) => Type.Literal(s))),
  failure_reason: nullable(Type.String()),
  /** `admin-key:<key id>` or `svcctl:<operator>`. */
  actor: Type.String(),
  requested_at: Timestamp,
  completed_at: nullable(Timestamp),
  /** Once done: the live profiles the merge's source and target are now, in that order. */
  profile_ids: nullable(Type.Array(Uuid, { minItems: 2, maxItems: 2 })),
});
export type UnmergeView = Static<typeof UnmergeViewSchema>;

export const UnmergeFoundSchema = closed({ success: Type.Literal(true), unmerge: UnmergeViewSchema }, 'The unmerge request');

/** 409: the merge was undone by another unmerge; `undone_by` names it. */
export const MergeUndoneSchema = closed(
  { success: Type.Literal(false), error: Type.String(), undone_by: Uuid },
  'The merge was undone already, by another unmerge',
);

// ---------------------------------------------------------------- operational

export const LivenessSchema = closed({ status: Type.Literal('ok') }, 'The process serves HTTP');

export const ReadinessSchema = closed(
  {
    status: Type.Union([Type.Literal('ready'), Type.Literal('not_ready')]),
    checks: Type.Record(Type.String(), Type.Union([Type.Literal('ok'), Type.Literal('degraded'), Type.Literal('fail')])),
  },
  'Each dependency check',
);
