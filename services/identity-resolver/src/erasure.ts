import type { BatchHandler } from '@svc/bus';
import type { ErasureRequest } from '@svc/contracts';
import type { Db, Logger } from '@svc/runtime';
import { classifyFailure, eraseProfile, inTransactionWithRetry, recordErasureFailure, type IdentifierHashes } from '@svc/identity';
import type { ResolverMetrics } from './metrics';

export interface ErasureHandlerDeps {
  db: Db;
  logger: Logger;
  hashes: IdentifierHashes;
  metrics?: ResolverMetrics;
  /** Called after an erasure committed (the outbox relay's wake-up, for the tombstone). */
  onCommitted?: () => void;
}

/**
 * Consumes profiles.erasure-requests: each request is carried out in a
 * transaction of its own (libs/identity eraseProfile: the same replay and
 * identity locks as the batch path), retried on conflicts. Idempotent: a
 * redelivered request finds its outcome and does nothing. The database
 * unavailable: throws, and the bus delivers the batch again after its
 * back-off. A failure of the data itself is recorded as the request's
 * `failed` outcome with its reason, and the partition moves on.
 */
export function createErasureHandler(deps: ErasureHandlerDeps): BatchHandler<ErasureRequest> {
  return async (batch) => {
    for (const m of batch.messages) {
      const request = m.value;
      const input = { orgId: request.orgId, erasureId: request.erasureId, profileId: request.profileId, hashes: deps.hashes };
      let result: Awaited<ReturnType<typeof eraseProfile>>;
      try {
        result = await inTransactionWithRetry(deps.db, (trx) => eraseProfile(trx, input));
      } catch (err) {
        if (classifyFailure(err) !== 'data') throw err;
        deps.logger.error({ err, erasureId: request.erasureId }, 'erasure failed on its data; recorded as failed');
        const reason = `erasure failed: ${(err as Error).message.split(' - ').pop() ?? 'unknown error'}`.slice(0, 500);
        result = await inTransactionWithRetry(deps.db, (trx) => recordErasureFailure(trx, input, reason));
      }
      if (result.status === 'already') continue;
      deps.metrics?.erasures.inc({ outcome: result.status });
      if (result.status === 'done') {
        deps.logger.info({ orgId: request.orgId, erasureId: request.erasureId, profiles: result.profileIds.length, counts: result.counts }, 'person erased');
        deps.onCommitted?.();
      } else {
        deps.logger.warn({ orgId: request.orgId, erasureId: request.erasureId, reason: result.reason }, 'erasure failed');
      }
    }
  };
}
