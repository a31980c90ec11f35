import { prefixedTopics } from '@svc/bus';
import { checkedIdentifierHashes, masterKeyRing, requiredIdentifierHashConfigSpec, requiredRawLogKeyConfigSpec } from '@svc/identity';
import { env } from '@svc/runtime';
import type { ServiceDefinition } from '@svc/service';
import { gatewayOwnConfigSpec } from './config';
import { mountGateway } from './routes';

const configSpec = {
  ...gatewayOwnConfigSpec,
  ...requiredRawLogKeyConfigSpec,
  ...requiredIdentifierHashConfigSpec,
  // Each request checks the key, the limits and the usage: more connections than the other services.
  DB_POOL_MAX: env.int({ description: 'Database connections of this process (of each worker)', default: 20, min: 2, max: 200 }),
  GATEWAY_WORKERS: env.int({
    description:
      'Processes serving the port (node:cluster), each a whole gateway with its own pool: one per core the gateway may use on its machine (1: this process alone; in Kubernetes, scale replicas instead)',
    default: 1,
    min: 1,
    max: 64,
  }),
};

/**
 * The ingest gateway (migrations: the migrate job): the raw topic, and POST
 * /v1-batch. Stateless: run as many replicas as load asks.
 */
export const gatewayService: ServiceDefinition<typeof configSpec> = {
  name: 'ingest-gateway',
  configSpec,
  async build({ config, db, bus, logger, metrics, failedAuth, dataDir, once }) {
    const masterKeys = await once(masterKeyRing, config, dataDir);
    const hashes = await once(checkedIdentifierHashes, db, config, dataDir);
    const topics = prefixedTopics(config.TOPIC_PREFIX);
    await bus.ensureTopics([topics.eventsRaw]);
    return {
      mount: (router) =>
        mountGateway(router, {
          db,
          bus,
          rawTopic: topics.eventsRaw,
          logger,
          metrics,
          trustedProxies: config.TRUSTED_PROXIES,
          failedAuth,
          upgradeUrl: config.UPGRADE_URL,
          keyOutageGraceMs: config.KEY_OUTAGE_GRACE_SECONDS * 1_000,
          masterKeys,
          hashes,
        }),
    };
  },
  // On Kafka the log is its only hard dependency: API keys and visitors' data keys held, and limits counted, in-process carry it through a database failover.
  servesWithoutDatabase: (config) => config.KAFKA_BROKERS.length > 0,
  workers: (config) => config.GATEWAY_WORKERS,
};
