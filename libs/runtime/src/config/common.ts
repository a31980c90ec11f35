import { env } from './config';

/** Variables every HTTP service reads; each service spreads these into its own spec. */
export const httpServiceConfigSpec = {
  HOST: env.string({ description: 'Address the HTTP server listens on', default: '127.0.0.1' }),
  PORT: env.int({ description: 'Port the HTTP server listens on', default: 8080, min: 0, max: 65535 }),
  LOG_LEVEL: env.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, {
    description: 'Minimum log level',
    default: 'info',
  }),
  TRUSTED_PROXIES: env.list({
    description: 'Comma-separated CIDRs of proxies whose X-Forwarded-For / X-Forwarded-Proto are believed',
    default: [],
  }),
  TLS_CERT_FILE: env.optionalString({ description: 'PEM certificate chain; with TLS_KEY_FILE the server speaks HTTPS itself' }),
  TLS_KEY_FILE: env.optionalString({ description: 'PEM private key for TLS_CERT_FILE' }),
  UNAUTHENTICATED_PER_MINUTE: env.int({
    description:
      'Requests per minute per client address (an IPv6 client by its /64) whose key does not verify; past it, 429 before any key lookup or body read',
    default: 60,
    min: 1,
  }),
  REQUIRE_HTTPS: env.bool({
    description: 'Refuse API requests that did not arrive over TLS or through a trusted proxy that terminated it (set in production)',
    default: false,
  }),
};
