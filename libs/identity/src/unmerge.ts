import { randomUUID } from 'node:crypto';
import { Limits, type UnmergeView } from '@svc/contracts';
import { isoTimestampSql, type Db } from '@svc/runtime';
import { UUID_PATTERN } from './ids';
import { profileChange, writeOutbox, type OutboxMessage } from './outbox-records';
import { resolveProfileId } from './profiles';
import type { Signal, SignalType } from './signals';

/**
 * Undoing a merge of the journal (POST /v1-profiles/:id/unmerge): the
 * request is recorded here (the Profiles API, one per journal entry) and
 * carried out by the identity resolver (its unmerge.ts), which resolves the
 * merged profile's stored events again, as one batch, with a rule that keeps
 * the merge's two sides apart. This module holds every statement of both
 * halves; the resolver's planning decides what they write.
 */

export type UnmergeRequestResult =
  /** Recorded now, or asked for before (pending, done or failed): the same request either way. */
  | { outcome: 'recorded' | 'exists'; unmerge: UnmergeView }
  | { outcome: 'profile_not_found' }
  /** No such entry in the profile's journal. */
  | { outcome: 'merge_not_found' }
  /** Another unmerge undid the entry already. */
  | { outcome: 'undone'; undoneBy: string }
  | { outcome: 'too_large' }
  /** The profile has alias events stored before events kept their previousId. */
  | { outcome: 'needs_replay' };

/** A merge journal entry as the unmerge reads it. */
export interface MergeJournalRow {
  id: string;
  org_id: string;
  source_profile_id: string;
  target_profile_id: string;
  reason: 'identify' | 'trait' | 'alias' | 'admin';
  signal_type: SignalType | null;
  actor: string;
  message_id: string | null;
  note: string | null;
  undone_by: string | null;
}

const JOURNAL_COLUMNS = 'id::text as id, org_id, source_profile_id, target_profile_id, reason, signal_type, actor, message_id, note, undone_by';
const UNMERGE_VIEW = `id, merge_id::text as merge_id, status, reason as failure_reason, actor,
  ${isoTimestampSql('requested_at')} as requested_at,
  ${isoTimestampSql('finished_at')} as completed_at,
  profile_ids`;
const MERGE_ID = /^[0-9]{1,18}$/;

/** The live profile a profile id stands for now: itself, or the survivor it was merged into. */
const SURVIVOR_OF = (column: string) => `(select coalesce(p.merged_into, p.id) from identity.profiles p where p.id = ${column})`;

/**
 * Records the undoing of journal entry `mergeId` of the profile `profileRef`
 * (its id or canonical_id; a merged-away one stands for its survivor) names.
 * The entry must be one the profile's journal lists: a merge into it, or into
 * a profile merged into it.
 */
export async function requestUnmerge(db: Db, input: { orgId: string; profileRef: string; mergeId: string; actor: string }): Promise<UnmergeRequestResult> {
  const { orgId } = input;
  if (!UUID_PATTERN.test(orgId)) return { outcome: 'profile_not_found' };
  return db.transaction(async (trx) => {
    const survivor = await resolveProfileId(trx, orgId, input.profileRef);
    if (survivor === undefined) return { outcome: 'profile_not_found' } as const;
    if (!MERGE_ID.test(input.mergeId)) return { outcome: 'merge_not_found' } as const;
    const { rows } = (await trx.raw(
      `select m.undone_by, ${SURVIVOR_OF('m.target_profile_id')} as target_survivor, ${SURVIVOR_OF('m.source_profile_id')} as source_survivor
       from identity.merges m where m.org_id = ? and m.id = ?::bigint`,
      [orgId, input.mergeId],
    )) as { rows: Array<{ undone_by: string | null; target_survivor: string; source_survivor: string }> };
    const entry = rows[0];
    // In the profile's journal: merged into it (both sides in it), or once undone, split from it.
    if (!entry || (entry.target_survivor !== survivor && entry.source_survivor !== survivor)) return { outcome: 'merge_not_found' } as const;
    const existing = await findUnmerge(trx, orgId, { mergeId: input.mergeId });
    if (existing) return { outcome: 'exists', unmerge: existing } as const;
    if (entry.undone_by !== null) return { outcome: 'undone', undoneBy: entry.undone_by } as const;
    const check = await clusterCheck(trx, orgId, survivor);
    if (check !== 'ok') return { outcome: check } as const;
    // Two requests at once: the unique (org, merge) key keeps one; the other reads it.
    await trx.raw(
      `insert into identity.unmerges (id, org_id, merge_id, actor) values (?, ?, ?::bigint, ?) on conflict (org_id, merge_id) do nothing`,
      [randomUUID(), orgId, input.mergeId, input.actor],
    );
    return { outcome: 'recorded', unmerge: (await findUnmerge(trx, orgId, { mergeId: input.mergeId }))! } as const;
  });
}

