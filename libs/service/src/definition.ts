import type { Router } from 'express';
import type { Bus } from '@svc/bus';
import type { ConfigValues, Db, Lifecycle, Logger, Metrics, Tracing, VarSpec } from '@svc/runtime';
import type { FailedAuthThrottle } from '@svc/accounts';
import type { ServiceConfig } from './config';

/** What a service's `build` is handed: everything it may use, already started. */
export interface ServiceContext<C extends ServiceConfig = ServiceConfig> {
  /** Its settings; DB_POOL_MAX is the size of the pool it was handed (`db`). */
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
  /**
   * Where the process keeps the keys it was not given, each generated there
   * once (the standalone stack's DATA_DIR): a key the service's own settings
   * require may then be unset in `config`. Unset for a service on its own,
   * whose configuration has every key.
   */
  dataDir?: string;
  /**
   * `fn(...args)` once per process: every service of the process that asks
   * for the same function gets the first call's promise. For start-up work
   * each service needs and the process needs only once (its keys read and
   * checked), as when the standalone stack hosts them all.
   */
  once<A extends unknown[], T>(fn: (...args: A) => Promise<T>, ...args: A): Promise<T>;
}

/** What a service adds to the process: routes under /functions/v1, and readiness checks beside the database's. */
export interface BuiltService {
  mount?(router: Router): void;
  readiness?: Record<string, () => Promise<unknown>>;
}

/**
 * A service, as its own deployment runs it (runService) and as the
 * standalone stack hosts it beside the others (startServices). The default
 * type stands for a definition of any settings, as a list of several holds
 * them; its functions are methods so that such a list takes each one.
 */
export interface ServiceDefinition<S extends Record<string, VarSpec<unknown>> = Record<string, VarSpec<unknown>>> {
  /** The service's name: logs, metrics' `service` label, the database application name. */
  name: string;
  /** The service's own settings, after serviceConfigSpec's. */
  configSpec: S;
  /**
   * True when the service goes on serving while the database does not answer
   * (the gateway on Kafka): its readiness then reports the database
   * `degraded` instead of failing, so a failover does not take it out of
   * rotation. Default: the database is a hard dependency.
   */
  servesWithoutDatabase?(config: ServiceConfig & ConfigValues<S>): boolean;
  /**
   * For a stateless service: how many processes serve its port (workers.ts);
   * above 1, runService forks them. Default: this process alone.
   */
  workers?(config: ServiceConfig & ConfigValues<S>): number;
  /**
   * Hosted beside other services, the connections of a pool of its own, with
   * a bus client of its own, as in its own deployment: for work that must
   * not wait behind the others' requests for a connection. Default: it
   * shares the process's pool and bus client. On its own, a service's pool
   * is the process's (DB_POOL_MAX).
   */
  ownPoolMax?(config: ServiceConfig & ConfigValues<S>): number;
  build(ctx: ServiceContext<ServiceConfig & ConfigValues<S>>): Promise<BuiltService>;
}

export interface RunningService {
  url: string;
  lifecycle: Lifecycle;
}
