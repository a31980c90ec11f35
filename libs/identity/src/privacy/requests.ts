import { randomUUID } from 'node:crypto';
import type { Bus } from '@svc/bus';
import { ERASURE_SCOPE, type ErasableIdentifierType, type ErasureRequest, type ErasureView, type TopicSpec } from '@svc/contracts';
import { isoTimestampSql, type Db } from '@svc/runtime';
import { UUID_PATTERN } from '../ids';
import { phoneDefaultOf } from '../identity-rules';
import { resolveProfileId } from '../profiles';
import { DEFAULT_PHONE_COUNTRY_CODE, type PhoneDefault } from '../signals';
import { normaliseIdentifier, type IdentifierHashes } from './hash';

/**
 * Recording an erasure request (the Profiles API's erase routes and `svcctl
 * erase`, the one writer of privacy.erasure_requests) and reading where it
 * stands. The request is recorded first and then put on
 * profiles.erasure-requests (the table is its own outbox, as consent
 * records are): `publishPendingErasures` sends whatever is unpublished, so
 * an outage of the log delays an erasure, never loses it.
 */

export type ErasureTarget = { kind: 'profile'; id: string } | { kind: ErasableIdentifierType; value: string };

export interface ErasureRequestInput {
  orgId: string;
  target: ErasureTarget;
  /** admin-key:<key id>, svcctl:<operator>. */
  actor: string;
  reason?: string | null;
  /** PHONE_DEFAULT_COUNTRY_CODE, to normalise a phone as the resolver did where the organisation's identity rules name no region. */
  defaultPhoneCountryCode?: string;
  /** How identifiers are hashed (IDENTIFIER_HASH_KEYS). */
  hashes: IdentifierHashes;
}

export type ErasureRequestResult =
  | { outcome: 'recorded'; erasure: ErasureView }
  /** An erasure of that profile (or identifier) exists already, pending or done. */
  | { outcome: 'exists'; erasureId: string }
  /** No such profile in the organisation (or the identifier belongs to nobody). */
  | { outcome: 'not_found' };


/** Records an erasure request for the person `target` names; see ErasureRequestResult. */
export async function requestErasure(db: Db, input: ErasureRequestInput): Promise<ErasureRequestResult> {
  const { orgId, target } = input;
  if (!UUID_PATTERN.test(orgId)) return { outcome: 'not_found' };
  return db.transaction(async (trx) => {
    let profileId: string | undefined;
    let targetHash: string | null = null;
    if (target.kind === 'profile') {
      if (target.id.includes('\u0000')) return { outcome: 'not_found' } as const;
      // The id of a profile erased before (the survivor, one merged into it, or its canonical_id).
      const erased = await existingErasure(trx, orgId, { id: target.id });
      if (erased) return { outcome: 'exists', erasureId: erased } as const;
      profileId = await resolveProfileId(trx, orgId, target.id);
    } else {
      const value = normaliseIdentifier(target.kind, target.value, await phoneDefaultFor(trx, orgId, target.kind, input.defaultPhoneCountryCode));
      if (value === null) return { outcome: 'not_found' } as const;
      const forms = input.hashes.lookups(orgId, target.kind, value);
      targetHash = forms[0];
      const owner = (await trx('identity.identity_signals').where({ org_id: orgId, signal_type: target.kind, signal_value: value }).first('profile_id')) as
        | { profile_id: string }
        | undefined;
      profileId = owner ? await resolveProfileId(trx, orgId, owner.profile_id) : undefined;
      if (!profileId) {
        // Erased already: the identifier is suppressed, and names the erasure that suppressed it.
        const suppressed = (await trx('privacy.suppressions').where({ org_id: orgId, identifier_type: target.kind }).whereIn('identifier_hash', forms).whereNotNull('erasure_id').first('erasure_id')) as
          | { erasure_id: string | null }
          | undefined;
        if (suppressed?.erasure_id) return { outcome: 'exists', erasureId: suppressed.erasure_id } as const;
        // Or erased by a request that named this very identifier (its suppression lifted since).
        const named = await trx.raw<{ rows: Array<{ id: string }> }>(
          `select r.id from privacy.erasure_requests r left join privacy.erasure_outcomes o on o.erasure_id = r.id
           where r.org_id = ? and r.target_kind = ? and r.target_hash = any(?::text[]) and (o.status is null or o.status = 'done')
           order by r.requested_at desc limit 1`,
          [orgId, target.kind, forms],
        );
        if (named.rows[0]) return { outcome: 'exists', erasureId: named.rows[0].id } as const;
      }
    }
    if (!profileId) return { outcome: 'not_found' } as const;
    // Two requests for one profile at once: the second waits, then finds the first.
    await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`svc:erasure-request:${orgId}:${profileId}`]);
    const pending = await existingErasure(trx, orgId, { id: profileId });
    if (pending) return { outcome: 'exists', erasureId: pending } as const;

    const { canonical_id: canonicalId } = (await trx('identity.profiles').where({ org_id: orgId, id: profileId }).first('canonical_id')) as { canonical_id: string };
    const id = randomUUID();
    await trx('privacy.erasure_requests').insert({
      id,
      org_id: orgId,
      target_kind: target.kind,
      target_hash: targetHash,
      profile_id: profileId,
      canonical_id: canonicalId,
      scope: [...ERASURE_SCOPE],
      actor: input.actor,
      reason: input.reason ?? null,
    });
    await appendAudit(trx, { orgId, actor: input.actor, action: 'erasure_requested', erasureId: id, details: { requested_by_kind: target.kind, profile_id: profileId } });
    const erasure = await getErasure(trx, orgId, id);
    return { outcome: 'recorded', erasure: erasure! } as const;
  });
}

