import type { ProfileErased } from '@svc/contracts';
import type { Db } from '@svc/runtime';
import { signalLockKey } from '../ids';
import { OUTBOX_INSERT, outboxRecords, type OutboxMessage } from '../outbox-records';
import { resolveProfileId } from '../profiles';
import { HOLD_OFF_REPLAY } from '../replay-lock';
import type { SignalType } from '../signals';
import type { IdentifierHashes } from './hash';
import { appendAudit } from './requests';
import { deleteSubjectKeys } from './subject-keys';

/**
 * Carrying an erasure out, in the caller's transaction (the identity
 * resolver's, the one writer of `identity`): the person's profile and every
 * profile merged into it, their identity signals, stored events, sessions,
 * click IDs, fingerprints, merge records (and their unmerges), the
 * kept-apart rules naming their identifiers, and pending outbox rows are
 * deleted, from the live projections and from any `identity_before_replay_*`
 * schema a replay kept; the data keys of their anonymous ids are deleted, so
 * their events in the raw log no longer open; every identifier they had is
 * suppressed (hashed);
 * the outcome and the audit rows are written; and the tombstone
 * (profiles.erased) goes into the outbox. Idempotent: an erasure with an
 * outcome is not carried out again.
 *
 * Locking, as the batch path's: the replay lock (shared), then the advisory
 * lock of every identity signal the person has (sorted, one statement), then
 * the profile rows. A batch that touches the person holds one of those
 * signal locks, so it finishes first (and is erased with the rest) or waits
 * and then finds the identifiers suppressed.
 */

export interface EraseInput {
  orgId: string;
  erasureId: string;
  /** The profile the request named (followed to its survivor). */
  profileId: string;
  actor?: string;
  /** How identifiers are hashed for the suppression list, the audit log and the tombstone. */
  hashes: IdentifierHashes;
}

export type EraseResult =
  | { status: 'done'; profileIds: string[]; counts: Record<string, number>; tombstone: ProfileErased }
  | { status: 'failed'; reason: string }
  /** An outcome exists already (a redelivered request). */
  | { status: 'already' };

const ACTOR = 'identity-resolver';

export async function eraseProfile(trx: Db, input: EraseInput): Promise<EraseResult> {
  const { orgId, erasureId } = input;
  const actor = input.actor ?? ACTOR;
  await trx.raw(`select ${HOLD_OFF_REPLAY}`);
  // Two deliveries of one request: the second waits here for the first, then finds its outcome.
  await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`svc:erasure:${erasureId}`]);
  if (await trx('privacy.erasure_outcomes').where({ erasure_id: erasureId }).first('erasure_id')) return { status: 'already' };
  const request = await trx('privacy.erasure_requests').where({ id: erasureId, org_id: orgId }).first('id');
  if (!request) return fail(trx, input, actor, 'the erasure request is not recorded', false);

  let survivor = await resolveProfileId(trx, orgId, input.profileId);
  if (!survivor) return fail(trx, input, actor, 'the profile no longer exists');
  let signals: Array<{ signal_type: SignalType; signal_value: string }> = [];
  let members: string[] = [];
  const locked = new Set<string>();
  for (let round = 0; ; round++) {
    if (round > 16) throw new Error('erasure: the profile keeps changing under its locks');
    ({ members, signals } = await clusterOf(trx, orgId, survivor));
    const keys = signals.map((s) => signalLockKey(orgId, s.signal_type, s.signal_value)).filter((k) => !locked.has(String(k)));
    if (keys.length > 0) {
      keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      await trx.raw('select count(pg_advisory_xact_lock(k)) from unnest(?::bigint[]) as k', [keys.map(String)]);
      for (const k of keys) locked.add(String(k));
    }
    const rows = (await trx.raw('select id, merged_into from identity.profiles where org_id = ? and id = any(?::uuid[]) order by id for update', [orgId, members])) as {
      rows: Array<{ id: string; merged_into: string | null }>;
    };
    const live = rows.rows.find((r) => r.id === survivor);
    if (live?.merged_into) {
      // Merged into another profile meanwhile: that one is the person now.
      survivor = live.merged_into;
      continue;
    }
    const again = await clusterOf(trx, orgId, survivor);
    if (again.members.length === members.length && again.signals.length === signals.length) break;
  }

  const { hashes } = input;
  const identifiers = signals.map((s) => ({ type: s.signal_type, hash: hashes.of(orgId, s.signal_type, s.signal_value) }));
  const clicks = (await trx('identity.click_ids').where({ org_id: orgId }).whereIn('profile_id', members).select('click_type', 'click_id')) as Array<{ click_type: string; click_id: string }>;
  const counts = await eraseFromSchema(trx, 'identity', orgId, members, signals);
  // A replay keeps the tables it replaced: the person is erased from those too.
  const { rows: kept } = (await trx.raw(`select nspname from pg_namespace where nspname like 'identity\\_before\\_replay\\_%' order by nspname`)) as { rows: Array<{ nspname: string }> };
  for (const { nspname } of kept) {
    const removed = await eraseFromSchema(trx, nspname, orgId, members, signals);
    counts.replay_backups = (counts.replay_backups ?? 0) + Object.values(removed).reduce((n, c) => n + c, 0);
  }

  // Crypto-shredding: the keys of the person's anonymous ids go, and every copy of their events in the raw log stops opening.
  counts.raw_log_keys = await deleteSubjectKeys(
    trx,
    orgId,
    signals.filter((s) => s.signal_type === 'anonymous_id').flatMap((s) => hashes.lookups(orgId, 'anonymous_id', s.signal_value)),
  );
  if (identifiers.length > 0) {
    await trx.raw(
      `insert into privacy.suppressions (org_id, identifier_type, identifier_hash, erasure_id)
       select ?, t, h, ? from unnest(?::text[], ?::text[]) as x (t, h)
       on conflict (org_id, identifier_type, identifier_hash) do update
         set erasure_id = excluded.erasure_id, suppressed_at = clock_timestamp(), lifted_at = null
         where privacy.suppressions.lifted_at is not null`,
      [orgId, erasureId, identifiers.map((i) => i.type), identifiers.map((i) => i.hash)],
    );
  }
  const tombstone: ProfileErased = {
    v: 1,
    orgId,
    erasureId,
    profileId: survivor,
    profileIds: members,
    identifiers: signals.map((s) => ({ type: s.signal_type, hash: hashes.published(orgId, s.signal_type, s.signal_value) })),
    clickIds: clicks.map((c) => ({ type: c.click_type, hash: hashes.published(orgId, c.click_type, c.click_id) })),
    erasedAt: new Date().toISOString(),
  };
  const message: OutboxMessage = { topic: 'profilesErased', key: survivor, payload: tombstone, eventIds: null };
  await trx.raw(OUTBOX_INSERT, [outboxRecords([message])]);
  await trx('privacy.erasure_outcomes').insert({ erasure_id: erasureId, org_id: orgId, status: 'done', profile_ids: members, counts: JSON.stringify(counts) });
  await appendAudit(trx, { orgId, actor, action: 'erasure_done', erasureId, details: { profile_ids: members, counts } });
  await appendAudit(trx, {
    orgId,
    actor,
    action: 'suppressed',
    erasureId,
    details: { identifiers: identifiers.map((i) => ({ identifier_type: i.type, identifier_hash: i.hash })) },
  });
  return { status: 'done', profileIds: members, counts, tombstone };
}

