export { IdentifierHashes, baseHashSql, eventIdentifierHashes, normaliseIdentifier, parseStoredHash, type HashedIdentifier } from './hash';
export { IdentifierHashKeysError, checkIdentifierHashKeys, identifierHashesLeft, rehashStoredIdentifiers, type RehashCounts } from './rehash';
export { privacyMigrations } from './migrations';
export { eraseProfile, recordErasureFailure, type EraseInput, type EraseResult } from './erase';
export {
  appendAudit,
  findErasure,
  getErasure,
  listErasures,
  publishPendingErasures,
  readAudit,
  requestErasure,
  unsuppress,
  unsuppressErasure,
  type AuditAction,
  type AuditView,
  type ErasureRequestInput,
  type ErasureRequestResult,
  type ErasureTarget,
  type UnsuppressInput,
} from './requests';
export { keptOut, suppressedIdentifiers, SUPPRESSED_SQL } from './suppression';
export { UnreadableRawEventError, isSealed, openRawEvent, openRawLog, sealRawEvent, type OpenedRawLog } from './raw-log-seal';
export {
  DataKeyReader,
  MasterKeyMissingError,
  MasterKeyRing,
  RawLogKeyError,
  SUBJECT_KEY_HOLD_MS,
  SubjectKeys,
  deleteSubjectKeys,
  masterKey,
  rewrapSubjectKeys,
  subjectKeysByMasterKey,
  type DataKey,
  type MasterKey,
} from './subject-keys';
export {
  checkedIdentifierHashes,
  identifierHashConfigSpec,
  identifierHashes,
  masterKeyRing,
  rawLogKeyConfigSpec,
  requiredIdentifierHashConfigSpec,
  requiredRawLogKeyConfigSpec,
  type RawLogKeySettings,
} from './config';
