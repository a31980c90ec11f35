import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Router } from 'express';
import { checkBus, createBus, type Bus } from '@svc/bus';
import {
  ConnectionCheckError,
  DEGRADED,
  Lifecycle,
  checkDatabase,
  createDb,
  databaseConnection,
  createLogger,
  createMetrics,
  failedAuthThrottle,
  type FailedAuthThrottle,
  loadConfigOrExit,
  observeDbPool,
  readinessFromChecks,
  serveHttp,
  startTracing,
  type ConfigValues,
  type DatabaseConnection,
  type Db,
  type Logger,
  type Metrics,
  type SignalTarget,
  type Tracing,
  type VarSpec,
} from '@svc/runtime';
import { serviceConfigSpec, type ServiceConfig } from './config';
import { clusterMetricsRenderer, isClusterWorker, runPrimary, stopSignals } from './workers';

/** The product's version (every package carries it), for the spans' service.version. */
export const PRODUCT_VERSION = (JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;

/** What a service's `build` is handed: everything it may use, already started. */
export interface ServiceContext<C extends ServiceConfig = ServiceConfig> {
  config: C;
  logger: Logger;
  /** Register each stop step as soon as the thing it stops exists: steps run in reverse order. */
  lifecycle: Lifecycle;
  db: Db;
  /** Always created with the metrics registry, so consumer lag is exported wherever a consumer runs. */
  bus: Bus;
  metrics: Metrics;
  /** The process's one count of keys that did not verify, per client address: every route that authenticates passes it. */
  failedAuth: FailedAuthThrottle;
  /** Where the service's spans go (NO_TRACING unless OTEL_EXPORTER_OTLP_ENDPOINT is set). */
  tracing: Tracing;
}

/** What a service adds to the process: routes under /functions/v1, and readiness checks beside the database's. */
export interface BuiltService {
  mount?(router: Router): void;
  readiness?: Record<string, () => Promise<unknown>>;
}

export interface ServiceDefinition<S extends Record<string, VarSpec<unknown>>> {
  /** The service's name: logs, metrics' `service` label, the database application name. */
  name: string;
  /** The service's own settings, after serviceConfigSpec's. */
  configSpec: S;
  /** Connections of the pool (default: DB_POOL_MAX). */
  poolMax?: (config: ServiceConfig & ConfigValues<S>) => number;
  /**
   * True when the service goes on serving while the database does not answer
   * (the gateway on Kafka): its readiness then reports the database
   * `degraded` instead of failing, so a failover does not take it out of
   * rotation. Default: the database is a hard dependency.
   */
  servesWithoutDatabase?: (config: ServiceConfig & ConfigValues<S>) => boolean;
  /**
   * For a stateless service: how many processes serve its port (workers.ts);
   * above 1, runService forks them. Default: this process alone.
   */
  workers?: (config: ServiceConfig & ConfigValues<S>) => number;
  build(ctx: ServiceContext<ServiceConfig & ConfigValues<S>>): Promise<BuiltService>;
}

export interface RunningService {
  url: string;
  lifecycle: Lifecycle;
}

/**
 * Starts a service: configuration read once (a bad value exits 78 naming
 * it), then logger, lifecycle, database pool, bus, the service's own parts,
 * and HTTP with /healthz, /readyz and /metrics. Each stop step is registered
 * the moment its part exists, so a failure half-way through start-up, or a
 * signal during it, stops exactly what was started, in reverse.
 */
export async function startService<S extends Record<string, VarSpec<unknown>>>(
  definition: ServiceDefinition<S>,
  env: Record<string, string | undefined>,
  /** Where SIGTERM and SIGINT come from (the process); handled from the start, before anything is built. */
  signals?: SignalTarget,
): Promise<RunningService> {
  return startWithConfig(definition, loadServiceConfig(definition, env), signals);
}

/** The service's configuration, read once: the shared settings, then its own (a bad value exits 78 naming it). */
function loadServiceConfig<S extends Record<string, VarSpec<unknown>>>(definition: ServiceDefinition<S>, env: Record<string, string | undefined>): ServiceConfig & ConfigValues<S> {
  // The values of the two specs together (TypeScript cannot see through the generic spread).
  return loadConfigOrExit({ ...serviceConfigSpec, ...definition.configSpec }, env) as ServiceConfig & ConfigValues<S>;
}

async function startWithConfig<S extends Record<string, VarSpec<unknown>>>(
  definition: ServiceDefinition<S>,
  config: ServiceConfig & ConfigValues<S>,
  signals: SignalTarget | undefined,
): Promise<RunningService> {
  const logger = createLogger({ name: definition.name, level: config.LOG_LEVEL });
  const lifecycle = new Lifecycle({ logger });
  if (signals) lifecycle.installSignalHandlers(signals, stopSignals());
  try {
    const metrics = createMetrics({ defaultLabels: { service: definition.name } });
    if (isClusterWorker()) metrics.render = clusterMetricsRenderer(metrics.registry);
    const connection = databaseConnection(config.DATABASE_URL, config);
    await checkConnections(config, connection);
    const db = createDb({ ...connection, poolMax: definition.poolMax?.(config) ?? config.DB_POOL_MAX, applicationName: definition.name });
    lifecycle.registerFirst('db-pool', () => db.destroy());
    observeDbPool(metrics.registry, db, definition.name);
    const bus = await createBus(config, { db, logger, metricsRegistry: metrics.registry });
    lifecycle.registerFirst('bus', () => bus.close());
    const failedAuth = failedAuthThrottle(config.UNAUTHENTICATED_PER_MINUTE, metrics);
    const tracing = startTracing(definition.name, PRODUCT_VERSION, config, logger);
    if (tracing.enabled) lifecycle.registerFirst('tracing', () => tracing.shutdown());
    const built = await definition.build({ config, logger, lifecycle, db, bus, metrics, failedAuth, tracing });
    const http = await serveHttp({
      config,
      logger,
      metrics,
      tracing,
      readiness: readinessFromChecks({ database: databaseCheck(db, definition.servesWithoutDatabase?.(config) === true), ...built.readiness }, { logger }),
      mount: (router) => built.mount?.(router),
    });
    lifecycle.registerFirst('http', () => http.close());
    logger.info({ url: http.url }, `${definition.name} ready`);
    return { url: http.url, lifecycle };
  } catch (err) {
    await lifecycle.shutdown('start-up failed');
    throw err;
  }
}

/** The readiness check of the database: failing, or only `degraded` for a service that serves without it. */
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
export async function checkConnections(config: ServiceConfig, connection: DatabaseConnection): Promise<void> {
  const timeoutMs = config.STARTUP_CONNECT_TIMEOUT_SECONDS * 1_000;
  // Both run to their end, so the line shown is the database's when both fail, whichever failed first.
  const [database, bus] = await Promise.allSettled([checkDatabase(connection, timeoutMs), checkBus(config, timeoutMs)]);
  if (database.status === 'rejected') throw database.reason;
  if (bus.status === 'rejected') throw bus.reason;
}

/** What a failed start prints: a wrong connection setting is one line naming it; anything else keeps its stack. */
export function startFailure(name: string, err: unknown): string {
  if (err instanceof ConnectionCheckError) return `${name} failed to start: ${err.message}`;
  return `${name} failed to start: ${(err as Error)?.stack ?? String(err)}`;
}

/**
 * A service's whole main: startService on the process environment, with the
 * process's signals running the shutdown, and on a failed start a message on
 * stderr and exit code 1. A service whose `workers` says more than one is
 * started in that many forked processes sharing its port (workers.ts).
 */
export function runService<S extends Record<string, VarSpec<unknown>>>(definition: ServiceDefinition<S>): void {
  const config = loadServiceConfig(definition, process.env);
  const workers = definition.workers?.(config) ?? 1;
  if (!isClusterWorker() && workers > 1) {
    runPrimary(definition.name, workers);
    return;
  }
  startWithConfig(definition, config, process).then(
    () => undefined,
    (err: unknown) => {
      process.stderr.write(`${startFailure(definition.name, err)}\n`);
      process.exit(1);
    },
  );
}
