import { baseHashSql, type IdentifierHashes } from '@svc/identity';
import type { Db } from '@svc/runtime';
import type { Conversion, Platform } from './platforms';
import { rowCount } from './row-count';

/**
 * conversions.queue: one row per conversion per platform, written before any
 * call. Claiming a row takes a lease (next_attempt_at moves into the future),
 * so a process that dies mid-call leaves the row to be retried after the
 * lease, never lost; the platforms' own de-duplication (Meta's event_id,
 * Google's order id / click + action + time) absorbs that rare second call.
 */

export const QUEUE_STATUSES = ['queued', 'sent', 'failed', 'dead'] as const;
export type QueueStatus = (typeof QUEUE_STATUSES)[number];

export interface NewQueueRow {
  orgId: string;
  connectorId: string;
  platform: Platform;
  messageId: string;
  eventId: string;
  profileId: string;
  eventName: string;
  orderId: string | null;
  conversion: Conversion;
  /** With tracing on: the span that queued it (its delivery's span is a child). */
  traceparent?: string;
}

export interface ClaimedRow {
  id: string;
  orgId: string;
  connectorId: string;
  platform: Platform;
  attempts: number;
  conversion: Conversion;
  traceparent: string | null;
}

/** What `svcctl conversions list` shows: no secrets, no contact details, not even hashed. */
export interface QueueView {
  id: string;
  connectorId: string;
  platform: Platform;
  messageId: string;
  eventName: string;
  orderId: string | null;
  value: number | null;
  currency: string;
  clickType: string;
  status: QueueStatus;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
  sentAt: Date | null;
}

interface StoredConversion extends Omit<Conversion, 'eventTime' | 'click'> {
  eventTime: string;
  click: { type: string; id: string; firstSeenAt: string };
}

const revive = (c: StoredConversion): Conversion => ({
  ...c,
  eventTime: new Date(c.eventTime),
  click: { ...c.click, firstSeenAt: new Date(c.click.firstSeenAt) },
});

