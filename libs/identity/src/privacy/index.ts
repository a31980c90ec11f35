export { clickIdHash, eventIdentifierHashes, identifierHash, normaliseIdentifier, type HashedIdentifier } from './hash';
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
export { suppressedIdentifiers, SUPPRESSED_SQL } from './suppression';
