import { preparedRaw, type Db } from '@svc/runtime';

/**
 * Ingestion warnings: what was stored despite something the pipeline could
 * not use, per organisation, for its operators to read (`svcctl warnings`),
 * as PostHog's users read theirs. The identity resolver records them in the
 * batch's transaction, for the events it stores; the metric
 * `resolver_warnings_total{kind}` counts the same, without the organisation.
 *
 * A warning never holds a value the person gave (an invalid phone number
 * stays out): only its kind, the event's messageId and a detail naming the
 * field or the time.
 */
export const WARNING_KINDS = [
  /** A phone trait that is not a valid number of its country: no phone signal made. */
  'unreadable_phone',
  /** A timestamp more than the tolerance in the future: stored as the receive time (detail: the timestamp sent). */
  'timestamp_clamped',
  /** properties or traits over a warn-only cap (detail: `properties: too_deep`). */
  'soft_cap',
  /** An identifier on the organisation's blocked list: not used to stitch (detail: its type). */
  'blocked_identifier',
  /** An identifier not attached: its profile holds as many of its type as the rules allow (detail: which). */
  'identity_limit',
  /** A merge the event would have caused, refused by the rules' limits (detail: which profiles, which limit). */
  'merge_refused',
] as const;
export type WarningKind = (typeof WARNING_KINDS)[number];

export interface IngestionWarning {
  orgId: string;
  kind: WarningKind;
  messageId: string;
  detail: string | null;
}

/** How many warnings each organisation keeps: the newest, whatever their age. */
export const WARNINGS_KEPT_PER_ORG = 1_000;

/**
 * Records warnings, in the caller's transaction, and lets each organisation
 * it wrote for keep its newest WARNINGS_KEPT_PER_ORG (one statement).
 */
export async function recordWarnings(trx: Db, warnings: readonly IngestionWarning[]): Promise<void> {
  if (warnings.length === 0) return;
  await preparedRaw(
    trx,
    `with added as (
       insert into identity.ingestion_warnings (org_id, kind, message_id, detail)
       select * from unnest(:orgs::uuid[], :kinds::text[], :messageIds::text[], :details::text[])
       returning org_id
     )
     delete from identity.ingestion_warnings w
     using (select distinct org_id from added) a
     where w.org_id = a.org_id
       and w.id <= (select x.id from identity.ingestion_warnings x where x.org_id = a.org_id order by x.id desc offset :kept limit 1)`,
    {
      orgs: warnings.map((w) => w.orgId),
      kinds: warnings.map((w) => w.kind),
      messageIds: warnings.map((w) => w.messageId),
      // null: no detail (knex's binding types have no nullable array).
      details: warnings.map((w) => w.detail) as string[],
      // The rows this statement adds are not in its snapshot: it keeps the newest kept - 1 before them.
      kept: WARNINGS_KEPT_PER_ORG - 1,
    },
  );
}

export interface WarningView {
  id: string;
  at: string;
  kind: WarningKind;
  messageId: string;
  detail: string | null;
}

export interface WarningsReport {
  orgId: string;
  /** Per kind, over the warnings kept: how many, and the newest. */
  counts: Array<{ kind: WarningKind; count: number; lastAt: string }>;
  /** The newest first. */
  warnings: WarningView[];
}

/** The organisation's warnings kept: counts by kind, and the newest `limit` (of `kind` when given). */
export async function readWarnings(db: Db, orgId: string, options: { kind?: WarningKind; limit: number }): Promise<WarningsReport> {
  const [counts, recent] = await Promise.all([
    db.raw<{ rows: Array<{ kind: WarningKind; count: string; last_at: Date }> }>(
      `select kind, count(*) as count, max(at) as last_at from identity.ingestion_warnings where org_id = ? group by kind order by kind`,
      [orgId],
    ),
    db.raw<{ rows: Array<{ id: string; at: Date; kind: WarningKind; message_id: string; detail: string | null }> }>(
      `select w.id::text as id, w.at, w.kind, w.message_id, w.detail from identity.ingestion_warnings w
       where w.org_id = ? and (?::text is null or w.kind = ?) order by w.id desc limit ?`,
      [orgId, options.kind ?? null, options.kind ?? null, options.limit],
    ),
  ]);
  return {
    orgId,
    counts: counts.rows.map((r) => ({ kind: r.kind, count: Number(r.count), lastAt: r.last_at.toISOString() })),
    warnings: recent.rows.map((r) => ({ id: r.id, at: r.at.toISOString(), kind: r.kind, messageId: r.message_id, detail: r.detail })),
  };
}
