#!/usr/bin/env node
import { createBus, prefixedTopics } from '@svc/bus';
import { ConnectorStore } from '@svc/conversion-forwarder';
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
import { resolverConfigSpec } from './config';
import { resolverMetrics } from './metrics';
import { consumersForPool, startResolver } from './start';

/**
 * Composition root of the identity resolver as its own deployment. Migrations
 * are applied by `svcctl migrate` (a deploy step), not by each replica. HTTP
 * serves only the operational routes (/healthz, /readyz, /metrics).
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit(resolverConfigSpec, process.env);
  const logger = createLogger({ name: 'identity-resolver', level: config.LOG_LEVEL });
  const lifecycle = new Lifecycle({ logger });
  try {
    const db = createDb({ url: config.DATABASE_URL, poolMax: config.RESOLVER_DB_POOL_MAX, applicationName: 'identity-resolver' });
    lifecycle.registerFirst('db-pool', () => db.destroy());
    const metrics = createMetrics({ defaultLabels: { service: 'identity-resolver' } });
    observeDbPool(metrics.registry, db, 'identity-resolver');
    const bus = await createBus(config, { db, databaseUrl: config.DATABASE_URL, logger, metricsRegistry: metrics.registry });
    lifecycle.registerFirst('bus', () => bus.close());
    const connectors = new ConnectorStore(db);
    // A pool too small for the members asked for gets fewer of them.
    const consumers = Math.min(config.RESOLVER_CONSUMERS, consumersForPool(config.RESOLVER_DB_POOL_MAX));
    if (consumers < config.RESOLVER_CONSUMERS) {
      logger.warn({ consumers, RESOLVER_CONSUMERS: config.RESOLVER_CONSUMERS, RESOLVER_DB_POOL_MAX: config.RESOLVER_DB_POOL_MAX }, 'resolver: the connection pool is too small for RESOLVER_CONSUMERS; running fewer consumers');
    }
    const resolver = await startResolver({
      db,
      bus,
      topics: prefixedTopics(config.TOPIC_PREFIX),
      logger,
      metrics: resolverMetrics(metrics),
      groupId: config.RESOLVER_GROUP_ID,
      maxBatchSize: config.RESOLVER_BATCH_SIZE,
      consumers,
      relay: { intervalMs: config.OUTBOX_RELAY_INTERVAL_MS },
      batch: {
        defaultPhoneCountryCode: String(config.PHONE_DEFAULT_COUNTRY_CODE),
        // Candidates only for names the organisation's active connectors forward.
        conversionNames: (orgId) => connectors.qualifyingNames(orgId),
      },
    });
    lifecycle.registerFirst('resolver', () => resolver.stop(), { timeoutMs: 30_000 });
    const http = await serveHttp({
      config,
      logger,
      metrics,
      readiness: readinessFromChecks({ database: () => db.raw('select 1'), resolving: resolver.stalls.readinessCheck }, { logger }),
      mount: () => {},
    });
    lifecycle.registerFirst('http', () => http.close());
    lifecycle.installSignalHandlers(process);
    logger.info({ url: http.url }, 'identity resolver ready');
  } catch (err) {
    await lifecycle.shutdown('start-up failed');
    throw err;
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`identity resolver failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
