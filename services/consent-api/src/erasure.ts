import type { BatchHandler } from '@svc/bus';
import type { ProfileErased } from '@svc/contracts';
import { baseHashSql, type IdentifierHashes } from '@svc/identity';
import type { Db, Logger } from '@svc/runtime';

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
  // Whether a record's column is one of the tombstone's hashes, computed by the database (keyed as libs/identity's IdentifierHashes).
  const matches = (type: 'anonymous_id' | 'user_id', column: string, hashesSql: string) =>
    deps.hashes.sqlMatches(baseHashSql('org_id', `'${type}'`, column), hashesSql);
  const keys = deps.hashes.sqlBindings();
  return async (batch) => {
    for (const { value: t } of batch.messages) {
      const anon = t.identifiers.filter((i) => i.type === 'anonymous_id').map((i) => i.hash);
      const users = t.identifiers.filter((i) => i.type === 'user_id').map((i) => i.hash);
      const result = await deps.db.raw(
        `with theirs as (
           select id, anonymous_id from consent.records
           where org_id = :org and redacted_at is null
             and ((anonymous_id is not null and ${matches('anonymous_id', 'anonymous_id', ':anon::text[]')})
                  or (user_id is not null and ${matches('user_id', 'user_id', ':users::text[]')}))
         ), linked as (
           select id from consent.records
           where org_id = :org and redacted_at is null
             and anonymous_id in (select anonymous_id from theirs where anonymous_id is not null)
         )
         update consent.records set anonymous_id = null, user_id = null, client_ip = null, user_agent = null,
           redacted_at = now(), erasure_id = :erasure, published_at = coalesce(published_at, now())
         where id in (select id from theirs union select id from linked)`,
        { ...keys, org: t.orgId, anon, users, erasure: t.erasureId },
      );
      deps.logger.info({ orgId: t.orgId, erasureId: t.erasureId, redacted: (result as { rowCount?: number }).rowCount ?? 0 }, 'consent: erased person’s decisions redacted');
    }
  };
}
