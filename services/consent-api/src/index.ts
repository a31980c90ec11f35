export { consentMigrations } from './migrations';
export { consentService } from './service';
