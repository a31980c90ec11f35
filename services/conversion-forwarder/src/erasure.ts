import type { BatchHandler } from '@svc/bus';
import type { ProfileErased } from '@svc/contracts';
import { ConversionQueue, forgetExhaustedClicks } from '@svc/conversions';
import type { IdentifierHashes } from '@svc/identity';
import type { Db, Logger } from '@svc/runtime';

/**
 * Consumes profiles.erased (the tombstone): the forwarder erases the person
 * from the `conversions` tables through the schema's store
 * (@svc/conversions), in one transaction per tombstone: unsent queue rows are
 * deleted, sent ones keep only what the platform received, hashed
 * (ConversionQueue.eraseProfiles), and the person's exhausted click marks go
 * (forgetExhaustedClicks).
 *
 * Idempotent: a redelivered tombstone finds nothing left to change.
 */
export function createErasureHandler(deps: { db: Db; logger: Logger; hashes: IdentifierHashes }): BatchHandler<ProfileErased> {
  return async (batch) => {
    for (const { value: t } of batch.messages) {
      const counts = await deps.db.transaction(async (trx) => {
        const { deleted, redacted } = await new ConversionQueue(trx).eraseProfiles(t.orgId, t.profileIds, deps.hashes);
        const exhaustedClicks = await forgetExhaustedClicks(trx, t.orgId, t.clickIds.map((c) => c.hash), deps.hashes);
        return { deleted, redacted, exhaustedClicks };
      });
      deps.logger.info({ orgId: t.orgId, erasureId: t.erasureId, ...counts }, 'conversion forwarder: erased person removed from the queue');
    }
  };
}
