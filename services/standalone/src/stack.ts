import {
  Lifecycle,
  createApp,
  createDb,
  createMetrics,
  readinessFromChecks,
  runMigrations,
  startEmbeddedPostgres,
  startHttpServer,
  type Logger,
} from '@svc/runtime';
import { allMigrations } from './migrations';

export interface StackConfig {
  HOST: string;
  PORT: number;
  DATA_DIR: string;
  DATABASE_URL: string | undefined;
}

export interface RunningStack {
  url: string;
  lifecycle: Lifecycle;
}

/**
 * Every service in one process on the embedded tier: the embedded PostgreSQL
 * (or DATABASE_URL), migrations, and the services' routes on one HTTP server.
 * Shutdown runs in reverse dependency order: HTTP, then pools, then the database.
 */
export async function startStack(config: StackConfig, logger: Logger): Promise<RunningStack> {
  const lifecycle = new Lifecycle({ logger });
  try {
    let databaseUrl = config.DATABASE_URL;
    let stopEmbedded: (() => Promise<void>) | undefined;
    if (!databaseUrl) {
      const pgLog = logger.child({ component: 'postgres' });
      const embedded = await startEmbeddedPostgres({ dataDir: config.DATA_DIR, onLog: (line) => pgLog.debug(line) });
      databaseUrl = embedded.url;
      stopEmbedded = embedded.stop;
      logger.info({ dataDir: config.DATA_DIR }, 'embedded PostgreSQL running');
    }
    const db = createDb({ url: databaseUrl, poolMax: 20, applicationName: 'svc-standalone' });
    const applied = await runMigrations(db, allMigrations);
    if (applied.length) logger.info({ applied }, 'migrations applied');

    const metrics = createMetrics();
    const { app } = createApp({
      logger,
      metrics,
      basePath: '/functions/v1',
      readiness: readinessFromChecks({ database: () => db.raw('select 1') }, { logger }),
    });
    const http = await startHttpServer(app, { host: config.HOST, port: config.PORT });

    lifecycle.register('http', () => http.close());
    lifecycle.register('db-pool', () => db.destroy());
    if (stopEmbedded) lifecycle.register('embedded-postgres', stopEmbedded);
    logger.info({ url: http.url }, 'standalone stack ready');
    return { url: http.url, lifecycle };
  } catch (err) {
    await lifecycle.shutdown('start-up failed');
    throw err;
  }
}
