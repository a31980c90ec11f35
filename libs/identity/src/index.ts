/**
 * The identity schema's one library: every service that reads or writes
 * `identity.*` does it through these, so a change to an identity table is
 * made here and nowhere else.
 */
export { identityConfigSpec } from './config';
export { identityMigrations } from './migrations';
export { UUID_PATTERN, eventIdFor, namedLockKey, profileIdsFor, signalLockKey, type ProfileIds } from './ids';
export {
  DEFAULT_PHONE_COUNTRY_CODE,
  SIGNAL_CONFIDENCE,
  SIGNAL_TYPES,
  eventIdentity,
  isPhoneRegion,
  mayBePhone,
  normaliseEmail,
  normalisePhone,
  personTraits,
  signalKey,
  signalsOf,
  type EventIdentity,
  type PhoneDefault,
  type Signal,
  type SignalType,
} from './signals';
export { ANONYMOUS_IDS_OF_USER_SQL, clickIdsOfProfile, currentEngagementScore, engagementHalfLifeDays, engagementScoreSql, profileStats, resolveProfileId, type ProfileClick, type ProfileStats } from './profiles';
export { adminMergeProfiles, mergeLockedProfiles, mergeProfiles, type AdminMergeInput, type MergeInput, type MergeReason } from './merge';
export { HOLD_OFF_REPLAY, excludeWriters, holdOffReplay } from './replay-lock';
export {
  adminMergesToReapply,
  carryEngagementRules,
  carryUnrelayedOutbox,
  eventsStoredIn,
  liveProfileCount,
  setIdentitySchemaAside,
  type AdminMergeRecord,
} from './replay-schema';
export {
  ConcurrentWriteError,
  RetriesExhaustedError,
  classifyFailure,
  inTransactionWithRetry,
  jittered,
  type FailureKind,
  type TransactionRetryOptions,
} from './retry';
export {
  DEFAULT_COMPILED_RULES,
  MAX_HALF_LIVES,
  NEGLIGIBLE_SCORE,
  combineEngagement,
  compileEngagementRules,
  conditionHolds,
  decayScore,
  eventPoints,
  propertyAt,
  scoringTime,
  type CompiledEngagementRules,
  type EngagementState,
} from './engagement';
export {
  BLOCKABLE_TYPES,
  DEFAULT_IDENTITY_RULES,
  IdentityRuleLimits,
  LINKING_TYPES,
  checkIdentityRules,
  compileIdentityRules,
  getIdentityRules,
  phoneDefaultOf,
  readIdentityRules,
  setIdentityRules,
  type BlockableType,
  type CompiledIdentityRules,
  type IdentityRules,
  type LinkingType,
  type StoredIdentityRules,
} from './identity-rules';
export {
  WARNINGS_KEPT_PER_ORG,
  WARNING_KINDS,
  readWarnings,
  recordWarnings,
  type IngestionWarning,
  type WarningKind,
  type WarningView,
  type WarningsReport,
} from './warnings';
export {
  QUEUE_PHONE_RESTATEMENT_SQL,
  claimRestatement,
  dropPhones,
  finishRestatement,
  pendingRestatements,
  queuePhoneRestatement,
  readHeldAndWrittenPhones,
  readPhoneSightings,
  type HeldPhone,
  type PhoneSighting,
  type RestatementChunk,
  type RestatementStep,
  type WrittenPhone,
} from './phone-restatement';
export { compileStoredEngagementRules, getEngagementRules, setEngagementRules, type StoredEngagementRules } from './engagement-rules-store';
export {
  OUTBOX_INSERT,
  claimOldestOutboxRows,
  deleteOutboxRows,
  keepUnsentEvents,
  outboxRecords,
  profileChange,
  readResolvedEvents,
  resolvedEventOf,
  resolvedEventsRef,
  writeOutbox,
  type OutboxMessage,
  type OutboxRow,
  type OutboxTopic,
  type OutputTopics,
} from './outbox-records';
export {
  addUsageAndOutputs,
  insertProfiles,
  loadSurvivors,
  lockIdentities,
  mergePlannedProfiles,
  readBatchState,
  readEngagementRules,
  readSignalCounts,
  rescoreAndReadContacts,
  signalOfOrg,
  survivorsToLoad,
  writeEffects,
  type BatchLookups,
  type BatchState,
  type ClickIdUpsert,
  type Contacts,
  type Effects,
  type EventRow,
  type FingerprintUpsert,
  type NewProfileRow,
  type PlannedMergeRow,
  type ProfileRow,
  type ProfileUpdate,
  type ResolutionMethod,
  type SessionRow,
  type SignalCounts,
  type SignalRow,
  type SignalUpsert,
  type Touch,
} from './batch-store';
// The privacy schema's port: erasure, suppression, the audit trail, the raw log's keys (privacy/index.ts lists them).
export * from './privacy';
export {
  KEPT_APART_SQL,
  claimPendingUnmerge,
  findUnmerge,
  finishUnmerge,
  journalOf,
  keepApart,
  lockMergedCluster,
  readKeptApart,
  redirect,
  requestUnmerge,
  settleJournal,
  survivorsOf,
  takeApart,
  type KeptApartPair,
  type KeptApartSide,
  type MergeJournalRow,
  type MergedCluster,
  type PendingUnmerge,
  type StoredEventRow,
  type UnmergeRequestResult,
} from './unmerge';