/** Whether the live profile's events can be resolved again: few enough, and every alias's previousId kept. */
async function clusterCheck(trx: Db, orgId: string, survivor: string): Promise<'ok' | 'too_large' | 'needs_replay'> {
  const { rows } = (await trx.raw(
    `select (select count(*) from (select 1 from identity.events where org_id = ? and profile_id = ? limit ?) e)::int as events,
            exists (select 1 from identity.events where org_id = ? and profile_id = ? and event_name = '$alias' and previous_id is null) as legacy_alias`,
    [orgId, survivor, Limits.unmergeMaxEvents + 1, orgId, survivor],
  )) as { rows: Array<{ events: number; legacy_alias: boolean }> };
  const r = rows[0]!;
  if (r.events > Limits.unmergeMaxEvents) return 'too_large';
  return r.legacy_alias ? 'needs_replay' : 'ok';
}

/** The unmerge request `id` names (its id), or the one of a journal entry. */
export async function findUnmerge(db: Db, orgId: string, by: { id: string } | { mergeId: string }): Promise<UnmergeView | undefined> {
  if (!UUID_PATTERN.test(orgId)) return undefined;
  if ('id' in by && !UUID_PATTERN.test(by.id)) return undefined;
  if ('mergeId' in by && !MERGE_ID.test(by.mergeId)) return undefined;
  const [column, value] = 'id' in by ? ['id', by.id] : ['merge_id', by.mergeId];
  const { rows } = (await db.raw(`select ${UNMERGE_VIEW} from identity.unmerges where org_id = ? and ${column} = ?`, [orgId, value])) as { rows: UnmergeView[] };
  return rows[0];
}

// ---------------------------------------------------------------- carrying it out (the resolver)

export interface PendingUnmerge {
  id: string;
  orgId: string;
  mergeId: string;
}

/** The oldest pending request, row-locked for the caller's transaction (others skip it); undefined when none waits. */
export async function claimPendingUnmerge(trx: Db): Promise<PendingUnmerge | undefined> {
  const { rows } = (await trx.raw(
    `select id, org_id, merge_id::text as merge_id from identity.unmerges where status = 'pending' order by requested_at limit 1 for update skip locked`,
  )) as { rows: Array<{ id: string; org_id: string; merge_id: string }> };
  const r = rows[0];
  return r && { id: r.id, orgId: r.org_id, mergeId: r.merge_id };
}

/** Marks the request done (with the two sides' live profiles) or failed (with why). */
export async function finishUnmerge(trx: Db, id: string, outcome: { profileIds: [string, string] } | { failure: string }): Promise<void> {
  await trx.raw(`update identity.unmerges set status = ?, finished_at = now(), profile_ids = ?::uuid[], reason = ? where id = ?`, [
    'failure' in outcome ? 'failed' : 'done',
    'failure' in outcome ? null : outcome.profileIds,
    'failure' in outcome ? outcome.failure.slice(0, 500) : null,
    id,
  ]);
}

export interface MergedCluster {
  entry: MergeJournalRow;
  /** The live profile both sides are in. */
  survivor: string;
  /** Every profile row of it: the survivor and those merged into it. */
  members: string[];
}

/**
 * The journal entry and the live profile it made, its profile rows locked;
 * a failure to record when the entry is no longer in effect.
 */
export async function lockMergedCluster(trx: Db, orgId: string, mergeId: string): Promise<MergedCluster | { failure: string }> {
  const { rows } = (await trx.raw(
    `select ${JOURNAL_COLUMNS}, ${SURVIVOR_OF('target_profile_id')} as target_survivor, ${SURVIVOR_OF('source_profile_id')} as source_survivor
     from identity.merges where org_id = ? and id = ?::bigint`,
    [orgId, mergeId],
  )) as { rows: Array<MergeJournalRow & { target_survivor: string; source_survivor: string }> };
  const entry = rows[0];
  if (!entry) return { failure: 'the merge is no longer in the journal' };
  if (entry.undone_by !== null || entry.source_survivor !== entry.target_survivor) return { failure: 'the merge was undone already' };
  const survivor = entry.target_survivor;
  const members = (await trx.raw(`select id from identity.profiles where org_id = ? and (id = ? or merged_into = ?) order by id for update`, [orgId, survivor, survivor])) as {
    rows: Array<{ id: string }>;
  };
  const check = await clusterCheck(trx, orgId, survivor);
  if (check !== 'ok') return { failure: check === 'too_large' ? `more than ${Limits.unmergeMaxEvents} events` : 'alias events stored without their previousId: replay first' };
  return { entry, survivor, members: members.rows.map((r) => r.id) };
}

