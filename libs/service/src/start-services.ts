import { readFileSync } from 'node:fs';
import path from 'node:path';
import { checkBus, createBus, type Bus } from '@svc/bus';
import {
  DEGRADED,
  Lifecycle,
  checkDatabase,
  createDb,
  createMetrics,
  observeDbPool,
  readinessFromChecks,
  runMigrations,
  serveHttp,
  startTracing,
  type DatabaseConnection,
  type Db,
  type Logger,
  type MigrationSet,
  type SignalTarget,
} from '@svc/runtime';
import { failedAuthThrottle } from '@svc/accounts';
import type { ServiceConfig } from './config';
import type { BuiltService, RunningService, ServiceDefinition } from './definition';
import { clusterMetricsRenderer, isClusterWorker, stopSignals } from './workers';

/** The product's version (every package carries it), for the spans' service.version. */
const PRODUCT_VERSION = (JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;

/**
 * The settings of a process hosting services: every service's, but where
 * the database is and how large a pool is, which the process settles (the
 * database `connect` reached; each pool's size).
 */
export type HostConfig = Omit<ServiceConfig, 'DATABASE_URL' | 'DB_POOL_MAX'>;

/** A pool of the process: its size, and its name in db_pool_connections and in the database's sessions. */
export interface PoolSpec {
  max: number;
  name: string;
  applicationName: string;
}

/** What tells one process hosting services from another: a service on its own, the standalone stack. */
export interface ProcessOptions {
  /** The process's name: its spans' service.name, and the line it logs once ready. */
  name: string;
  logger: Logger;
  /** Where SIGTERM and SIGINT come from (the process); handled from the start, before anything is built. */
  signals?: SignalTarget | undefined;
  /**
   * The database, reached and logged in to (with the bus) before anything is
   * built; whatever it starts registers its stop step on `lifecycle`, to run last.
   */
  connect(lifecycle: Lifecycle): Promise<DatabaseConnection>;
  /** The pool and bus client the services share (each that declares none of its own). */
  pool: PoolSpec;
  /** Labels every metric carries (a service on its own: its name). */
  metricLabels?: Record<string, string>;
  /** Applied before any service is built: the standalone stack migrates by itself; a deployed service never does (the migrate job). */
  migrations?: readonly MigrationSet[];
  /** The services' ServiceContext.dataDir. */
  dataDir?: string;
}

/**
 * Starts a process hosting `definitions` (one, for a service's own
 * deployment; every one, for the standalone stack): the lifecycle, with
 * signals handled from the start, the database, one metrics registry, the pool and bus client they share (and
 * those of any that has its own), one count of failed keys, one tracing
 * provider, each service's own parts, and one HTTP server with /healthz,
 * /readyz (the database and every service's checks) and /metrics. Each stop
 * step is registered the moment its part exists, so a failure half-way
 * through start-up, or a signal during it, stops exactly what was started,
 * in reverse.
 */
export async function startServices(definitions: readonly ServiceDefinition[], config: HostConfig, options: ProcessOptions): Promise<RunningService> {
  const { logger } = options;
  const lifecycle = new Lifecycle({ logger });
  if (options.signals) lifecycle.installSignalHandlers(options.signals, stopSignals());
  try {
    const connection = await options.connect(lifecycle);
    // What a service's config says of the database: where it is, and the size of the pool it is handed.
    const configWithPool = (poolMax: number): ServiceConfig => ({ ...config, DATABASE_URL: connection.url, DB_POOL_MAX: poolMax });
    const sharedConfig = configWithPool(options.pool.max);
    const metrics = createMetrics({ defaultLabels: options.metricLabels });
    if (isClusterWorker()) metrics.render = clusterMetricsRenderer(metrics.registry);
    const openPool = async (pool: PoolSpec, steps: string): Promise<Pooled> => {
      const db = createDb({ ...connection, poolMax: pool.max, applicationName: pool.applicationName });
      lifecycle.registerFirst(`${steps}db-pool`, () => db.destroy());
      observeDbPool(metrics.registry, db, pool.name);
      const bus = await createBus(config, { db, logger: logger.child({ component: 'bus', for: pool.name }), metricsRegistry: metrics.registry });
      lifecycle.registerFirst(`${steps}bus`, () => bus.close());
      return { db, bus };
    };
    const shared = await openPool(options.pool, '');
    if (options.migrations) await migrate(shared.db, options.migrations, logger);
    const failedAuth = failedAuthThrottle(config.UNAUTHENTICATED_PER_MINUTE, metrics);
    const tracing = startTracing(options.name, PRODUCT_VERSION, config, logger);
    if (tracing.enabled) lifecycle.registerFirst('tracing', () => tracing.shutdown());

    const started = new Map<object, Promise<unknown>>();
    const once = <A extends unknown[], T>(fn: (...args: A) => Promise<T>, ...args: A): Promise<T> => {
      if (!started.has(fn)) started.set(fn, fn(...args));
      return started.get(fn) as Promise<T>;
    };

    const built: BuiltService[] = [];
    for (const definition of definitions) {
      // Alone, a service's pool is the process's; beside others, one that declares a pool of its own gets it.
      const ownPoolMax = definitions.length > 1 ? definition.ownPoolMax?.(sharedConfig) : undefined;
      const pooled =
        ownPoolMax === undefined ? shared : await openPool({ max: ownPoolMax, name: definition.name, applicationName: `${options.name}-${definition.name}` }, `${definition.name}-`);
      built.push(
        await definition.build({
          config: configWithPool(ownPoolMax ?? options.pool.max),
          logger: logger.child({ component: definition.name }),
          lifecycle,
          ...pooled,
          metrics,
          failedAuth,
          tracing,
          once,
          ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
        }),
      );
    }
    // The database is only `degraded` when every service goes on serving without it.
    const soft = definitions.every((d) => d.servesWithoutDatabase?.(sharedConfig) === true);
    const http = await serveHttp({
      config,
      logger,
      metrics,
      tracing,
      readiness: readinessFromChecks(Object.assign({ database: databaseCheck(shared.db, soft) }, ...built.map((b) => b.readiness ?? {})), { logger }),
      mount: (router) => {
        for (const b of built) b.mount?.(router);
      },
    });
    lifecycle.registerFirst('http', () => http.close());
    logger.info({ url: http.url }, `${options.name} ready`);
    return { url: http.url, lifecycle };
  } catch (err) {
    await lifecycle.shutdown('start-up failed');
    throw err;
  }
}

interface Pooled {
  db: Db;
  bus: Bus;
}

async function migrate(db: Db, migrations: readonly MigrationSet[], logger: Logger): Promise<void> {
  const applied = await runMigrations(db, migrations);
  if (applied.length) logger.info({ applied }, 'migrations applied');
}

/** The readiness check of the database: failing, or only `degraded` for a process whose services serve without it. */
function databaseCheck(db: Db, soft: boolean): () => Promise<unknown> {
  if (!soft) return () => db.raw('select 1');
  return async () => {
    try {
      // Within the probe's own timeout (5 s): a database that hangs is degraded too, not a failed probe.
      await withDeadline(db.raw('select 1'), 2_000);
      return undefined;
    } catch {
      return DEGRADED;
    }
  };
}

function withDeadline<T>(work: PromiseLike<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([Promise.resolve(work), late]).finally(() => clearTimeout(timer));
}

/**
 * The database, Kafka and the registry, each logged in to with the settings
 * the process will run with, before anything is built: a wrong setting stops
 * the start with one line naming it, within STARTUP_CONNECT_TIMEOUT_SECONDS.
 */
export async function checkConnections(config: HostConfig, connection: DatabaseConnection): Promise<void> {
  const timeoutMs = config.STARTUP_CONNECT_TIMEOUT_SECONDS * 1_000;
  // Both run to their end, so the line shown is the database's when both fail, whichever failed first.
  const [database, bus] = await Promise.allSettled([checkDatabase(connection, timeoutMs), checkBus(config, timeoutMs)]);
  if (database.status === 'rejected') throw database.reason;
  if (bus.status === 'rejected') throw bus.reason;
}
