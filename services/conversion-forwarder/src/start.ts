import type { Bus } from '@svc/bus';
import type { ConversionCandidate, ProfileErased, TopicSpec } from '@svc/contracts';
import { ConnectorStore, ConversionQueue, type Connector } from '@svc/conversions';
import type { IdentifierHashes } from '@svc/identity';
import type { Db, Logger, Tracer } from '@svc/runtime';
import { createCandidateHandler } from './consumer';
import { createErasureHandler } from './erasure';
import { DeliveryWorker, type RetryPolicy } from './delivery';
import type { ForwarderMetrics } from './metrics';
import { createPlatformClient } from './platforms';
import type { PlatformClient } from './platforms/types';

export interface StartForwarderOptions {
  db: Db;
  bus: Bus;
  candidatesTopic: TopicSpec;
  /** profiles.erased: the tombstones the forwarder erases its own rows by (not consumed when absent), and how their identifiers are hashed. */
  erasures?: { topic: TopicSpec; hashes: IdentifierHashes };
  /** CONNECTOR_SECRET_KEY, parsed (@svc/conversions' parseSecretKey or resolveSecretKey). */
  secretKey: Buffer;
  logger: Logger;
  metrics?: ForwarderMetrics;
  groupId?: string;
  retry?: RetryPolicy;
  pollIntervalMs?: number;
  leaseMs?: number;
  /** Tests only: replaces the platform clients. */
  clientFor?: (connector: Connector) => PlatformClient;
  /** With tracing on: spans for the candidates consumed and each delivery. */
  tracer?: Tracer;
}

export interface RunningForwarder {
  worker: DeliveryWorker;
  stop(): Promise<void>;
}

/** Consumes conversions.candidates into the queue and delivers the queue to the platforms. */
export async function startForwarder(o: StartForwarderOptions): Promise<RunningForwarder> {
  const connectors = new ConnectorStore(o.db, o.secretKey);
  const queue = new ConversionQueue(o.db);
  const worker = new DeliveryWorker({
    db: o.db,
    connectors,
    queue,
    clientFor: o.clientFor ?? ((c) => createPlatformClient(c.platform, c.config)),
    logger: o.logger,
    ...(o.metrics ? { metrics: o.metrics } : {}),
    ...(o.retry ? { retry: o.retry } : {}),
    ...(o.pollIntervalMs === undefined ? {} : { pollIntervalMs: o.pollIntervalMs }),
    ...(o.leaseMs === undefined ? {} : { leaseMs: o.leaseMs }),
    ...(o.tracer ? { tracer: o.tracer } : {}),
  });
  await o.bus.ensureTopics([o.candidatesTopic, ...(o.erasures ? [o.erasures.topic] : [])]);
  worker.start();
  try {
    const subscription = await o.bus.subscribe<ConversionCandidate>({
      groupId: o.groupId ?? 'conversion-forwarder',
      topics: [o.candidatesTopic],
      handler: createCandidateHandler({
        db: o.db,
        connectors,
        queue,
        logger: o.logger,
        ...(o.metrics ? { metrics: o.metrics } : {}),
        onQueued: () => worker.wake(),
        ...(o.tracer ? { tracer: o.tracer } : {}),
      }),
    });
    const erasures = o.erasures
      ? await o.bus.subscribe<ProfileErased>({
          groupId: `${o.groupId ?? 'conversion-forwarder'}-erasure`,
          topics: [o.erasures.topic],
          handler: createErasureHandler({ db: o.db, logger: o.logger, hashes: o.erasures.hashes }),
        })
      : undefined;
    return {
      worker,
      async stop() {
        await erasures?.stop();
        await subscription.stop();
        await worker.stop();
      },
    };
  } catch (err) {
    await worker.stop();
    throw err;
  }
}