/**
 * An erasure, pending or done (a failed one may be asked for again), of the
 * profile `id` names: by its id or canonical_id as recorded, or as one of
 * the profiles an erasure removed.
 */
async function existingErasure(db: Db, orgId: string, { id }: { id: string }): Promise<string | undefined> {
  const isUuid = UUID_PATTERN.test(id);
  const { rows } = await db.raw<{ rows: Array<{ id: string }> }>(
    `select r.id from privacy.erasure_requests r
     left join privacy.erasure_outcomes o on o.erasure_id = r.id
     where r.org_id = ? and (o.status is null or o.status = 'done')
       and (r.canonical_id = ? ${isUuid ? `or r.profile_id = ?::uuid or o.profile_ids @> array[?::uuid]` : ''})
     order by r.requested_at limit 1`,
    isUuid ? [orgId, id, id, id] : [orgId, id],
  );
  return rows[0]?.id;
}

const VIEW_SQL = `select r.id, coalesce(o.status, 'pending') as status, o.failure_reason, r.target_kind as requested_by_kind,
         r.profile_id, r.canonical_id, r.scope, r.actor, r.reason,
         ${isoTimestampSql('r.requested_at')} as requested_at,
         ${isoTimestampSql('o.completed_at')} as completed_at,
         case when o.status = 'done' then cardinality(o.profile_ids) end as profiles_erased
  from privacy.erasure_requests r left join privacy.erasure_outcomes o on o.erasure_id = r.id`;

/** An erasure request of the organisation and its status (pending until the resolver's outcome), or undefined. */
export async function getErasure(db: Db, orgId: string, erasureId: string): Promise<ErasureView | undefined> {
  if (!UUID_PATTERN.test(orgId) || !UUID_PATTERN.test(erasureId)) return undefined;
  const { rows } = await db.raw<{ rows: ErasureView[] }>(`${VIEW_SQL} where r.org_id = ? and r.id = ?`, [orgId, erasureId]);
  return rows[0];
}

/**
 * The erasure `id` names: the erasure request's own id, else the newest
 * request of the profile it names (its id or canonical_id as recorded, one
 * of the profiles an erasure removed, or a live profile merged into one
 * under a pending erasure). Undefined when there is none.
 */
