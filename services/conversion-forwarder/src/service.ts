import { prefixedTopics } from '@svc/bus';
import { checkedIdentifierHashes, requiredIdentifierHashConfigSpec, type IdentifierHashes } from '@svc/identity';
import type { ConfigValues } from '@svc/runtime';
import type { BuiltService, ServiceConfig, ServiceContext, ServiceDefinition } from '@svc/service';
import { forwarderConfigSpec, forwarderOwnConfigSpec } from './config';
import { forwarderMetrics } from './metrics';
import { observeForwarderQueue } from './queue-metrics';
import { parseSecretKey } from './secrets';
import { startForwarder } from './start';

/**
 * The forwarder's part of a process: the candidates consumer and the
 * delivery worker, stopped before the bus. `secretKey` seals connectors'
 * secrets (its own deployment requires CONNECTOR_SECRET_KEY; the standalone
 * stack may keep one in DATA_DIR).
 */
export async function buildForwarder(
  { config, db, bus, logger, metrics, lifecycle, tracing }: ServiceContext<ServiceConfig & ConfigValues<typeof forwarderOwnConfigSpec>>,
  secretKey: Buffer,
  hashes: IdentifierHashes,
): Promise<BuiltService> {
  const forwarder = await startForwarder({
    db,
    bus,
    candidatesTopic: prefixedTopics(config.TOPIC_PREFIX).conversionsCandidates,
    erasures: { topic: prefixedTopics(config.TOPIC_PREFIX).profilesErased, hashes },
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
}

/**
 * The conversion forwarder as its own deployment (migrations: the migrate
 * job). Any number of replicas may run: the bus shares the topic's
 * partitions and the queue is claimed with SKIP LOCKED.
 */
const configSpec = { ...forwarderConfigSpec, ...requiredIdentifierHashConfigSpec };

export const forwarderService: ServiceDefinition<typeof configSpec> = {
  name: 'conversion-forwarder',
  configSpec,
  build: async (ctx) => buildForwarder(ctx, parseSecretKey(ctx.config.CONNECTOR_SECRET_KEY), await checkedIdentifierHashes(ctx.db, ctx.config)),
};
