import { constants } from 'node:os';
import { createLogger, env, httpServiceConfigSpec, loadConfigOrExit } from '@svc/runtime';
import { allMigrations } from '@svc/standalone';
import { waitForSchema } from './schema-wait';

const configSpec = {
  DATABASE_URL: env.string({ description: 'PostgreSQL URL', secret: true }),
  LOG_LEVEL: httpServiceConfigSpec.LOG_LEVEL,
};

/**
 * Runs a service the way a deployment does: it refuses to start until the
 * database has every migration of this release (the migrate job applies
 * them; a service never does), then loads the service's composition root
 * into this process, which reads its own configuration and installs its own
 * shutdown.
 */
export async function runService(name: string, main: string): Promise<void> {
  exitOnSignalUntilHandled();
  const config = loadConfigOrExit(configSpec, process.env);
  await waitForSchema(config.DATABASE_URL, allMigrations, createLogger({ name, level: config.LOG_LEVEL }));
  await import(main);
}

/**
 * As a container's PID 1, Node ignores a signal nobody listens for, and
 * `docker stop` would wait for its SIGKILL. Until the service has installed
 * its own shutdown (its Lifecycle's listeners), SIGTERM or SIGINT ends the
 * process at once; from then on this listener steps aside.
 */
function exitOnSignalUntilHandled(): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (process.listenerCount(signal) === 1) process.exit(128 + constants.signals[signal]);
    });
  }
}