export async function findErasure(db: Db, orgId: string, id: string): Promise<ErasureView | undefined> {
  if (!UUID_PATTERN.test(orgId) || id.length === 0 || id.length > 200 || id.includes('\u0000')) return undefined;
  const byId = await getErasure(db, orgId, id);
  if (byId) return byId;
  const isUuid = UUID_PATTERN.test(id);
  const live = await resolveProfileId(db, orgId, id);
  const { rows } = await db.raw<{ rows: ErasureView[] }>(
    `${VIEW_SQL} where r.org_id = ? and (r.canonical_id = ? ${isUuid ? 'or r.profile_id = ?::uuid or o.profile_ids @> array[?::uuid]' : ''} ${live ? 'or r.profile_id = ?::uuid' : ''})
     order by r.requested_at desc limit 1`,
    [orgId, id, ...(isUuid ? [id, id] : []), ...(live ? [live] : [])],
  );
  return rows[0];
}

/** The organisation's erasure requests, newest first. */
export async function listErasures(db: Db, orgId: string, limit = 100): Promise<ErasureView[]> {
  if (!UUID_PATTERN.test(orgId)) return [];
  const { rows } = await db.raw<{ rows: ErasureView[] }>(`${VIEW_SQL} where r.org_id = ? order by r.requested_at desc, r.id limit ?`, [orgId, limit]);
  return rows;
}

/**
 * Puts every recorded, unpublished erasure request on profiles.erasure-requests
 * (keyed by the profile id, like the profile topics) and marks it published.
 * Returns how many it published; throws when the log refused any.
 */
export async function publishPendingErasures(db: Db, bus: Pick<Bus, 'produce'>, topic: TopicSpec): Promise<number> {
  let published = 0;
  for (;;) {
    const rows = (await db('privacy.erasure_requests').whereNull('published_at').orderBy('requested_at').limit(100).select('id', 'org_id', 'profile_id', 'requested_at')) as Array<{
      id: string;
      org_id: string;
      profile_id: string;
      requested_at: Date;
    }>;
    if (rows.length === 0) return published;
    const results = await bus.produce(
      topic,
      rows.map((r) => {
        const value: ErasureRequest = { v: 1, orgId: r.org_id, erasureId: r.id, profileId: r.profile_id, requestedAt: r.requested_at.toISOString() };
        return { key: r.profile_id, value };
      }),
    );
    const done = rows.filter((_, i) => results[i]?.ok).map((r) => r.id);
    if (done.length > 0) await db('privacy.erasure_requests').whereIn('id', done).whereNull('published_at').update({ published_at: db.fn.now() });
    published += done.length;
    if (done.length < rows.length) throw new Error(`${rows.length - done.length} erasure request(s) not published yet`);
  }
}

export type AuditAction = 'erasure_requested' | 'erasure_done' | 'erasure_failed' | 'suppressed' | 'unsuppressed';

export interface AuditEntry {
  orgId: string;
  actor: string;
  action: AuditAction;
  erasureId?: string | null;
  /** Never an erased value: ids, types, hashes, counts, reasons. */
  details?: Record<string, unknown>;
}

/** Appends to the audit trail, in the caller's transaction. */
export async function appendAudit(trx: Db, e: AuditEntry): Promise<void> {
  await trx('privacy.audit_log').insert({ org_id: e.orgId, actor: e.actor, action: e.action, erasure_id: e.erasureId ?? null, details: JSON.stringify(e.details ?? {}) });
}

export interface AuditView {
  id: string;
  at: Date;
  actor: string;
  action: AuditAction;
  erasureId: string | null;
  details: Record<string, unknown>;
}

/** The organisation's audit trail, oldest first (after `afterId`). */
export async function readAudit(db: Db, orgId: string, options: { limit?: number; afterId?: string } = {}): Promise<AuditView[]> {
  if (!UUID_PATTERN.test(orgId)) return [];
  const rows = (await db('privacy.audit_log')
    .where({ org_id: orgId })
    .andWhere('id', '>', options.afterId ?? '0')
    .orderBy('id')
    .limit(options.limit ?? 100)
    .select('id', 'at', 'actor', 'action', 'erasure_id', 'details')) as Array<{ id: string; at: Date; actor: string; action: AuditAction; erasure_id: string | null; details: Record<string, unknown> }>;
  return rows.map((r) => ({ id: String(r.id), at: r.at, actor: r.actor, action: r.action, erasureId: r.erasure_id, details: r.details }));
}

