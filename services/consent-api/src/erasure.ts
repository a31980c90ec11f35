import type { BatchHandler } from '@svc/bus';
import type { ProfileErased } from '@svc/contracts';
import type { Db, Logger } from '@svc/runtime';

/** SQL: the suppression hash (libs/identity identifierHash) of a record's column, computed by the database. */
const hashOf = (type: 'anonymous_id' | 'user_id', column: string) =>
  `encode(sha256(convert_to(org_id::text, 'UTF8') || '\\x00'::bytea || convert_to('${type}', 'UTF8') || '\\x00'::bytea || convert_to(${column}, 'UTF8')), 'hex')`;

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
export function createConsentErasureHandler(deps: { db: Db; logger: Logger }): BatchHandler<ProfileErased> {
  return async (batch) => {
    for (const { value: t } of batch.messages) {
      const anon = t.identifiers.filter((i) => i.type === 'anonymous_id').map((i) => i.hash);
      const users = t.identifiers.filter((i) => i.type === 'user_id').map((i) => i.hash);
      const result = await deps.db.raw(
        `with theirs as (
           select id, anonymous_id from consent.records
           where org_id = :org and redacted_at is null
             and (${hashOf('anonymous_id', 'anonymous_id')} = any(:anon::text[])
                  or (user_id is not null and ${hashOf('user_id', 'user_id')} = any(:users::text[])))
         ), linked as (
           select id from consent.records
           where org_id = :org and redacted_at is null
             and anonymous_id in (select anonymous_id from theirs where anonymous_id is not null)
         )
         update consent.records set anonymous_id = null, user_id = null, client_ip = null, user_agent = null,
           redacted_at = now(), erasure_id = :erasure, published_at = coalesce(published_at, now())
         where id in (select id from theirs union select id from linked)`,
        { org: t.orgId, anon, users, erasure: t.erasureId },
      );
      deps.logger.info({ orgId: t.orgId, erasureId: t.erasureId, redacted: (result as { rowCount?: number }).rowCount ?? 0 }, 'consent: erased person’s decisions redacted');
    }
  };
}
