import { busConfigSpec } from '@svc/bus';
import { env, httpServiceConfigSpec } from '@svc/runtime';

/** Settings only the forwarder has (also read by the standalone stack). */
export const forwarderOwnConfigSpec = {
  CONNECTOR_SECRET_KEY: env.optionalString({
    description:
      'Key that seals connector secrets at rest (32 bytes: 64 hex digits or base64). Required by the forwarder and by `svcctl connector add`; the standalone stack keeps a generated one in DATA_DIR when unset',
    secret: true,
  }),
  FORWARDER_MAX_ATTEMPTS: env.int({
    description: 'Attempts per conversion on 5xx, 429 and network errors before it is marked dead',
    default: 10,
    min: 1,
    max: 100,
  }),
  FORWARDER_RETRY_BASE_MS: env.int({
    description: 'First retry delay of a conversion (milliseconds); doubles per attempt, with jitter',
    default: 30_000,
    min: 10,
    max: 3_600_000,
  }),
  FORWARDER_RETRY_CAP_MS: env.int({
    description: 'Longest retry delay of a conversion (milliseconds)',
    default: 3_600_000,
    min: 10,
    max: 86_400_000,
  }),
  FORWARDER_POLL_INTERVAL_MS: env.int({
    description: 'How often the forwarder looks for conversions due for (re)delivery (milliseconds)',
    default: 1_000,
    min: 10,
    max: 60_000,
  }),
};

/** Everything the forwarder reads when it runs as its own process (HTTP only serves /healthz, /readyz, /metrics). */
export const forwarderConfigSpec = {
  ...httpServiceConfigSpec,
  DATABASE_URL: env.string({ description: 'PostgreSQL URL (connectors, the conversion queue; the log on the Postgres tier)', secret: true }),
  ...busConfigSpec,
  ...forwarderOwnConfigSpec,
};
