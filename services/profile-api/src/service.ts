import { prefixedTopics } from '@svc/bus';
import { checkedIdentifierHashes, requiredIdentifierHashConfigSpec, type IdentifierHashes } from '@svc/identity';
import type { ConfigValues } from '@svc/runtime';
import type { BuiltService, ServiceConfig, ServiceContext, ServiceDefinition } from '@svc/service';
import { profileApiOwnConfigSpec } from './config';
import { mountProfileApi } from './routes-setup';

/** The Profiles API's part of a process: /v1-profiles, and the publisher of the erasure requests it records (stopped before the bus). */
export async function buildProfileApi(
  { config, db, bus, logger, lifecycle, failedAuth }: ServiceContext<ServiceConfig & ConfigValues<typeof profileApiOwnConfigSpec>>,
  hashes: IdentifierHashes,
): Promise<BuiltService> {
  const erasureTopic = prefixedTopics(config.TOPIC_PREFIX).erasureRequests;
  await bus.ensureTopics([erasureTopic]);
  let publisher: ReturnType<typeof mountProfileApi>;
  lifecycle.registerFirst('erasure-publisher', () => publisher?.stop());
  return {
    mount: (router) => {
      publisher = mountProfileApi(router, {
        db,
        logger,
        trustedProxies: config.TRUSTED_PROXIES,
        failedAuth,
        cursorSecret: config.CURSOR_SECRET,
        defaultPhoneCountryCode: String(config.PHONE_DEFAULT_COUNTRY_CODE),
        erasures: { bus, topic: erasureTopic, hashes },
      });
    },
  };
}

/** The Profiles API as its own deployment (migrations: the migrate job). It writes (admin merges, erasure requests), so it needs the primary. */
const configSpec = { ...profileApiOwnConfigSpec, ...requiredIdentifierHashConfigSpec };

export const profileApiService: ServiceDefinition<typeof configSpec> = {
  name: 'profile-api',
  configSpec,
  build: async (ctx) => buildProfileApi(ctx, await checkedIdentifierHashes(ctx.db, ctx.config)),
};
