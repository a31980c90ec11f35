import { checkDatabase, createDb, createLogger, databaseConnection, databaseTlsConfigSpec, env, httpServiceConfigSpec, startupConfigSpec, type ConfigValues, type Db, type Logger } from '@svc/runtime';

/** What every command of the image reads before it touches the database (migrate, topics, a service's schema wait). */
export const jobConfigSpec = {
  DATABASE_URL: env.string({ description: 'PostgreSQL URL', secret: true }),
  ...databaseTlsConfigSpec,
  ...startupConfigSpec,
  LOG_LEVEL: httpServiceConfigSpec.LOG_LEVEL,
};

/** The environment the image's entrypoint read, handed to the command it runs. */
export type Environment = Record<string, string | undefined>;

/**
 * A one-shot command's logger and database pool: logs in first with the
 * command's settings (a wrong one stops it with one line within the start-up
 * timeout), then opens a small pool named for it.
 */
export async function openJobDatabase(config: ConfigValues<typeof jobConfigSpec>, name: string, poolMax: number): Promise<{ logger: Logger; db: Db }> {
  const logger = createLogger({ name, level: config.LOG_LEVEL });
  const connection = databaseConnection(config.DATABASE_URL, config);
  await checkDatabase(connection, config.STARTUP_CONNECT_TIMEOUT_SECONDS * 1_000);
  return { logger, db: createDb({ ...connection, poolMax, applicationName: `svc-${name}` }) };
}
