#!/usr/bin/env node
import {
  Lifecycle,
  createDb,
  createLogger,
  createMetrics,
  observeDbPool,
  env,
  httpServiceConfigSpec,
  loadConfigOrExit,
  readinessFromChecks,
  serveHttp,
} from '@svc/runtime';
import { profileApiOwnConfigSpec } from './config';
import { mountProfileApi } from './routes-setup';

const configSpec = {
  ...httpServiceConfigSpec,
  DATABASE_URL: env.string({ description: 'PostgreSQL URL (keys, rate limits, identity projections)', secret: true }),
  ...profileApiOwnConfigSpec,
};

/** Composition root of the Profiles API as its own deployment (migrations: `svcctl migrate`). */
async function main(): Promise<void> {
  const config = loadConfigOrExit(configSpec, process.env);
  const logger = createLogger({ name: 'profile-api', level: config.LOG_LEVEL });
  const lifecycle = new Lifecycle({ logger });
  const db = createDb({ url: config.DATABASE_URL, poolMax: 10, applicationName: 'profile-api' });
  lifecycle.registerFirst('db-pool', () => db.destroy());
  const metrics = createMetrics();
  observeDbPool(metrics.registry, db, 'profile-api');
  const http = await serveHttp({
    config,
    logger,
    metrics,
    readiness: readinessFromChecks({ database: () => db.raw('select 1') }, { logger }),
    mount: (router) => mountProfileApi(router, { db, logger, trustedProxies: config.TRUSTED_PROXIES, cursorSecret: config.CURSOR_SECRET }),
  });
  lifecycle.registerFirst('http', () => http.close());
  lifecycle.installSignalHandlers(process);
  logger.info({ url: http.url }, 'profile API ready');
}

main().catch((err: unknown) => {
  process.stderr.write(`profile API failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
