import { busConfigSpec } from '@svc/bus';
import { databaseTlsConfigSpec, env, httpServiceConfigSpec, startupConfigSpec, tracingConfigSpec, type ConfigValues } from '@svc/runtime';

/**
 * The settings every service reads, declared once: HTTP (address, TLS,
 * proxies, log level), the database and how to reach it, the log, how
 * long a start waits for them, and where traces go. A service spreads its own
 * settings after these (and may override a default, such as the pool size).
 */
export const serviceConfigSpec = {
  ...httpServiceConfigSpec,
  DATABASE_URL: env.string({ description: 'PostgreSQL URL (keys, rate limits, the service schemas; the log on the Postgres tier)', secret: true }),
  ...databaseTlsConfigSpec,
  DB_POOL_MAX: env.int({ description: 'Database connections of this process', default: 10, min: 2, max: 200 }),
  ...busConfigSpec,
  ...startupConfigSpec,
  ...tracingConfigSpec,
};
export type ServiceConfig = ConfigValues<typeof serviceConfigSpec>;
