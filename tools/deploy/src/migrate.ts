import { checkDatabase, createDb, createLogger, databaseConnection, loadConfigOrExit, runMigrations } from '@svc/runtime';
import { allMigrations } from '@svc/standalone';

import { jobConfigSpec as configSpec } from './job-config';

/**
 * The `migrate` job: applies every service's pending migrations, then exits
 * 0. Two at once (two replicas, or a rerun) are safe: runMigrations holds an
 * advisory lock, so the second waits and finds nothing left to apply.
 */
export async function migrateCommand(): Promise<number> {
  const config = loadConfigOrExit(configSpec, process.env);
  const logger = createLogger({ name: 'migrate', level: config.LOG_LEVEL });
  const connection = databaseConnection(config.DATABASE_URL, config);
  await checkDatabase(connection, config.STARTUP_CONNECT_TIMEOUT_SECONDS * 1_000);
  const db = createDb({ ...connection, poolMax: 2, applicationName: 'svc-migrate' });
  try {
    const applied = await runMigrations(db, allMigrations);
    logger.info({ applied }, applied.length ? `migrations applied: ${applied.length}` : 'schema already current');
    return 0;
  } finally {
    await db.destroy();
  }
}
