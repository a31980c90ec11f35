import { accountsMigrations, type MigrationSet } from '@svc/runtime';

/** Every service's migrations, in the order they apply. */
export const allMigrations: readonly MigrationSet[] = [accountsMigrations];
