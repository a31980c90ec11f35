import type { Router } from 'express';
import type { Bus } from '@svc/bus';
import type { TopicSpec } from '@svc/contracts';
import { SubjectKeys, type IdentifierHashes, type MasterKeyRing } from '@svc/identity';
import { mountOpenApiDocument } from '@svc/openapi';
import type { Db, Logger, Metrics } from '@svc/runtime';
import { AccountsStore, InProcessRateLimiter, KeyCache, PostgresRateLimiter, type FailedAuthThrottle } from '@svc/accounts';
import { mountBatchRoute, type GatewayDeps } from './batch-route';
import { rememberedThroughOutage } from './limits';
import { gatewayMetrics } from './metrics';
import { mountSegmentRoutes } from './segment/routes';

export interface GatewayWiring {
  db: Db;
  bus: Bus;
  rawTopic: TopicSpec;
  logger: Logger;
  metrics: Metrics;
  trustedProxies: readonly string[];
  failedAuth: FailedAuthThrottle;
  upgradeUrl: string;
  /** KEY_OUTAGE_GRACE_SECONDS, in ms. */
  keyOutageGraceMs: number;
  /** Wraps the data keys that seal the raw log (RAW_LOG_MASTER_KEY). */
  masterKeys: MasterKeyRing;
  /** Names a visitor's data key by the keyed hash of their anonymous id (IDENTIFIER_HASH_KEYS). */
  hashes: IdentifierHashes;
}

/** Builds the gateway's real dependencies and mounts its routes (/v1-batch and the Segment-compatible ones); used by main.ts and the standalone stack. */
export function mountGateway(router: Router, w: GatewayWiring): void {
  const accounts = new AccountsStore(w.db);
  const deps: GatewayDeps = {
    // Keys held per process, each use confirmed in the request's rate-limit statement: one round trip, not two.
    keys: new KeyCache(accounts, { outageGraceMs: w.keyOutageGraceMs }),
    rateLimiter: new PostgresRateLimiter(w.db),
    fallbackRateLimiter: new InProcessRateLimiter(),
    readUsage: rememberedThroughOutage((orgId, at) => accounts.monthlyUsage(orgId, at), w.keyOutageGraceMs),
    bus: w.bus,
    subjectKeys: new SubjectKeys(w.db, w.masterKeys, w.hashes),
    rawTopic: w.rawTopic,
    trustedProxies: w.trustedProxies,
    failedAuth: w.failedAuth,
    upgradeUrl: w.upgradeUrl,
    metrics: gatewayMetrics(w.metrics),
    logger: w.logger,
  };
  mountBatchRoute(router, deps);
  mountSegmentRoutes(router, deps);
  // The gateway is the API's front door, so it serves the API's description.
  mountOpenApiDocument(router);
}
