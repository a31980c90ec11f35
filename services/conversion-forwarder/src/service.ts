import { prefixedTopics } from '@svc/bus';
import { parseSecretKey, resolveSecretKey } from '@svc/conversions';
import { checkedIdentifierHashes, requiredIdentifierHashConfigSpec } from '@svc/identity';
import type { ServiceDefinition } from '@svc/service';
import { forwarderConfigSpec } from './config';
import { forwarderMetrics } from './metrics';
import { observeForwarderQueue } from './queue-metrics';
import { startForwarder } from './start';

const configSpec = { ...forwarderConfigSpec, ...requiredIdentifierHashConfigSpec };

/**
 * The conversion forwarder (migrations: the migrate job): the candidates
 * consumer and the delivery worker, stopped before the bus. Any number of
 * replicas may run: the bus shares the topic's partitions and the queue is
 * claimed with SKIP LOCKED.
 */
export const forwarderService: ServiceDefinition<typeof configSpec> = {
  name: 'conversion-forwarder',
  configSpec,
  async build({ config, db, bus, logger, metrics, lifecycle, tracing, dataDir, once }) {
    // Seals connectors' secrets: its own deployment requires CONNECTOR_SECRET_KEY; the standalone stack may keep one in DATA_DIR.
    const secretKey = dataDir === undefined ? parseSecretKey(config.CONNECTOR_SECRET_KEY) : await resolveSecretKey(config.CONNECTOR_SECRET_KEY, dataDir);
    const hashes = await once(checkedIdentifierHashes, db, config, dataDir);
    const topics = prefixedTopics(config.TOPIC_PREFIX);
    const forwarder = await startForwarder({
      db,
      bus,
      candidatesTopic: topics.conversionsCandidates,
      erasures: { topic: topics.profilesErased, hashes },
      secretKey,
      logger,
      metrics: forwarderMetrics(metrics),
      retry: { maxAttempts: config.FORWARDER_MAX_ATTEMPTS, baseMs: config.FORWARDER_RETRY_BASE_MS, capMs: config.FORWARDER_RETRY_CAP_MS },
      pollIntervalMs: config.FORWARDER_POLL_INTERVAL_MS,
      ...(tracing.enabled ? { tracer: tracing.tracer('conversion-forwarder') } : {}),
    });
    lifecycle.registerFirst('conversion-forwarder', () => forwarder.stop(), { timeoutMs: 30_000 });
    observeForwarderQueue(metrics, db);
    return {};
  },
};
