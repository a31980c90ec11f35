import { createDb, createLogger, env, httpServiceConfigSpec, loadConfigOrExit, runMigrations } from '@svc/runtime';
import { allMigrations } from '@svc/standalone';

const configSpec = {
  DATABASE_URL: env.string({ description: 'PostgreSQL URL', secret: true }),
  LOG_LEVEL: httpServiceConfigSpec.LOG_LEVEL,
};

/**
 * The `migrate` job: applies every service's pending migrations, then exits
 * 0. Two at once (two replicas, or a rerun) are safe: runMigrations holds an
 * advisory lock, so the second waits and finds nothing left to apply.
 */
export async function migrateCommand(): Promise<number> {
  const config = loadConfigOrExit(configSpec, process.env);
  const logger = createLogger({ name: 'migrate', level: config.LOG_LEVEL });
  const db = createDb({ url: config.DATABASE_URL, poolMax: 2, applicationName: 'svc-migrate' });
  try {
    const applied = await runMigrations(db, allMigrations);
    logger.info({ applied }, applied.length ? `migrations applied: ${applied.length}` : 'schema already current');
    return 0;
  } finally {
    await db.destroy();
  }
}
