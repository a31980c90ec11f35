import { checkBus, createBus } from '@svc/bus';
import { buildConsentApi } from '@svc/consent-api';
import { buildForwarder, resolveSecretKey } from '@svc/conversion-forwarder';
import { buildResolver, resolverPoolSize } from '@svc/identity-resolver';
import { checkedIdentifierHashes, masterKeyRing } from '@svc/identity';
import { buildGateway } from '@svc/ingest-gateway';
import { buildProfileApi } from '@svc/profile-api';
import {
  Lifecycle,
  createDb,
  databaseConnection,
  createMetrics,
  failedAuthThrottle,
  observeDbPool,
  readinessFromChecks,
  runMigrations,
  serveHttp,
  startEmbeddedPostgres,
  startTracing,
  type ConfigValues,
  type DatabaseConnection,
  type Logger,
} from '@svc/runtime';
import { PRODUCT_VERSION, checkConnections, type BuiltService, type ServiceContext } from '@svc/service';
import type { standaloneConfigSpec } from './config';
import { allMigrations } from './migrations';

export type StackConfig = ConfigValues<typeof standaloneConfigSpec>;

export interface RunningStack {
  url: string;
  lifecycle: Lifecycle;
}

/** Connections of the pool the HTTP services and the forwarder share. */
const SHARED_POOL_MAX = 20;

/**
 * Every service in one process on the embedded tier: the embedded PostgreSQL
 * (or DATABASE_URL), migrations, the bus, and the same build functions each
 * service's own deployment runs (@svc/service), their routes on one HTTP
 * server. The resolver gets a pool and a bus client of its own, as it would
 * as its own deployment: under load the gateway's requests must not keep its
 * transactions (or its outbox relay) waiting for a connection. Shutdown runs
 * in reverse: HTTP, services, buses, pools, database.
 */
export async function startStack(config: StackConfig, logger: Logger, signals?: Parameters<Lifecycle['installSignalHandlers']>[0]): Promise<RunningStack> {
  const lifecycle = new Lifecycle({ logger });
  if (signals) lifecycle.installSignalHandlers(signals);
  try {
    let connection: DatabaseConnection;
    if (config.DATABASE_URL) {
      connection = databaseConnection(config.DATABASE_URL, config);
      await checkConnections({ ...config, DATABASE_URL: config.DATABASE_URL, DB_POOL_MAX: SHARED_POOL_MAX }, connection);
    } else {
      const pgLog = logger.child({ component: 'postgres' });
      const embedded = await startEmbeddedPostgres({ dataDir: config.DATA_DIR, onLog: (line) => pgLog.debug(line) });
      connection = { url: embedded.url };
      lifecycle.registerFirst('embedded-postgres', embedded.stop);
      logger.info({ dataDir: config.DATA_DIR }, 'embedded PostgreSQL running');
      await checkBus(config, config.STARTUP_CONNECT_TIMEOUT_SECONDS * 1_000);
    }
    const metrics = createMetrics();
    // One count of failed keys for the process, as in a service of its own.
    const failedAuth = failedAuthThrottle(config.UNAUTHENTICATED_PER_MINUTE, metrics);
    const tracing = startTracing('svc-standalone', PRODUCT_VERSION, config, logger);
    if (tracing.enabled) lifecycle.registerFirst('tracing', () => tracing.shutdown());
    const context = async (name: string, poolMax: number): Promise<ServiceContext<StackConfig & { DATABASE_URL: string; DB_POOL_MAX: number }>> => {
      const db = createDb({ ...connection, poolMax, applicationName: `svc-standalone-${name}` });
      lifecycle.registerFirst(`${name}-db-pool`, () => db.destroy());
      observeDbPool(metrics.registry, db, name);
      const bus = await createBus(config, { db, logger: logger.child({ component: 'bus', for: name }), metricsRegistry: metrics.registry });
      lifecycle.registerFirst(`${name}-bus`, () => bus.close());
      return { config: { ...config, DATABASE_URL: connection.url, DB_POOL_MAX: poolMax }, logger: logger.child({ component: name }), lifecycle, db, bus, metrics, failedAuth, tracing };
    };

    const shared = await context('shared', SHARED_POOL_MAX);
    const applied = await runMigrations(shared.db, allMigrations);
    if (applied.length) logger.info({ applied }, 'migrations applied');
    const resolverPool = resolverPoolSize(config.RESOLVER_CONSUMERS);
    const secretKey = await resolveSecretKey(config.CONNECTOR_SECRET_KEY, config.DATA_DIR);
    const masterKeys = await masterKeyRing(config, config.DATA_DIR);
    const hashes = await checkedIdentifierHashes(shared.db, config, config.DATA_DIR);
    const built: BuiltService[] = [
      await buildResolver(await context('identity-resolver', resolverPool), resolverPool, masterKeys, hashes),
      await buildForwarder(shared, secretKey, hashes),
      await buildGateway(shared, masterKeys, hashes),
      await buildProfileApi(shared, hashes),
      await buildConsentApi(shared, hashes),
    ];
    const http = await serveHttp({
      config,
      logger,
      metrics,
      tracing,
      readiness: readinessFromChecks(Object.assign({ database: () => shared.db.raw('select 1') }, ...built.map((b) => b.readiness ?? {})), { logger }),
      mount: (router) => {
        for (const b of built) b.mount?.(router);
      },
    });
    lifecycle.registerFirst('http', () => http.close());
    logger.info({ url: http.url }, 'standalone stack ready');
    return { url: http.url, lifecycle };
  } catch (err) {
    await lifecycle.shutdown('start-up failed');
    throw err;
  }
}
