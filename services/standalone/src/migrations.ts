import { busMigrations } from '@svc/bus';
import { consentMigrations } from '@svc/consent-api';
import { accountsMigrations, rateLimitMigrations, type MigrationSet } from '@svc/runtime';

/** Every service's migrations, in the order they apply. */
export const allMigrations: readonly MigrationSet[] = [accountsMigrations, rateLimitMigrations, busMigrations, consentMigrations];
