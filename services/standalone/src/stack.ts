import { checkBus } from '@svc/bus';
import { consentService } from '@svc/consent-api';
import { forwarderService } from '@svc/conversion-forwarder';
import { resolverService } from '@svc/identity-resolver';
import { gatewayService } from '@svc/ingest-gateway';
import { profileApiService } from '@svc/profile-api';
import { databaseConnection, startEmbeddedPostgres, type ConfigValues, type DatabaseConnection, type Lifecycle, type Logger, type SignalTarget } from '@svc/runtime';
import { checkConnections, startServices, type RunningService, type ServiceDefinition } from '@svc/service';
import type { standaloneConfigSpec } from './config';
import { allMigrations } from './migrations';

export type StackConfig = ConfigValues<typeof standaloneConfigSpec>;

export type RunningStack = RunningService;

/**
 * Every service of the product, as its own deployment defines it: a service
 * added to the product is added here, and its settings to the stack's
 * (config.ts).
 */
export const STACK_SERVICES: readonly ServiceDefinition[] = [resolverService, forwarderService, gatewayService, profileApiService, consentService];

/** Connections of the pool the services share (the resolver has its own: ServiceDefinition.ownPoolMax). */
const SHARED_POOL_MAX = 20;

/**
 * Every service in one process on the embedded tier: the embedded
 * PostgreSQL (or DATABASE_URL), migrations, and the bootstrap each service's
 * own deployment runs (startServices), over every service's definition, their
 * routes on one HTTP server. The keys a deployed service must be given are
 * kept in DATA_DIR when unset. Shutdown runs in reverse: HTTP, services,
 * buses, pools, database.
 */
export function startStack(config: StackConfig, logger: Logger, signals?: SignalTarget): Promise<RunningStack> {
  return startServices(STACK_SERVICES, config, {
    name: 'svc-standalone',
    logger,
    signals,
    connect: (lifecycle) => reachDatabase(config, logger, lifecycle),
    pool: { max: SHARED_POOL_MAX, name: 'shared', applicationName: 'svc-standalone-shared' },
    migrations: allMigrations,
    dataDir: config.DATA_DIR,
  });
}

/** DATABASE_URL's database, checked with the bus as a deployed service checks them; unset, the embedded PostgreSQL in DATA_DIR, stopped last. */
async function reachDatabase(config: StackConfig, logger: Logger, lifecycle: Lifecycle): Promise<DatabaseConnection> {
  if (config.DATABASE_URL) {
    const connection = databaseConnection(config.DATABASE_URL, config);
    await checkConnections(config, connection);
    return connection;
  }
  const pgLog = logger.child({ component: 'postgres' });
  const embedded = await startEmbeddedPostgres({ dataDir: config.DATA_DIR, onLog: (line) => pgLog.debug(line) });
  lifecycle.registerFirst('embedded-postgres', embedded.stop);
  logger.info({ dataDir: config.DATA_DIR }, 'embedded PostgreSQL running');
  await checkBus(config, config.STARTUP_CONNECT_TIMEOUT_SECONDS * 1_000);
  return { url: embedded.url };
}