/** The survivor and every profile merged into it (merges re-point, so one hop), and their signals. */
async function clusterOf(trx: Db, orgId: string, survivor: string): Promise<{ members: string[]; signals: Array<{ signal_type: SignalType; signal_value: string }> }> {
  const { rows } = (await trx.raw(
    `with members as (
       select id from identity.profiles where org_id = :org and (id = :id or merged_into = :id)
     )
     select (select coalesce(json_agg(id order by id), '[]') from members) as members,
            (select coalesce(json_agg(json_build_object('signal_type', s.signal_type, 'signal_value', s.signal_value) order by s.signal_type, s.signal_value), '[]')
             from identity.identity_signals s where s.org_id = :org and s.profile_id in (select id from members)) as signals`,
    { org: orgId, id: survivor },
  )) as { rows: Array<{ members: string[]; signals: Array<{ signal_type: SignalType; signal_value: string }> }> };
  return rows[0]!;
}

/**
 * Deletes the person from one schema of the identity tables: the profiles
 * given, plus (in a replay's kept schema, where ids may differ) every
 * profile owning one of their signals and the profiles merged into or
 * surviving those. Returns the rows removed per table.
 */
async function eraseFromSchema(
  trx: Db,
  schema: string,
  orgId: string,
  profileIds: readonly string[],
  signals: ReadonlyArray<{ signal_type: string; signal_value: string }>,
): Promise<Record<string, number>> {
  const s = (table: string) => trx.raw('??.??', [schema, table]).toQuery();
  const { rows } = (await trx.raw(
    `with named as (
       select id from ${s('profiles')} where org_id = :org and id = any(:ids::uuid[])
       union
       select profile_id from ${s('identity_signals')}
       where org_id = :org and (signal_type, signal_value) in (select * from unnest(:types::text[], :values::text[]))
     ), survivors as (
       select merged_into as id from ${s('profiles')} where id in (select id from named) and merged_into is not null
     ), everyone as (
       select id from named union select id from survivors
       union select id from ${s('profiles')} where org_id = :org and merged_into in (select id from named union select id from survivors)
     )
     select coalesce(array_agg(id), '{}') as ids from everyone`,
    { org: orgId, ids: [...profileIds], types: signals.map((x) => x.signal_type), values: signals.map((x) => x.signal_value) },
  )) as { rows: Array<{ ids: string[] }> };
  const ids = rows[0]?.ids ?? [];
  if (ids.length === 0) return {};
  // A replay's kept schema may predate a table (canonical_ids came in 0003): only the tables it has.
  const { rows: present } = (await trx.raw('select table_name from information_schema.tables where table_schema = ?', [schema])) as { rows: Array<{ table_name: string }> };
  const has = new Set(present.map((r) => r.table_name));
  const byProfile = (table: string, name: string) => `${name} as (delete from ${s(table)} where org_id = :org and profile_id = any(:ids::uuid[]) returning 1)`;
  const parts: Array<[name: string, table: string, cte: string]> = [
    ['events', 'events', `events as (delete from ${s('events')} where org_id = :org and profile_id = any(:ids::uuid[]) returning id)`],
    [
      'outbox',
      'outbox',
      `outbox as (delete from ${s('outbox')}
        where ${has.has('events') ? 'event_id in (select id from events) or ' : ''}message_key = any(:keys::text[]) or payload ->> 'profileId' = any(:keys::text[])
        returning 1)`,
    ],
    ['identity_signals', 'identity_signals', byProfile('identity_signals', 'identity_signals')],
    ['sessions', 'profile_sessions', byProfile('profile_sessions', 'sessions')],
    ['click_ids', 'click_ids', byProfile('click_ids', 'click_ids')],
    ['fingerprints', 'fingerprints', byProfile('fingerprints', 'fingerprints')],
    ['merges', 'merges', `merges as (delete from ${s('merges')} where org_id = :org and (source_profile_id = any(:ids::uuid[]) or target_profile_id = any(:ids::uuid[])) returning 1)`],
    ['canonical_ids', 'canonical_ids', byProfile('canonical_ids', 'canonical_ids')],
    [
      'kept_apart',
      'kept_apart',
      `kept_apart as (delete from ${s('kept_apart')} k where k.org_id = :org
        and ((k.a_type, k.a_value) in (select * from unnest(:types::text[], :values::text[])) or (k.b_type, k.b_value) in (select * from unnest(:types::text[], :values::text[])))
        returning 1)`,
    ],
  ];
  const used = parts.filter(([, table]) => has.has(table));
  // An events.resolved row names a transaction's events, maybe also others': it keeps those.
  const namedEvents =
    has.has('events') && has.has('outbox')
      ? `, outbox_event_ids as (update ${s('outbox')} o
           set event_ids = array(select x from unnest(o.event_ids) with ordinality as u (x, n) where x <> all (select id from events) order by n)
           where o.event_ids && array(select id from events))`
      : '';
  const { rows: deleted } = (await trx.raw(
    `with ${used.map(([, , cte]) => cte).join(', ')}${namedEvents}
     select ${used.map(([name]) => `(select count(*) from ${name})::int as ${name}`).join(', ')}`,
    { org: orgId, ids, keys: ids, types: signals.map((x) => x.signal_type), values: signals.map((x) => x.signal_value) },
  )) as { rows: Array<Record<string, number>> };
  // Merged-away rows point at their survivor: they go first.
  const removed = await trx.raw(`delete from ${s('profiles')} where org_id = ? and id = any(?::uuid[]) and merged_into is not null`, [orgId, ids]);
  const removedLive = await trx.raw(`delete from ${s('profiles')} where org_id = ? and id = any(?::uuid[])`, [orgId, ids]);
  return { ...deleted[0], profiles: (removed as { rowCount: number }).rowCount + (removedLive as { rowCount: number }).rowCount };
}

/** Records an erasure's `failed` outcome (unless it has one) and its audit row. */
export async function recordErasureFailure(trx: Db, input: Pick<EraseInput, 'orgId' | 'erasureId'>, reason: string, actor = ACTOR): Promise<EraseResult> {
  if (await trx('privacy.erasure_outcomes').where({ erasure_id: input.erasureId }).first('erasure_id')) return { status: 'already' };
  if (!(await trx('privacy.erasure_requests').where({ id: input.erasureId, org_id: input.orgId }).first('id'))) return { status: 'failed', reason };
  return fail(trx, input, actor, reason);
}

async function fail(trx: Db, input: Pick<EraseInput, 'orgId' | 'erasureId'>, actor: string, reason: string, record = true): Promise<EraseResult> {
  if (record) {
    await trx('privacy.erasure_outcomes').insert({ erasure_id: input.erasureId, org_id: input.orgId, status: 'failed', failure_reason: reason });
    await appendAudit(trx, { orgId: input.orgId, actor, action: 'erasure_failed', erasureId: input.erasureId, details: { reason } });
  }
  return { status: 'failed', reason };
}