/** How the organisation reads a phone written without its country, when the identifier is one (no statement otherwise). */
async function phoneDefaultFor(db: Db, orgId: string, type: ErasableIdentifierType, fallback = DEFAULT_PHONE_COUNTRY_CODE): Promise<PhoneDefault | undefined> {
  return type === 'phone' ? phoneDefaultOf(db, orgId, fallback) : undefined;
}

export interface UnsuppressInput {
  orgId: string;
  type: ErasableIdentifierType;
  value: string;
  actor: string;
  reason?: string | null;
  defaultPhoneCountryCode?: string;
  hashes: IdentifierHashes;
}

/**
 * Lifts the suppression of one identifier (the person came back and
 * consented again): events carrying it received from now on are stored. The
 * row stays, stamped lifted_at, so every event received before (dropped
 * meanwhile, or from before the erasure) stays out, in a replay too; the
 * erasure's own events no longer open anyway (their keys are gone).
 * Returns whether it was in force; an identifier that cannot be one is a
 * ValidationError for the caller to report.
 */
export async function unsuppress(db: Db, input: UnsuppressInput): Promise<{ lifted: boolean; hash: string } | undefined> {
  if (!UUID_PATTERN.test(input.orgId)) return undefined;
  const value = normaliseIdentifier(input.type, input.value, await phoneDefaultFor(db, input.orgId, input.type, input.defaultPhoneCountryCode));
  if (value === null) return undefined;
  const forms = input.hashes.lookups(input.orgId, input.type, value);
  const hash = forms[0];
  return db.transaction(async (trx) => {
    const removed = (await trx('privacy.suppressions')
      .where({ org_id: input.orgId, identifier_type: input.type })
      .whereIn('identifier_hash', forms)
      .whereNull('lifted_at')
      .update({ lifted_at: trx.raw('clock_timestamp()') })
      .returning('erasure_id')) as Array<{ erasure_id: string | null }>;
    if (removed.length === 0) return { lifted: false, hash };
    await appendAudit(trx, {
      orgId: input.orgId,
      actor: input.actor,
      action: 'unsuppressed',
      erasureId: removed[0]!.erasure_id,
      details: { identifier_type: input.type, identifier_hash: hash, reason: input.reason ?? null },
    });
    return { lifted: true, hash };
  });
}

/**
 * Lifts every suppression an erasure made (the person came back and
 * consented again, and the operator knows the erasure but not the values):
 * returns the identifiers lifted, as types and hashes.
 */
export async function unsuppressErasure(
  db: Db,
  input: { orgId: string; erasureId: string; actor: string; reason?: string | null },
): Promise<Array<{ type: string; hash: string }> | undefined> {
  if (!UUID_PATTERN.test(input.orgId) || !UUID_PATTERN.test(input.erasureId)) return undefined;
  return db.transaction(async (trx) => {
    if (!(await trx('privacy.erasure_requests').where({ org_id: input.orgId, id: input.erasureId }).first('id'))) return undefined;
    const removed = (await trx('privacy.suppressions')
      .where({ org_id: input.orgId, erasure_id: input.erasureId })
      .whereNull('lifted_at')
      .update({ lifted_at: trx.raw('clock_timestamp()') })
      .returning(['identifier_type', 'identifier_hash'])) as Array<{ identifier_type: string; identifier_hash: string }>;
    const lifted = removed.map((r) => ({ type: r.identifier_type, hash: r.identifier_hash })).sort((a, b) => a.type.localeCompare(b.type) || a.hash.localeCompare(b.hash));
    if (lifted.length > 0) {
      await appendAudit(trx, {
        orgId: input.orgId,
        actor: input.actor,
        action: 'unsuppressed',
        erasureId: input.erasureId,
        details: { identifiers: lifted.map((l) => ({ identifier_type: l.type, identifier_hash: l.hash })), reason: input.reason ?? null },
      });
    }
    return lifted;
  });
}
