import { prefixedTopics } from '@svc/bus';
import { checkedIdentifierHashes, requiredIdentifierHashConfigSpec } from '@svc/identity';
import type { ServiceDefinition } from '@svc/service';
import { profileApiOwnConfigSpec } from './config';
import { mountProfileApi } from './routes-setup';

const configSpec = { ...profileApiOwnConfigSpec, ...requiredIdentifierHashConfigSpec };

/**
 * The Profiles API (migrations: the migrate job): /v1-profiles, and the
 * publisher of the erasure requests it records (stopped before the bus). It
 * writes (admin merges, erasure requests), so it needs the primary.
 */
export const profileApiService: ServiceDefinition<typeof configSpec> = {
  name: 'profile-api',
  configSpec,
  async build({ config, db, bus, logger, lifecycle, failedAuth, dataDir, once }) {
    const hashes = await once(checkedIdentifierHashes, db, config, dataDir);
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
  },
};
