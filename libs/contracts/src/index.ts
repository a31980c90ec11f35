export { API_VERSION, BodyLimitHints, ErrorCodes, EventReasons, Headers, Messages, type ErrorCode, type RequiredKeyType } from './messages';
export { Limits } from './limits';
export { softCapBreaches, type SoftCapBreach } from './soft-caps';
export { isValidIdentifier } from './identifiers';
export {
  CLICK_ID_TYPES,
  EVENT_TYPES,
  InboundEventSchema,
  STORED_EVENT_NAMES,
  type ClickType,
  type EventType,
  type InboundEvent,
} from './events';
export { checkEvent } from './validate-event';
export { canonicalTimestamp } from './timestamps';
export { toStorable } from './storable';
export {
  DEAD_LETTER_HEADERS,
  deadLetterTopicName,
  RawEventContentSchema,
  RawEventEnvelopeSchema,
  RawEventSealedSchema,
  RawLogMessageSchema,
  Topics,
  ERASABLE_IDENTIFIER_TYPES,
  type ConsentDecisionEvent,
  type ConversionCandidate,
  type ErasableIdentifierType,
  type ErasureRequest,
  type ProfileErased,
  type ProfileChange,
  type RawEventContent,
  type RawEventEnvelope,
  type RawEventSealed,
  type RawLogMessage,
  type ResolvedEvent,
  type TopicSpec,
} from './topics';
export { PROFILE_SORT_FIELDS, type ProfileSortField } from './profiles';
export { firstSchemaError, validatorFor } from './schema-validator';
export { isDateTime, schemaFormats } from './formats';
export {
  checkConsentDecision,
  CONSENT_PURPOSES,
  ConsentDecisionSchema,
  ConsentMessages,
  grantsFingerprinting,
  type ConsentDecision,
  type ConsentPurpose,
} from './consent';
export { DEFAULT_QUALIFYING_NAMES, qualifiesAsConversion } from './conversion-rules';
export { formatProblem, isObject, Problems, type DocumentProblem } from './document-problems';
export {
  checkEngagementRules,
  DEFAULT_ENGAGEMENT_RULES,
  type EngagementCondition,
  type EngagementRules,
} from './engagement-rules';
export {
  BatchResultSchema,
  BodyTooLargeSchema,
  ConsentReadSchema,
  ConsentRecordedSchema,
  ERASURE_SCOPE,
  ERASURE_STATUSES,
  ERASURE_TARGET_KINDS,
  ErasureConflictSchema,
  ErasureFoundSchema,
  ErrorEnvelopeSchema,
  LivenessSchema,
  PerOrgRateLimitedSchema,
  ProfileEventsSchema,
  ProfileFoundSchema,
  ProfileIdentitiesSchema,
  MERGE_REASONS,
  MergeJournalEntrySchema,
  type MergeJournalEntry,
  ProfileMergesSchema,
  ProfileListSchema,
  ProfileSearchSchema,
  ProfilesMergedSchema,
  QuotaPausedSchema,
  ReadinessSchema,
  MergeUndoneSchema,
  UNMERGE_STATUSES,
  UnmergeFoundSchema,
  UnmergeViewSchema,
  type UnmergeView,
  type ClickIdView,
  type ConsentRecordView,
  type CurrentConsent,
  type ErasureStatus,
  type ErasureTargetKind,
  type ErasureView,
  type FingerprintView,
  type IdentitySignalView,
  type ProfileDetail,
  type ProfileListItem,
  type StoredEventView,
  type Touch,
} from './api-responses';
export { SegmentBatchBodySchema, SegmentSingleEventSchema } from './segment';
// Every named schema is public: the OpenAPI document (libs/openapi) names its components after them.
export { BatchBodySchema } from './events';
export { ConsentDecisionEventSchema, ConversionCandidateSchema, ErasureRequestSchema, PROFILE_CHANGE_KINDS, ProfileChangeSchema, ProfileErasedSchema, ResolvedEventSchema, type ProfileChangeKind } from './topics';
export { EngagementConditionSchema, EngagementDecaySchema, EngagementRuleSchema, EngagementRulesSchema } from './engagement-rules';
export { ClickIdViewSchema, ConsentRecordViewSchema, ErasureViewSchema, CurrentConsentSchema, FingerprintViewSchema, IdentitySignalViewSchema, ProfileDetailSchema, ProfileListItemSchema, StoredEventViewSchema, TouchSchema } from './api-responses';
export { SegmentMessageSchema } from './segment';