/** One stored event of a profile (identity.events), as the resolver writes it and needs it to resolve the event again. */
export interface StoredEventRow {
  message_id: string;
  event_name: string;
  event_timestamp: string;
  received_at: string;
  properties: Record<string, unknown>;
  context: Record<string, unknown>;
  traits: Record<string, unknown> | null;
  anonymous_id: string;
  user_id: string | null;
  previous_id: string | null;
}

/**
 * Takes the live profile apart to be resolved again: reads its events (in
 * the order they arrived: received_at, then event time) and deletes them
 * with every row derived from them (signals, sessions, click IDs,
 * fingerprints), and empties its profile rows, which stay (their ids, canonical
 * ids and journal entries stay valid) until the resolution fills them again.
 * Returns the events and the identifiers it held.
 */
export async function takeApart(trx: Db, orgId: string, cluster: Pick<MergedCluster, 'survivor' | 'members'>): Promise<{ events: StoredEventRow[]; signals: Signal[] }> {
  const { rows } = (await trx.raw(
    `with events as (
       delete from identity.events where org_id = :org and profile_id = :p
       returning message_id, event_name, event_timestamp, received_at, properties, context, traits, anonymous_id, user_id, previous_id, id
     ), signals as (
       delete from identity.identity_signals where org_id = :org and profile_id = :p returning signal_type, signal_value
     ), sessions as (
       delete from identity.profile_sessions where org_id = :org and profile_id = :p
     ), clicks as (
       delete from identity.click_ids where org_id = :org and profile_id = :p
     ), fingerprints as (
       delete from identity.fingerprints where org_id = :org and profile_id = :p
     ), emptied as (
       update identity.profiles set merged_into = null, user_id = null, traits = '{}', event_count = 0, session_count = 0,
         engagement_score = 0, engagement_updated_at = null, first_touch = null, last_touch = null, updated_at = now()
       where org_id = :org and id = any(:members::uuid[])
     )
     select (select coalesce(json_agg(json_build_object('type', signal_type, 'value', signal_value)), '[]') from signals) as signals,
            (select coalesce(json_agg(e order by e.received_at, e.event_timestamp, e.id), '[]') from (
               select message_id, event_name, event_timestamp, received_at, properties, context, traits, anonymous_id, user_id, previous_id, id from events) e) as events`,
    { org: orgId, p: cluster.survivor, members: cluster.members },
  )) as { rows: Array<{ signals: Signal[]; events: StoredEventRow[] }> };
  return rows[0]!;
}

/** One side of a kept-apart pair: an identifier, and the live profile holding it now (null: nobody). */
export interface KeptApartSide {
  type: SignalType;
  value: string;
  owner: string | null;
}

/** Two identifiers no profile may hold together (an unmerge split the profiles they made). */
export interface KeptApartPair {
  orgId: string;
  a: KeptApartSide;
  b: KeptApartSide;
}

/** Records that no profile may hold both identifiers (from now on, and in every replay). */
export async function keepApart(trx: Db, orgId: string, a: Signal, b: Signal, unmergeId: string): Promise<void> {
  await trx.raw(`insert into identity.kept_apart (org_id, a_type, a_value, b_type, b_value, unmerge_id) values (?, ?, ?, ?, ?, ?) on conflict do nothing`, [
    orgId,
    a.type,
    a.value,
    b.type,
    b.value,
    unmergeId,
  ]);
}

/**
 * SQL for the kept-apart pairs of the organisations `orgsSql` names, as
 * KeptApartPair rows (json), each side's owner the live profile holding the
 * identifier now: the batch reads it in its one state statement.
 */
export const KEPT_APART_SQL = (orgsSql: string) => {
  const owner = (side: 'a' | 'b') => `(select coalesce(p.merged_into, p.id) from identity.identity_signals s join identity.profiles p on p.id = s.profile_id
       where s.org_id = k.org_id and s.signal_type = k.${side}_type and s.signal_value = k.${side}_value)`;
  return `select coalesce(json_agg(json_build_object('orgId', k.org_id,
         'a', json_build_object('type', k.a_type, 'value', k.a_value, 'owner', ${owner('a')}),
         'b', json_build_object('type', k.b_type, 'value', k.b_value, 'owner', ${owner('b')}))), '[]')
     from identity.kept_apart k where k.org_id = any(${orgsSql})`;
};

