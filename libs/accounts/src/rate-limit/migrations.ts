import { sqlMigration, type MigrationSet } from '@svc/runtime';

/**
 * Fixed-window request counters shared by every replica. UNLOGGED: a crash
 * loses at most the current minute's counts, which is harmless, and the table
 * skips the WAL on the hot path.
 */
export const rateLimitMigrations: MigrationSet = {
  schema: 'ratelimit',
  migrations: [
    sqlMigration('0001_counters', `
      create unlogged table ratelimit.counters (
        bucket text not null,
        window_start timestamptz not null,
        hits integer not null,
        primary key (bucket, window_start)
      ) with (fillfactor = 70);
    `),
  ],
};
