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
import { forwarderConfigSpec } from './config';
import { forwarderMetrics } from './metrics';
import { observeForwarderQueue } from './queue-metrics';
import { parseSecretKey } from './secrets';
import { startForwarder } from './start';

/**
 * Composition root of the conversion forwarder as its own deployment
 * (migrations: `svcctl migrate`). Any number of replicas may run: the bus
 * shares the topic's partitions and the queue is claimed with SKIP LOCKED.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit(forwarderConfigSpec, process.env);
  const logger = createLogger({ name: 'conversion-forwarder', level: config.LOG_LEVEL });
  const secretKey = parseSecretKey(config.CONNECTOR_SECRET_KEY);
  const lifecycle = new Lifecycle({ logger });
  try {
    const db = createDb({ url: config.DATABASE_URL, poolMax: 10, applicationName: 'conversion-forwarder' });
    lifecycle.registerFirst('db-pool', () => db.destroy());
    const metrics = createMetrics({ defaultLabels: { service: 'conversion-forwarder' } });
    observeDbPool(metrics.registry, db, 'conversion-forwarder');
    observeForwarderQueue(metrics, db);
    const bus = await createBus(config, { db, databaseUrl: config.DATABASE_URL, logger, metricsRegistry: metrics.registry });
    lifecycle.registerFirst('bus', () => bus.close());
    const forwarder = await startForwarder({
      db,
      bus,
      candidatesTopic: prefixedTopics(config.TOPIC_PREFIX).conversionsCandidates,
      secretKey,
      logger,
      metrics: forwarderMetrics(metrics),
      retry: { maxAttempts: config.FORWARDER_MAX_ATTEMPTS, baseMs: config.FORWARDER_RETRY_BASE_MS, capMs: config.FORWARDER_RETRY_CAP_MS },
      pollIntervalMs: config.FORWARDER_POLL_INTERVAL_MS,
    });
    lifecycle.registerFirst('forwarder', () => forwarder.stop(), { timeoutMs: 30_000 });
    const http = await serveHttp({
      config,
      logger,
      metrics,
      readiness: readinessFromChecks({ database: () => db.raw('select 1') }, { logger }),
      mount: () => {},
    });
    lifecycle.registerFirst('http', () => http.close());
    lifecycle.installSignalHandlers(process);
    logger.info({ url: http.url }, 'conversion forwarder ready');
  } catch (err) {
    await lifecycle.shutdown('start-up failed');
    throw err;
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`conversion forwarder failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
