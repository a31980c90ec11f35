import { env } from '@svc/runtime';

/** Settings only the gateway has (the shared ones are @svc/service's serviceConfigSpec). */
export const gatewayOwnConfigSpec = {
  UPGRADE_URL: env.string({
    description: 'Where a paused organisation upgrades its plan; sent as `upgrade_url` on the paused-ingestion 429',
    default: 'https://dashboard.invalid/billing',
  }),
};
