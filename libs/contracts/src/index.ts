export { API_VERSION, BodyLimitHints, ErrorCodes, EventReasons, Headers, Messages, type ErrorCode, type RequiredKeyType } from './messages';
export { Limits } from './limits';
export { isValidIdentifier } from './identifiers';
export { CLICK_ID_TYPES, EVENT_TYPES, STORED_EVENT_NAMES, type ClickType, type InboundEvent } from './events';
export { checkEvent } from './validate-event';
export { toStorable } from './storable';
export {
  deadLetterTopicName,
  RawEventEnvelopeSchema,
  Topics,
  type ConsentDecisionEvent,
  type ConversionCandidate,
  type ProfileChange,
  type RawEventEnvelope,
  type ResolvedEvent,
  type TopicSpec,
} from './topics';
export { PROFILE_SORT_FIELDS, type ProfileSortField } from './profiles';
export { firstSchemaError, validatorFor } from './schema-validator';
export {
  checkConsentDecision,
  CONSENT_PURPOSES,
  ConsentMessages,
  grantsFingerprinting,
  type ConsentDecision,
  type ConsentPurpose,
  type ConsentRecordView,
  type CurrentConsent,
} from './consent';
export { DEFAULT_QUALIFYING_NAMES, qualifiesAsConversion } from './conversion-rules';
export {
  checkEngagementRules,
  DEFAULT_ENGAGEMENT_RULES,
  formatProblem,
  type EngagementCondition,
  type EngagementRules,
} from './engagement-rules';
