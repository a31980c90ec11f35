#!/usr/bin/env node
import { createBus, prefixedTopics } from '@svc/bus';
import {
  Lifecycle,
  createDb,
  createLogger,
  createMetrics,
  observeDbPool,
  loadConfigOrExit,
  readinessFromChecks,
  serveHttp,
} from '@svc/runtime';
import { gatewayConfigSpec } from './config';
import { mountGateway } from './routes';

/**
 * Composition root of the ingest gateway as its own deployment. Migrations are
 * applied by `svcctl migrate` (a deploy step), not by each replica.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit(gatewayConfigSpec, process.env);
  const logger = createLogger({ name: 'ingest-gateway', level: config.LOG_LEVEL });
  const lifecycle = new Lifecycle({ logger });
  const db = createDb({ url: config.DATABASE_URL, poolMax: 20, applicationName: 'ingest-gateway' });
  const metrics = createMetrics();
  observeDbPool(metrics.registry, db, 'ingest-gateway');
  const bus = await createBus(config, { db, databaseUrl: config.DATABASE_URL, logger, metricsRegistry: metrics.registry });
  const topics = prefixedTopics(config.TOPIC_PREFIX);
  await bus.ensureTopics([topics.eventsRaw]);
  const http = await serveHttp({
    config,
    logger,
    metrics,
    readiness: readinessFromChecks({ database: () => db.raw('select 1') }, { logger }),
    mount: (router) =>
      mountGateway(router, {
        db,
        bus,
        rawTopic: topics.eventsRaw,
        logger,
        metrics,
        trustedProxies: config.TRUSTED_PROXIES,
        upgradeUrl: config.UPGRADE_URL,
      }),
  });
  lifecycle.register('http', () => http.close());
  lifecycle.register('bus', () => bus.close());
  lifecycle.register('db-pool', () => db.destroy());
  lifecycle.installSignalHandlers(process);
  logger.info({ url: http.url }, 'ingest gateway ready');
}

main().catch((err: unknown) => {
  process.stderr.write(`ingest gateway failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
