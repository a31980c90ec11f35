import { createLogger, databaseConnection, loadConfigOrExit, ConnectionCheckError, type ConfigValues, type SignalTarget, type VarSpec } from '@svc/runtime';
import { serviceConfigSpec, type ServiceConfig } from './config';
import type { RunningService, ServiceDefinition } from './definition';
import { checkConnections, startServices } from './start-services';
import { isClusterWorker, runPrimary } from './workers';

/**
 * Starts a service on its own: configuration read once (a bad value exits
 * 78 naming it), then startServices with this one service, on the
 * configured database, its metrics labelled with its name.
 */
export async function startService<S extends Record<string, VarSpec<unknown>>>(
  definition: ServiceDefinition<S>,
  env: Record<string, string | undefined>,
  /** Where SIGTERM and SIGINT come from (the process); handled from the start, before anything is built. */
  signals?: SignalTarget,
): Promise<RunningService> {
  return startAlone(definition, loadServiceConfig(definition, env), signals);
}

/** The service's configuration, read once: the shared settings, then its own (a bad value exits 78 naming it). */
function loadServiceConfig<S extends Record<string, VarSpec<unknown>>>(definition: ServiceDefinition<S>, env: Record<string, string | undefined>): ServiceConfig & ConfigValues<S> {
  // The values of the two specs together (TypeScript cannot see through the generic spread).
  return loadConfigOrExit({ ...serviceConfigSpec, ...definition.configSpec }, env) as ServiceConfig & ConfigValues<S>;
}

function startAlone<S extends Record<string, VarSpec<unknown>>>(definition: ServiceDefinition<S>, config: ServiceConfig & ConfigValues<S>, signals: SignalTarget | undefined): Promise<RunningService> {
  return startServices([definition], config, {
    name: definition.name,
    logger: createLogger({ name: definition.name, level: config.LOG_LEVEL }),
    signals,
    connect: async () => {
      const connection = databaseConnection(config.DATABASE_URL, config);
      await checkConnections(config, connection);
      return connection;
    },
    pool: { max: config.DB_POOL_MAX, name: definition.name, applicationName: definition.name },
    metricLabels: { service: definition.name },
  });
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
  startAlone(definition, config, process).then(
    () => undefined,
    (err: unknown) => {
      process.stderr.write(`${startFailure(definition.name, err)}\n`);
      process.exit(1);
    },
  );
}
