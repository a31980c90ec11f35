import { busConfigSpec } from '@svc/bus';
import { env, httpServiceConfigSpec, type ConfigValues } from '@svc/runtime';

/**
 * The settings every service reads, declared once: HTTP (address, TLS,
 * proxies, log level), the database, and the log. A service spreads its own
 * settings after these (and may override a default, such as the pool size).
 */
export const serviceConfigSpec = {
  ...httpServiceConfigSpec,
  DATABASE_URL: env.string({ description: 'PostgreSQL URL (keys, rate limits, the service schemas; the log on the Postgres tier)', secret: true }),
  DB_POOL_MAX: env.int({ description: 'Database connections of this process', default: 10, min: 2, max: 200 }),
  ...busConfigSpec,
};
export type ServiceConfig = ConfigValues<typeof serviceConfigSpec>;
