import { connectorKeyConfigSpec, requiredConnectorKeyConfigSpec } from '@svc/conversions';
import { env } from '@svc/runtime';

/** Settings only the forwarder has (also read by the standalone stack). */
export const forwarderOwnConfigSpec = {
  ...connectorKeyConfigSpec,
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

/** What the forwarder reads on its own, after the shared settings (HTTP only serves /healthz, /readyz, /metrics). */
export const forwarderConfigSpec = {
  ...forwarderOwnConfigSpec,
  // On its own the forwarder has no DATA_DIR to keep a key in: it must be given.
  ...requiredConnectorKeyConfigSpec,
};
