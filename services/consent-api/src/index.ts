export { consentMigrations } from './migrations';
export { buildConsentApi } from './service';
