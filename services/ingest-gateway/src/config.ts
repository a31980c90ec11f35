import { env } from '@svc/runtime';

/** Settings only the gateway has (the shared ones are @svc/service's serviceConfigSpec). */
export const gatewayOwnConfigSpec = {
  UPGRADE_URL: env.string({
    description: 'Where a paused organisation upgrades its plan; sent as `upgrade_url` on the paused-ingestion 429',
    default: 'https://dashboard.invalid/billing',
  }),
  KEY_OUTAGE_GRACE_SECONDS: env.int({
    description:
      'While PostgreSQL does not answer, a key the database confirmed within this many seconds is still honoured, so ingestion on Kafka goes on through a database failover (0: never); a revocation applies on the first request after the database answers',
    default: 300,
    min: 0,
    max: 86_400,
  }),
};
