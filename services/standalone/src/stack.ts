import { createBus, prefixedTopics } from '@svc/bus';
import { mountConsentApi } from '@svc/consent-api';
import { ConnectorStore, forwarderMetrics, observeForwarderQueue, resolveSecretKey, startForwarder } from '@svc/conversion-forwarder';
import { resolverMetrics, resolverPoolSize, startResolver } from '@svc/identity-resolver';
import { mountGateway } from '@svc/ingest-gateway';
import { mountProfileApi } from '@svc/profile-api';
import {
  Lifecycle,
  createDb,
  createMetrics,
  observeDbPool,
  readinessFromChecks,
  runMigrations,
  serveHttp,
  startEmbeddedPostgres,
  type ConfigValues,
  type Logger,
} from '@svc/runtime';
import type { standaloneConfigSpec } from './config';
import { allMigrations } from './migrations';

export type StackConfig = ConfigValues<typeof standaloneConfigSpec>;

export interface RunningStack {
  url: string;
  lifecycle: Lifecycle;
}

/**
 * Every service in one process on the embedded tier: the embedded PostgreSQL
 * (or DATABASE_URL), migrations, the bus, and every service's routes on one
 * HTTP server. Shutdown runs in reverse: HTTP, bus, pool, database.
 */
export async function startStack(config: StackConfig, logger: Logger): Promise<RunningStack> {
  const lifecycle = new Lifecycle({ logger });
  try {
    let databaseUrl = config.DATABASE_URL;
    if (!databaseUrl) {
      const pgLog = logger.child({ component: 'postgres' });
      const embedded = await startEmbeddedPostgres({ dataDir: config.DATA_DIR, onLog: (line) => pgLog.debug(line) });
      databaseUrl = embedded.url;
      lifecycle.registerFirst('embedded-postgres', embedded.stop);
      logger.info({ dataDir: config.DATA_DIR }, 'embedded PostgreSQL running');
    }
    const db = createDb({ url: databaseUrl, poolMax: 20, applicationName: 'svc-standalone' });
    lifecycle.registerFirst('db-pool', () => db.destroy());
    const applied = await runMigrations(db, allMigrations);
    if (applied.length) logger.info({ applied }, 'migrations applied');

    const metrics = createMetrics();
    observeDbPool(metrics.registry, db, 'standalone');
    const bus = await createBus(config, { db, databaseUrl, logger: logger.child({ component: 'bus' }), metricsRegistry: metrics.registry });
    lifecycle.registerFirst('bus', () => bus.close());
    const topics = prefixedTopics(config.TOPIC_PREFIX);
    await bus.ensureTopics(Object.values(topics));

    const secretKey = await resolveSecretKey(config.CONNECTOR_SECRET_KEY, config.DATA_DIR);
    // The resolver has connections of its own, as it would as its own deployment: under load the
    // gateway's requests must not keep its transactions (or its outbox relay) waiting for the pool.
    const resolverDb = createDb({ url: databaseUrl, poolMax: resolverPoolSize(config.RESOLVER_CONSUMERS), applicationName: 'svc-standalone-resolver' });
    lifecycle.registerFirst('resolver-db-pool', () => resolverDb.destroy());
    observeDbPool(metrics.registry, resolverDb, 'identity-resolver');
    const resolverBus = await createBus(config, { db: resolverDb, databaseUrl, logger: logger.child({ component: 'bus', for: 'identity-resolver' }), metricsRegistry: metrics.registry });
    lifecycle.registerFirst('resolver-bus', () => resolverBus.close());
    const connectors = new ConnectorStore(resolverDb);
    const resolver = await startResolver({
      db: resolverDb,
      bus: resolverBus,
      topics,
      logger: logger.child({ component: 'identity-resolver' }),
      metrics: resolverMetrics(metrics),
      consumers: config.RESOLVER_CONSUMERS,
      maxBatchSize: config.RESOLVER_BATCH_SIZE,
      batch: { conversionNames: (orgId) => connectors.qualifyingNames(orgId) },
    });
    lifecycle.registerFirst('identity-resolver', () => resolver.stop(), { timeoutMs: 30_000 });
    const forwarder = await startForwarder({
      db,
      bus,
      candidatesTopic: topics.conversionsCandidates,
      secretKey,
      logger: logger.child({ component: 'conversion-forwarder' }),
      metrics: forwarderMetrics(metrics),
      retry: { maxAttempts: config.FORWARDER_MAX_ATTEMPTS, baseMs: config.FORWARDER_RETRY_BASE_MS, capMs: config.FORWARDER_RETRY_CAP_MS },
      pollIntervalMs: config.FORWARDER_POLL_INTERVAL_MS,
    });
    lifecycle.registerFirst('conversion-forwarder', () => forwarder.stop(), { timeoutMs: 30_000 });
    observeForwarderQueue(metrics, db);
    let stopConsentPublisher = async () => {};
    const http = await serveHttp({
      config,
      logger,
      metrics,
      readiness: readinessFromChecks({ database: () => db.raw('select 1'), resolving: resolver.stalls.readinessCheck }, { logger }),
      mount(router) {
        mountGateway(router, {
          db,
          bus,
          rawTopic: topics.eventsRaw,
          logger,
          metrics,
          trustedProxies: config.TRUSTED_PROXIES,
          upgradeUrl: config.UPGRADE_URL,
        });
        mountProfileApi(router, { db, logger, trustedProxies: config.TRUSTED_PROXIES, cursorSecret: config.CURSOR_SECRET });
        const consentPublisher = mountConsentApi(router, {
          db,
          bus,
          decisionsTopic: topics.consentDecisions,
          logger,
          trustedProxies: config.TRUSTED_PROXIES,
        });
        stopConsentPublisher = () => consentPublisher.stop();
      },
    });
    lifecycle.registerFirst('consent-publisher', () => stopConsentPublisher());
    lifecycle.registerFirst('http', () => http.close());
    logger.info({ url: http.url }, 'standalone stack ready');
    return { url: http.url, lifecycle };
  } catch (err) {
    await lifecycle.shutdown('start-up failed');
    throw err;
  }
}
