import { loadConfigOrExit, runMigrations } from '@svc/runtime';
import { allMigrations } from '@svc/standalone';

import { jobConfigSpec as configSpec, openJobDatabase, type Environment } from './job-config';

/**
 * The `migrate` job: applies every service's pending migrations, then exits
 * 0. Two at once (two replicas, or a rerun) are safe: runMigrations holds an
 * advisory lock, so the second waits and finds nothing left to apply.
 */
export async function migrateCommand(environment: Environment): Promise<number> {
  const { logger, db } = await openJobDatabase(loadConfigOrExit(configSpec, environment), 'migrate', 2);
  try {
    const applied = await runMigrations(db, allMigrations);
    logger.info({ applied }, applied.length ? `migrations applied: ${applied.length}` : 'schema already current');
    return 0;
  } finally {
    await db.destroy();
  }
}
