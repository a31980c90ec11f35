import { env } from '@svc/runtime';

/** Every variable the standalone stack reads; README's configuration table mirrors this. */
export const standaloneConfigSpec = {
  HOST: env.string({ description: 'Address the HTTP server listens on', default: '127.0.0.1' }),
  PORT: env.int({ description: 'Port the HTTP server listens on', default: 8080, min: 0, max: 65535 }),
  DATA_DIR: env.string({
    description: 'Where the embedded PostgreSQL keeps its data (unused when DATABASE_URL is set)',
    default: './.data',
  }),
  DATABASE_URL: env.url({
    description: 'PostgreSQL URL; unset starts the embedded PostgreSQL in DATA_DIR',
    default: undefined,
    secret: true,
  }),
  LOG_LEVEL: env.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, {
    description: 'Minimum log level',
    default: 'info',
  }),
};
