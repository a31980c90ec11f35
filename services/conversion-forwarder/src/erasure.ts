import type { BatchHandler } from '@svc/bus';
import type { ProfileErased } from '@svc/contracts';
import type { Db, Logger } from '@svc/runtime';

/** A profile id that names nobody: what a sent conversion of an erased person keeps in place of theirs. */
export const ERASED_PROFILE_ID = '00000000-0000-0000-0000-000000000000';

/** SQL: SHA-256 hex of a text expression (null stays null). */
const sha = (expr: string) => `case when ${expr} is null then null else encode(sha256(convert_to(${expr}, 'UTF8')), 'hex') end`;

/**
 * Consumes profiles.erased (the tombstone): the forwarder erases the person
 * from its own tables, the one writer of `conversions`.
 *
 * - Queue rows not sent (queued, failed, dead) are deleted: nothing of them
 *   ever reached a platform, and now nothing will.
 * - Sent rows keep only what the ad platform received, hashed: the contact
 *   details were hashed already and stay so; the messageId (Meta's
 *   event_id), order id, click id, client IP, user agent and page URL become
 *   their SHA-256; the transaction facts (event name, time, value, currency,
 *   click type) stay, as the organisation's record of what it sent and was
 *   billed for; the profile and event ids are replaced by the nil UUID.
 * - The person's exhausted click marks are deleted (matched by the
 *   tombstone's click hashes).
 *
 * Idempotent: a redelivered tombstone finds nothing left to change.
 */
export function createErasureHandler(deps: { db: Db; logger: Logger }): BatchHandler<ProfileErased> {
  return async (batch) => {
    for (const { value: t } of batch.messages) {
      const counts = await deps.db.transaction(async (trx) => {
        const deleted = await trx.raw(`delete from conversions.queue where org_id = ? and profile_id = any(?::uuid[]) and status <> 'sent'`, [t.orgId, t.profileIds]);
        const redacted = await trx.raw(
          `update conversions.queue set
             profile_id = ?::uuid, event_id = ?::uuid,
             message_id = ${sha('message_id')}, order_id = ${sha('order_id')}, last_error = null,
             conversion = jsonb_build_object(
               'redacted', true,
               'messageId', ${sha("conversion ->> 'messageId'")},
               'eventName', conversion -> 'eventName', 'eventTime', conversion -> 'eventTime',
               'value', conversion -> 'value', 'currency', conversion -> 'currency',
               'orderId', ${sha("conversion ->> 'orderId'")},
               'hashedEmail', conversion -> 'hashedEmail', 'hashedPhone', conversion -> 'hashedPhone',
               'hashedPhoneDigits', conversion -> 'hashedPhoneDigits',
               'clientIp', ${sha("conversion ->> 'clientIp'")}, 'userAgent', ${sha("conversion ->> 'userAgent'")},
               'pageUrl', ${sha("conversion ->> 'pageUrl'")},
               'click', jsonb_build_object('type', conversion -> 'click' -> 'type', 'id', ${sha("conversion -> 'click' ->> 'id'")},
                                           'firstSeenAt', conversion -> 'click' -> 'firstSeenAt')),
             updated_at = now()
           where org_id = ? and profile_id = any(?::uuid[]) and status = 'sent'`,
          [ERASED_PROFILE_ID, ERASED_PROFILE_ID, t.orgId, t.profileIds],
        );
        const clicks = await trx.raw(
          `delete from conversions.exhausted_click_ids x
           where x.org_id = ? and encode(sha256(convert_to(x.org_id::text, 'UTF8') || '\\x00'::bytea || convert_to(x.click_type, 'UTF8') || '\\x00'::bytea || convert_to(x.click_id, 'UTF8')), 'hex') = any(?::text[])`,
          [t.orgId, t.clickIds.map((c) => c.hash)],
        );
        return { deleted: rowCount(deleted), redacted: rowCount(redacted), exhaustedClicks: rowCount(clicks) };
      });
      deps.logger.info({ orgId: t.orgId, erasureId: t.erasureId, ...counts }, 'conversion forwarder: erased person removed from the queue');
    }
  };
}

const rowCount = (r: unknown): number => (r as { rowCount?: number }).rowCount ?? 0;
