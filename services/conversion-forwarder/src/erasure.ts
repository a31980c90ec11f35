import type { BatchHandler } from '@svc/bus';
import type { ProfileErased } from '@svc/contracts';
import { baseHashSql, type IdentifierHashes } from '@svc/identity';
import type { Db, Logger } from '@svc/runtime';

/** A profile id that names nobody: what a sent conversion of an erased person keeps in place of theirs. */
export const ERASED_PROFILE_ID = '00000000-0000-0000-0000-000000000000';


/**
 * Consumes profiles.erased (the tombstone): the forwarder erases the person
 * from its own tables, the one writer of `conversions`.
 *
 * - Queue rows not sent (queued, failed, dead) are deleted: nothing of them
 *   ever reached a platform, and now nothing will.
 * - Sent rows keep only what the ad platform received, hashed: the contact
 *   details were hashed already and stay so; the messageId (Meta's
 *   event_id), order id, click id, client IP, user agent and page URL become
 *   keyed hashes of `<orgId> U+0000 <field> U+0000 <value>` (IdentifierHashes:
 *   an IPv4 address, or an order number, cannot be found from a copy of the
 *   table by hashing candidates; with the keys, an operator can still match
 *   a value they are given); the transaction facts (event name, time, value, currency,
 *   click type) stay, as the organisation's record of what it sent and was
 *   billed for; the profile and event ids are replaced by the nil UUID.
 * - The person's exhausted click marks are deleted (matched by the
 *   tombstone's click hashes).
 *
 * Idempotent: a redelivered tombstone finds nothing left to change.
 */
export function createErasureHandler(deps: { db: Db; logger: Logger; hashes: IdentifierHashes }): BatchHandler<ProfileErased> {
  /** SQL: the keyed hash of a field's text value (null stays null). */
  const sha = (field: string, expr: string) => `case when ${expr} is null then null else ${deps.hashes.sql(baseHashSql('org_id', `'${field}'`, expr))} end`;
  const keys = deps.hashes.sqlBindings();
  return async (batch) => {
    for (const { value: t } of batch.messages) {
      const counts = await deps.db.transaction(async (trx) => {
        const deleted = await trx.raw(`delete from conversions.queue where org_id = :org and profile_id = any(:profiles::uuid[]) and status <> 'sent'`, { org: t.orgId, profiles: t.profileIds });
        const redacted = await trx.raw(
          `update conversions.queue set
             profile_id = :nobody::uuid, event_id = :nobody::uuid,
             message_id = ${sha('messageId', 'message_id')}, order_id = ${sha('orderId', 'order_id')}, last_error = null,
             conversion = jsonb_build_object(
               'redacted', true,
               'messageId', ${sha('messageId', "conversion ->> 'messageId'")},
               'eventName', conversion -> 'eventName', 'eventTime', conversion -> 'eventTime',
               'value', conversion -> 'value', 'currency', conversion -> 'currency',
               'orderId', ${sha('orderId', "conversion ->> 'orderId'")},
               'hashedEmail', conversion -> 'hashedEmail', 'hashedPhone', conversion -> 'hashedPhone',
               'hashedPhoneDigits', conversion -> 'hashedPhoneDigits',
               'clientIp', ${sha('clientIp', "conversion ->> 'clientIp'")}, 'userAgent', ${sha('userAgent', "conversion ->> 'userAgent'")},
               'pageUrl', ${sha('pageUrl', "conversion ->> 'pageUrl'")},
               'click', jsonb_build_object('type', conversion -> 'click' -> 'type', 'id', ${sha('clickId', "conversion -> 'click' ->> 'id'")},
                                           'firstSeenAt', conversion -> 'click' -> 'firstSeenAt')),
             updated_at = now()
           where org_id = :org and profile_id = any(:profiles::uuid[]) and status = 'sent'`,
          { ...keys, nobody: ERASED_PROFILE_ID, org: t.orgId, profiles: t.profileIds },
        );
        const clicks = await trx.raw(
          `delete from conversions.exhausted_click_ids x
           where x.org_id = :org and ${deps.hashes.sqlMatches(baseHashSql('x.org_id', 'x.click_type', 'x.click_id'), ':clicks::text[]')}`,
          { ...keys, org: t.orgId, clicks: t.clickIds.map((c) => c.hash) },
        );
        return { deleted: rowCount(deleted), redacted: rowCount(redacted), exhaustedClicks: rowCount(clicks) };
      });
      deps.logger.info({ orgId: t.orgId, erasureId: t.erasureId, ...counts }, 'conversion forwarder: erased person removed from the queue');
    }
  };
}

const rowCount = (r: unknown): number => (r as { rowCount?: number }).rowCount ?? 0;
