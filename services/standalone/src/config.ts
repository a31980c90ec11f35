import { busConfigSpec } from '@svc/bus';
import { forwarderOwnConfigSpec } from '@svc/conversion-forwarder';
import { resolverConfigSpec } from '@svc/identity-resolver';
import { identifierHashConfigSpec, rawLogKeyConfigSpec } from '@svc/identity';
import { gatewayOwnConfigSpec } from '@svc/ingest-gateway';
import { profileApiOwnConfigSpec } from '@svc/profile-api';
import { databaseTlsConfigSpec, env, httpServiceConfigSpec, startupConfigSpec, tracingConfigSpec } from '@svc/runtime';

/** Every variable the standalone stack reads; README's configuration table mirrors this. */
export const standaloneConfigSpec = {
  ...httpServiceConfigSpec,
  DATA_DIR: env.string({
    description: 'Where the embedded PostgreSQL keeps its data (and the generated keys when CONNECTOR_SECRET_KEY, RAW_LOG_MASTER_KEY or IDENTIFIER_HASH_KEYS is unset)',
    default: './.data',
  }),
  DATABASE_URL: env.url({
    description: 'PostgreSQL URL; unset starts the embedded PostgreSQL in DATA_DIR',
    default: undefined,
    secret: true,
  }),
  ...databaseTlsConfigSpec,
  ...busConfigSpec,
  ...startupConfigSpec,
  ...gatewayOwnConfigSpec,
  ...profileApiOwnConfigSpec,
  ...forwarderOwnConfigSpec,
  ...resolverConfigSpec,
  ...rawLogKeyConfigSpec,
  ...identifierHashConfigSpec,
  ...tracingConfigSpec,
};
