import { qualifyingConversionNames } from '@svc/conversions';
import { prefixedTopics } from '@svc/bus';
import { checkedIdentifierHashes, masterKeyRing, requiredIdentifierHashConfigSpec, requiredRawLogKeyConfigSpec } from '@svc/identity';
import type { ServiceDefinition } from '@svc/service';
import { resolverConfigSpec } from './config';
import { resolverMetrics } from './metrics';
import { startRehashing } from './rehash';
import { consumersForPool, resolverPoolSize, startResolver } from './start';
import { startRestatingPhones } from './phone-restatement';
import { startUnmerging } from './unmerge';

const configSpec = { ...resolverConfigSpec, ...requiredRawLogKeyConfigSpec, ...requiredIdentifierHashConfigSpec };

/**
 * The identity resolver (migrations: the migrate job): its consumer-group
 * members and the outbox relay, stopped before the bus, and the `resolving`
 * readiness check. As many members as RESOLVER_CONSUMERS asks and its pool
 * (DB_POOL_MAX) allows.
 */
export const resolverService: ServiceDefinition<typeof configSpec> = {
  name: 'identity-resolver',
  configSpec,
  // Beside the gateway (the standalone stack): under load its requests must not keep the resolver's transactions, or its outbox relay, waiting for a connection.
  ownPoolMax: (config) => resolverPoolSize(config.RESOLVER_CONSUMERS),
  async build({ config, db, bus, logger, metrics, lifecycle, tracing, dataDir, once }) {
    const masterKeys = await once(masterKeyRing, config, dataDir);
    const hashes = await once(checkedIdentifierHashes, db, config, dataDir);
    const poolMax = config.DB_POOL_MAX;
    const consumers = Math.min(config.RESOLVER_CONSUMERS, consumersForPool(poolMax));
    if (consumers < config.RESOLVER_CONSUMERS) {
      logger.warn({ consumers, RESOLVER_CONSUMERS: config.RESOLVER_CONSUMERS, poolMax }, 'resolver: the connection pool is too small for RESOLVER_CONSUMERS; running fewer consumers');
    }
    const topics = prefixedTopics(config.TOPIC_PREFIX);
    const ownMetrics = resolverMetrics(metrics);
    const resolver = await startResolver({
      db,
      bus,
      topics,
      erasureRequests: topics.erasureRequests,
      logger,
      metrics: ownMetrics,
      masterKeys,
      hashes,
      groupId: config.RESOLVER_GROUP_ID,
      maxBatchSize: config.RESOLVER_BATCH_SIZE,
      batchWaitMs: config.RESOLVER_BATCH_WAIT_MS,
      consumers,
      relay: { intervalMs: config.OUTBOX_RELAY_INTERVAL_MS },
      ...(tracing.enabled ? { tracer: tracing.tracer('identity-resolver') } : {}),
      batch: {
        defaultPhoneCountryCode: String(config.PHONE_DEFAULT_COUNTRY_CODE),
        // Candidates only for names the organisation's active connectors forward.
        conversionNames: (orgId) => qualifyingConversionNames(db, orgId),
      },
    });
    lifecycle.registerFirst('identity-resolver', () => resolver.stop(), { timeoutMs: 30_000 });
    // Stored identifier hashes brought under the newest key (a rotation, or rows from before keyed hashes).
    const rehash = startRehashing({ db, hashes, logger });
    lifecycle.registerFirst('identifier-rehash', () => rehash.stop());
    // Work found in the database, each a poller of its own, their profiles.changes out with the relay: unmerges the
    // Profiles API recorded, and phone signals queued to be read again (a migration, a region change, svcctl phones restate).
    const background = {
      db,
      logger,
      metrics: ownMetrics,
      options: { defaultPhoneCountryCode: String(config.PHONE_DEFAULT_COUNTRY_CODE) },
      onDone: () => resolver.relay.wake(),
    };
    const unmerges = startUnmerging(background);
    lifecycle.registerFirst('unmerges', () => unmerges.stop());
    const restatements = startRestatingPhones(background);
    lifecycle.registerFirst('phone-restatements', () => restatements.stop());
    return { readiness: { resolving: resolver.stalls.readinessCheck } };
  },
};