/** A profile id that names nobody: what a sent conversion of an erased person keeps in place of theirs. */
export const ERASED_PROFILE_ID = '00000000-0000-0000-0000-000000000000';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class ConversionQueue {
  constructor(private readonly db: Db) {}

  /**
   * Queues what is new; a row whose message (redelivery) or order id (a
   * repeated order) is already queued for that platform is skipped. Returns
   * the platform of each row queued.
   */
  async enqueue(rows: readonly NewQueueRow[]): Promise<Platform[]> {
    if (rows.length === 0) return [];
    const inserted = (await this.db('conversions.queue')
      .insert(
        rows.map((r) => ({
          org_id: r.orgId,
          connector_id: r.connectorId,
          platform: r.platform,
          message_id: r.messageId,
          event_id: r.eventId,
          profile_id: r.profileId,
          event_name: r.eventName,
          order_id: r.orderId,
          conversion: JSON.stringify(r.conversion),
          traceparent: r.traceparent ?? null,
        })),
      )
      .onConflict()
      .ignore()
      .returning('platform')) as Array<{ platform: Platform }>;
    return inserted.map((r) => r.platform);
  }

  /** Takes up to `limit` due rows of active connectors, leasing each for `leaseMs`. */
  async claimDue(limit: number, leaseMs: number): Promise<ClaimedRow[]> {
    const { rows } = await this.db.raw<{
      rows: Array<{ id: string; org_id: string; connector_id: string; platform: Platform; attempts: number; conversion: StoredConversion; traceparent: string | null }>;
    }>(
      `update conversions.queue q
       set attempts = q.attempts + 1, next_attempt_at = now() + make_interval(secs => ?), updated_at = now()
       where q.id in (
         select d.id from conversions.queue d
         join conversions.connectors c on c.id = d.connector_id and c.state = 'active'
         where d.status = 'queued' and d.next_attempt_at <= now()
         order by d.next_attempt_at
         limit ?
         for update of d skip locked)
       returning q.id, q.org_id, q.connector_id, q.platform, q.attempts, q.conversion, q.traceparent`,
      [leaseMs / 1000, limit],
    );
    return rows.map((r) => ({
      id: String(r.id),
      orgId: r.org_id,
      connectorId: r.connector_id,
      platform: r.platform,
      attempts: r.attempts,
      conversion: revive(r.conversion),
      traceparent: r.traceparent,
    }));
  }

  async markSent(id: string, status: number): Promise<void> {
    await this.db('conversions.queue')
      .where({ id })
      .update({ status: 'sent', last_status: status, last_error: null, sent_at: this.db.fn.now(), updated_at: this.db.fn.now() });
  }

  async retryLater(id: string, status: number | null, error: string, delayMs: number): Promise<void> {
    await this.db('conversions.queue')
      .where({ id })
      .update({
        last_status: status,
        last_error: error,
        next_attempt_at: this.db.raw('now() + make_interval(secs => ?)', [delayMs / 1000]),
        updated_at: this.db.fn.now(),
      });
  }

  /** `failed` (refused for good) or `dead` (retries used up). */
  async finish(id: string, status: 'failed' | 'dead', httpStatus: number | null, error: string): Promise<void> {
    await this.db('conversions.queue')
      .where({ id })
      .update({ status, last_status: httpStatus, last_error: error, updated_at: this.db.fn.now() });
  }

  async list(orgId: string, options: { status?: QueueStatus; limit?: number } = {}): Promise<QueueView[]> {
    if (!UUID.test(orgId)) return [];
    const rows = (await this.db('conversions.queue')
      .where({ org_id: orgId })
      .modify((q) => {
        if (options.status) void q.andWhere({ status: options.status });
      })
      .orderBy('id', 'desc')
      .limit(options.limit ?? 100)) as Array<{
      id: string;
      connector_id: string;
      platform: Platform;
      message_id: string;
      event_name: string;
      order_id: string | null;
      conversion: StoredConversion;
      status: QueueStatus;
      attempts: number;
      last_status: number | null;
      last_error: string | null;
      next_attempt_at: Date;
      created_at: Date;
      sent_at: Date | null;
    }>;
    return rows.map((r) => ({
      id: String(r.id),
      connectorId: r.connector_id,
      platform: r.platform,
      messageId: r.message_id,
      eventName: r.event_name,
      orderId: r.order_id,
      value: r.conversion.value,
      currency: r.conversion.currency,
      clickType: r.conversion.click.type,
      status: r.status,
      attempts: r.attempts,
      lastStatus: r.last_status,
      lastError: r.last_error,
      nextAttemptAt: r.status === 'queued' ? r.next_attempt_at : null,
      createdAt: r.created_at,
      sentAt: r.sent_at,
    }));
  }

  /**
   * Erases an organisation's profiles from the queue (profiles.erased). Rows
   * not sent are deleted: nothing of them ever reached a platform, and now
   * nothing will. A sent row keeps only what the platform received, hashed:
   * the contact details were hashed already and stay so; the messageId
   * (Meta's event_id), order id, click id, client IP, user agent and page
   * URL become keyed hashes of `<orgId> U+0000 <field> U+0000 <value>`
   * (`hashes`: an IPv4 address, or an order number, cannot be found from a
   * copy of the table by hashing candidates; with the keys, an operator can
   * still match a value they are given); the transaction facts (event name,
   * time, value, currency, click type) stay, as the organisation's record of
   * what it sent and was billed for; the profile and event ids are replaced
   * by the nil UUID. Idempotent: a second call finds nothing left to change.
   */
  async eraseProfiles(orgId: string, profileIds: readonly string[], hashes: IdentifierHashes): Promise<{ deleted: number; redacted: number }> {
    /** SQL: the keyed hash of a field's text value (null stays null). */
    const sha = (field: string, expr: string) => `case when ${expr} is null then null else ${hashes.sql(baseHashSql('org_id', `'${field}'`, expr))} end`;
    const deleted = await this.db.raw(`delete from conversions.queue where org_id = :org and profile_id = any(:profiles::uuid[]) and status <> 'sent'`, { org: orgId, profiles: profileIds });
    const redacted = await this.db.raw(
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
      { ...hashes.sqlBindings(), nobody: ERASED_PROFILE_ID, org: orgId, profiles: profileIds },
    );
    return { deleted: rowCount(deleted), redacted: rowCount(redacted) };
  }
}
