#!/usr/bin/env node
import { busConfigSpec, createBus, prefixedTopics } from '@svc/bus';
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
import { mountConsentApi } from './routes-setup';

const configSpec = {
  ...httpServiceConfigSpec,
  DATABASE_URL: env.string({ description: 'PostgreSQL URL (keys, rate limits, consent records)', secret: true }),
  ...busConfigSpec,
};

/** Composition root of the consent API as its own deployment (migrations: `svcctl migrate`). */
async function main(): Promise<void> {
  const config = loadConfigOrExit(configSpec, process.env);
  const logger = createLogger({ name: 'consent-api', level: config.LOG_LEVEL });
  const lifecycle = new Lifecycle({ logger });
  const db = createDb({ url: config.DATABASE_URL, poolMax: 10, applicationName: 'consent-api' });
  lifecycle.registerFirst('db-pool', () => db.destroy());
  const metrics = createMetrics();
  observeDbPool(metrics.registry, db, 'consent-api');
  const bus = await createBus(config, { db, databaseUrl: config.DATABASE_URL, logger, metricsRegistry: metrics.registry });
  lifecycle.registerFirst('bus', () => bus.close());
  const topics = prefixedTopics(config.TOPIC_PREFIX);
  await bus.ensureTopics([topics.consentDecisions]);
  let stopPublisher = async () => {};
  const http = await serveHttp({
    config,
    logger,
    metrics,
    readiness: readinessFromChecks({ database: () => db.raw('select 1') }, { logger }),
    mount: (router) => {
      const publisher = mountConsentApi(router, { db, bus, decisionsTopic: topics.consentDecisions, logger, trustedProxies: config.TRUSTED_PROXIES });
      stopPublisher = () => publisher.stop();
    },
  });
  lifecycle.registerFirst('consent-publisher', () => stopPublisher());
  lifecycle.registerFirst('http', () => http.close());
  lifecycle.installSignalHandlers(process);
  logger.info({ url: http.url }, 'consent API ready');
}

main().catch((err: unknown) => {
  process.stderr.write(`consent API failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
