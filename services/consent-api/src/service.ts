import { prefixedTopics } from '@svc/bus';
import type { BuiltService, ServiceContext, ServiceDefinition } from '@svc/service';
import type { ConsentPublisher } from './publisher';
import { mountConsentApi } from './routes-setup';

/** The consent API's part of a process: its topic, its publisher (stopped before the bus), and /v1-consent. */
export async function buildConsentApi({ config, db, bus, logger, lifecycle }: ServiceContext): Promise<BuiltService> {
  const topics = prefixedTopics(config.TOPIC_PREFIX);
  await bus.ensureTopics([topics.consentDecisions]);
  let publisher: ConsentPublisher | undefined;
  lifecycle.registerFirst('consent-publisher', () => publisher?.stop());
  return {
    mount: (router) => {
      publisher = mountConsentApi(router, { db, bus, decisionsTopic: topics.consentDecisions, logger, trustedProxies: config.TRUSTED_PROXIES });
    },
  };
}

/** The consent API as its own deployment (migrations: the migrate job). */
export const consentService: ServiceDefinition<Record<never, never>> = { name: 'consent-api', configSpec: {}, build: buildConsentApi };
