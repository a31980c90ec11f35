import { busMigrations } from '@svc/bus';
import { consentMigrations } from '@svc/consent-api';
import { conversionsMigrations } from '@svc/conversion-forwarder';
import { identityMigrations } from '@svc/identity';
import { accountsMigrations, rateLimitMigrations, type MigrationSet } from '@svc/runtime';

/** Every service's migrations, in the order they apply. */
export const allMigrations: readonly MigrationSet[] = [accountsMigrations, rateLimitMigrations, busMigrations, identityMigrations, consentMigrations, conversionsMigrations];
