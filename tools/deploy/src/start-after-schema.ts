import { constants } from 'node:os';
import { checkDatabase, ConnectionCheckError, createLogger, databaseConnection, loadConfigOrExit } from '@svc/runtime';
import { allMigrations } from '@svc/standalone';
import { jobConfigSpec as configSpec, type Environment } from './job-config';
import { waitForSchema } from './schema-wait';

/**
 * Starts a service the way a deployment does: it refuses to start until the
 * database has every migration of this release (the migrate job applies
 * them; a service never does), then loads the service's composition root
 * (its main, which runs it) into this process, which reads its own
 * configuration and installs its own shutdown.
 */
export async function startAfterSchema(name: string, main: string, environment: Environment): Promise<void> {
  exitOnSignalUntilHandled();
  const config = loadConfigOrExit(configSpec, environment);
  try {
    const connection = databaseConnection(config.DATABASE_URL, config);
    // A wrong setting stops here with one line; a database that answers but is not migrated yet is waited for.
    await checkDatabase(connection, config.STARTUP_CONNECT_TIMEOUT_SECONDS * 1_000);
    await waitForSchema(connection, allMigrations, createLogger({ name, level: config.LOG_LEVEL }));
  } catch (err) {
    if (!(err instanceof ConnectionCheckError)) throw err;
    process.stderr.write(`${name} failed to start: ${err.message}\n`);
    process.exit(1);
  }
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
