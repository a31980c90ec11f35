import type { BatchHandler } from '@svc/bus';
import type { ProfileErased } from '@svc/contracts';
import type { IdentifierHashes } from '@svc/identity';
import type { Db, Logger } from '@svc/runtime';
import { ConsentStore } from './store';

/**
 * Consumes profiles.erased (the tombstone): the consent API redacts the
 * erased person's decisions in its own table, the one writer of
 * `consent.records`. A record is the person's when its anonymous id is one
 * the identity resolver had stitched to them, its user id is theirs, or its
 * anonymous id was recorded together with their user id in a decision (as
 * the read path finds a user's records). Each keeps only that a decision
 * existed: the purposes and values, the source, the client's and the
 * server's times and the key that wrote it (the organisation's proof that
 * it asked and was answered, which it may have to show); the subject, the
 * client IP and the user agent are cleared, and the record is never
 * published (again). Idempotent: a redacted record is not matched again.
 */
export function createConsentErasureHandler(deps: { db: Db; logger: Logger; hashes: IdentifierHashes }): BatchHandler<ProfileErased> {
  const store = new ConsentStore(deps.db);
  return async (batch) => {
    for (const { value: t } of batch.messages) {
      const redacted = await store.redactErased(t, deps.hashes);
      deps.logger.info({ orgId: t.orgId, erasureId: t.erasureId, redacted }, 'consent: erased person’s decisions redacted');
    }
  };
}