/** The organisation's kept-apart pairs, each side with its holder now. */
export async function readKeptApart(trx: Db, orgId: string): Promise<KeptApartPair[]> {
  const { rows } = (await trx.raw(`select (${KEPT_APART_SQL('?::uuid[]')}) as pairs`, [[orgId]])) as { rows: Array<{ pairs: KeptApartPair[] }> };
  return rows[0]!.pairs;
}

/** The journal entries in effect of the profile rows (as source or target), oldest first. */
export async function journalOf(trx: Db, orgId: string, members: readonly string[]): Promise<MergeJournalRow[]> {
  const { rows } = (await trx.raw(
    `select ${JOURNAL_COLUMNS} from identity.merges
     where org_id = ? and undone_by is null and (source_profile_id = any(?::uuid[]) or target_profile_id = any(?::uuid[]))
     order by id`,
    [orgId, [...members], [...members]],
  )) as { rows: MergeJournalRow[] };
  return rows;
}

/** Points each emptied profile row the resolution did not make live again at the live profile its identity went to. */
export async function redirect(trx: Db, orgId: string, to: ReadonlyArray<{ id: string; survivor: string }>): Promise<void> {
  if (to.length === 0) return;
  await trx.raw(
    `update identity.profiles p set merged_into = r.survivor, updated_at = now()
     from unnest(?::uuid[], ?::uuid[]) as r (id, survivor) where p.org_id = ? and p.id = r.id`,
    [to.map((r) => r.id), to.map((r) => r.survivor), orgId],
  );
}

/** The live profile each of the profile rows stands for now. */
export async function survivorsOf(trx: Db, orgId: string, ids: readonly string[]): Promise<Map<string, string>> {
  const { rows } = (await trx.raw(`select id, coalesce(merged_into, id) as survivor from identity.profiles where org_id = ? and id = any(?::uuid[])`, [orgId, [...ids]])) as {
    rows: Array<{ id: string; survivor: string }>;
  };
  return new Map(rows.map((r) => [r.id, r.survivor]));
}

/**
 * The journal after the resolution: the entries it did not make again are
 * undone (by this unmerge), the merges it made that the journal lacked are
 * recorded, and each profile row's change goes on profiles.changes
 * (`unmerged` for a row live again, naming the profile it had been merged
 * into; `created` for a profile the resolution made that had no row;
 * `merged` for one merged away now; `updated` for one live before and
 * after).
 */
export async function settleJournal(
  trx: Db,
  input: {
    orgId: string;
    unmergeId: string;
    before: MergedCluster;
    undone: readonly string[];
    made: ReadonlyArray<{ sourceId: string; targetId: string; reason: MergeJournalRow['reason']; signalType: SignalType | null; messageId: string | null }>;
    /** Every profile row concerned and the live profile it is now. */
    after: ReadonlyMap<string, string>;
  },
): Promise<void> {
  const { orgId, unmergeId } = input;
  if (input.undone.length > 0) {
    await trx.raw(`update identity.merges set undone_at = now(), undone_by = ? where org_id = ? and id = any(?::bigint[])`, [unmergeId, orgId, [...input.undone]]);
  }
  for (const m of input.made) {
    await trx.raw(
      `insert into identity.merges (org_id, source_profile_id, target_profile_id, reason, signal_type, actor, message_id, note)
       values (?, ?, ?, ?, ?, 'identity-resolver', ?, ?)`,
      [orgId, m.sourceId, m.targetId, m.reason, m.signalType, m.messageId, `resolved again by unmerge ${unmergeId}`],
    );
  }
  const changes: OutboxMessage[] = [];
  const existed = new Set(input.before.members);
  for (const [id, now] of input.after) {
    const liveBefore = id === input.before.survivor;
    const liveNow = now === id;
    if (liveBefore && liveNow) changes.push(profileChange(orgId, id, 'updated'));
    else if (liveNow) changes.push(existed.has(id) ? profileChange(orgId, id, 'unmerged', input.before.survivor) : profileChange(orgId, id, 'created'));
    else if (liveBefore) changes.push(profileChange(orgId, id, 'merged', now));
  }
  await writeOutbox(trx, changes);
}
