import { busMigrations } from '@svc/bus';
import { consentMigrations } from '@svc/consent-api';
import { conversionsMigrations } from '@svc/conversions';
import { identityMigrations, privacyMigrations } from '@svc/identity';
import type { MigrationSet } from '@svc/runtime';
import { accountsMigrations, rateLimitMigrations } from '@svc/accounts';

/**
 * Every schema's migrations, in the order they apply. `conversions` comes
 * before `identity`: its 0002 takes over the exhausted-click marks that
 * identity 0005 then drops.
 */
export const allMigrations: readonly MigrationSet[] = [accountsMigrations, rateLimitMigrations, busMigrations, conversionsMigrations, identityMigrations, privacyMigrations, consentMigrations];
