import { busConfigSpec } from '@svc/bus';
import { env, httpServiceConfigSpec } from '@svc/runtime';

/** Settings only the gateway has. */
export const gatewayOwnConfigSpec = {
  UPGRADE_URL: env.string({
    description: 'Where a paused organisation upgrades its plan; sent as `upgrade_url` on the paused-ingestion 429',
    default: 'https://dashboard.invalid/billing',
  }),
};

/** Everything the gateway reads when it runs as its own process. */
export const gatewayConfigSpec = {
  ...httpServiceConfigSpec,
  DATABASE_URL: env.string({ description: 'PostgreSQL URL (keys, rate limits, usage; the log on the Postgres tier)', secret: true }),
  ...busConfigSpec,
  ...gatewayOwnConfigSpec,
};
