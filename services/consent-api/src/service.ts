import { prefixedTopics } from '@svc/bus';
import { checkedIdentifierHashes, requiredIdentifierHashConfigSpec } from '@svc/identity';
import type { RepeatingDrain } from '@svc/runtime';
import type { ServiceDefinition } from '@svc/service';
import { createConsentErasureHandler } from './erasure';
import { mountConsentApi } from './routes-setup';

/**
 * The consent API (migrations: the migrate job): its topic, its publisher
 * and its tombstone consumer (stopped before the bus), and /v1-consent.
 */
export const consentService: ServiceDefinition<typeof requiredIdentifierHashConfigSpec> = {
  name: 'consent-api',
  configSpec: requiredIdentifierHashConfigSpec,
  async build({ config, db, bus, logger, lifecycle, failedAuth, dataDir, once }) {
    const hashes = await once(checkedIdentifierHashes, db, config, dataDir);
    const topics = prefixedTopics(config.TOPIC_PREFIX);
    await bus.ensureTopics([topics.consentDecisions, topics.profilesErased]);
    let publisher: RepeatingDrain | undefined;
    lifecycle.registerFirst('consent-publisher', () => publisher?.stop());
    // Tombstones: an erased person's decisions are redacted (erasure.ts).
    const erasures = await bus.subscribe({ groupId: 'consent-api-erasure', topics: [topics.profilesErased], handler: createConsentErasureHandler({ db, logger, hashes }) });
    lifecycle.registerFirst('consent-erasures', () => erasures.stop());
    return {
      mount: (router) => {
        publisher = mountConsentApi(router, { db, bus, decisionsTopic: topics.consentDecisions, logger, trustedProxies: config.TRUSTED_PROXIES, failedAuth });
      },
    };
  },
};
