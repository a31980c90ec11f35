import { databaseTlsConfigSpec, env, httpServiceConfigSpec, startupConfigSpec } from '@svc/runtime';

/** What every command of the image reads before it touches the database (migrate, topics, a service's schema wait). */
export const jobConfigSpec = {
  DATABASE_URL: env.string({ description: 'PostgreSQL URL', secret: true }),
  ...databaseTlsConfigSpec,
  ...startupConfigSpec,
  LOG_LEVEL: httpServiceConfigSpec.LOG_LEVEL,
};
