import { NotFoundError, ValidationError, preparedRaw, type Db } from '@svc/runtime';
import type { SignalType } from './signals';
import { OUTBOX_INSERT, outboxRecords, profileChange, writeOutbox } from './outbox-records';
import { resolveProfileId } from './profiles';
import { holdOffReplay } from './replay-lock';
import { ConcurrentWriteError, inTransactionWithRetry } from './retry';

/**
 * The one merge routine, used by the resolver (identify, trait and alias
 * merges) and by the Profiles API's admin merge.
 */

/** Why a merge happened: merges.reason. */
export type MergeReason = 'identify' | 'trait' | 'alias' | 'admin';

export interface MergeInput {
  orgId: string;
  sourceId: string;
  targetId: string;
  reason: MergeReason;
  /** The identifier that linked the two (identify, trait: the signal shared; alias: the previousId's kind); none for admin. */
  signalType?: SignalType | null;
  /** Who merged: `identity-resolver`, or the admin key / operator. */
  actor: string;
  /** The event that caused it, for resolver merges. */
  messageId?: string | null;
  /** Free text an admin gave. */
  note?: string | null;
  /** Queue the `merged` change (default true); a replay restating a merge the live path published passes false. */
  publish?: boolean;
  /** Write the journal entry (default true); an unmerge re-applying an admin merge its journal holds passes false. */
  journal?: boolean;
}

interface LockedProfile {
  id: string;
  merged_into: string | null;
}

/** Row-locks live profiles of an organisation in id order; returns what it found. */
async function lockProfiles(trx: Db, orgId: string, ids: readonly string[]): Promise<LockedProfile[]> {
  const { rows } = (await preparedRaw(trx, 
    'select id, merged_into from identity.profiles where org_id = ? and id = any(?::uuid[]) order by id for update',
    [orgId, [...new Set(ids)]],
  )) as { rows: LockedProfile[] };
  return rows;
}

const earlier = (a: string, b: string) =>
  `case when ${b} is null then ${a} when ${a} is null then ${b}
        when (${b} ->> 'at')::timestamptz < (${a} ->> 'at')::timestamptz then ${b} else ${a} end`;
const later = (a: string, b: string) =>
  `case when ${b} is null then ${a} when ${a} is null then ${b}
        when (${b} ->> 'at')::timestamptz > (${a} ->> 'at')::timestamptz then ${b} else ${a} end`;

/**
 * Merges `sourceId` into `targetId`, inside the caller's transaction. Locks
 * both profile rows (in id order); moves identity signals, events, click IDs,
 * fingerprints and sessions to the target; keeps the earlier first touch and
 * first_seen_at and the later last touch and last_seen_at; adds the counters
 * (the engagement scores decayed to the same instant first);
 * the target keeps its traits and userId (the source's fill gaps). The source
 * keeps its row, marked merged_into the target (and so does every profile
 * that had been merged into the source), so its id and canonical_id keep
 * resolving to the survivor. Records the merge and queues `merged` on
 * profiles.changes for the source; the caller reports the target's change.
 *
 * Both must be live profiles of the organisation: NotFoundError otherwise,
 * and ConcurrentWriteError (retry the transaction) when one has been merged
 * away meanwhile.
 */
export async function mergeProfiles(trx: Db, input: MergeInput): Promise<void> {
  const { orgId, sourceId: s, targetId: t } = input;
  if (s === t) throw new ValidationError('cannot merge a profile into itself');
  const locked = await lockProfiles(trx, orgId, [s, t]);
  if (locked.length !== 2) throw new NotFoundError('One or both profiles not found');
  if (locked.some((p) => p.merged_into !== null)) throw new ConcurrentWriteError('a profile to merge was merged away meanwhile');
  await mergeLockedProfiles(trx, input);
}

/**
 * mergeProfiles for a caller whose transaction already holds both profile
 * rows locked and knows both are live profiles of the organisation (the
 * resolver, which locked its batch's profiles when it read them): the same
 * merge, without locking and checking again.
 */
export async function mergeLockedProfiles(trx: Db, input: MergeInput): Promise<void> {
  const { orgId, sourceId: s, targetId: t } = input;
  if (s === t) throw new ValidationError('cannot merge a profile into itself');
  // Everything in one statement (one round trip): the moves, the counters, the marks, the audit row
  // and the outbox row. The parts touch different rows, so they cannot see or undo each other; the
  // target's session count adds the sessions the move actually inserted.
  const { rows } = (await preparedRaw(trx, 
    `with signals as (
       update identity.identity_signals set profile_id = :t where org_id = :org and profile_id = :s
     ), events as (
       update identity.events set profile_id = :t where org_id = :org and profile_id = :s
     ), clicks as (
       update identity.click_ids set profile_id = :t where org_id = :org and profile_id = :s
     ), moved_sessions as (
       delete from identity.profile_sessions where org_id = :org and profile_id = :s returning session_id
     ), sessions as (
       insert into identity.profile_sessions (org_id, profile_id, session_id)
       select :org, :t, session_id from moved_sessions on conflict do nothing returning 1
     ), moved_fingerprints as (
       delete from identity.fingerprints where org_id = :org and profile_id = :s returning *
     ), fingerprints as (
       insert into identity.fingerprints as f (org_id, profile_id, fingerprint_hash, first_seen_at, last_seen_at, occurrence_count)
       select org_id, :t, fingerprint_hash, first_seen_at, last_seen_at, occurrence_count from moved_fingerprints
       on conflict (org_id, profile_id, fingerprint_hash) do update set
         first_seen_at = least(f.first_seen_at, excluded.first_seen_at),
         last_seen_at = greatest(f.last_seen_at, excluded.last_seen_at),
         occurrence_count = f.occurrence_count + excluded.occurrence_count
       returning 1
     ), target_profile as (
       update identity.profiles t set
         event_count = t.event_count + s.event_count,
         session_count = t.session_count + (select count(*) from sessions),
         first_seen_at = least(t.first_seen_at, s.first_seen_at),
         last_seen_at = greatest(t.last_seen_at, s.last_seen_at),
         first_touch = ${earlier('t.first_touch', 's.first_touch')},
         last_touch = ${later('t.last_touch', 's.last_touch')},
         traits = s.traits || t.traits,
         user_id = coalesce(t.user_id, s.user_id),
         -- Both scores decayed to the later of their instants, then added (engagement.ts).
         engagement_score = identity.engagement_decay(t.engagement_score, t.engagement_updated_at, greatest(t.engagement_updated_at, s.engagement_updated_at), r.half_life_days)
           + identity.engagement_decay(s.engagement_score, s.engagement_updated_at, greatest(t.engagement_updated_at, s.engagement_updated_at), r.half_life_days),
         engagement_updated_at = greatest(t.engagement_updated_at, s.engagement_updated_at),
         created_at = least(t.created_at, s.created_at),
         updated_at = now()
       from identity.profiles s
       left join identity.engagement_rules r on r.org_id = s.org_id
       where t.id = :t and s.id = :s
     ), source_profiles as (
       update identity.profiles set merged_into = :t, updated_at = now() where org_id = :org and (id = :s or merged_into = :s)
     ), audit as (
       insert into identity.merges (org_id, source_profile_id, target_profile_id, reason, signal_type, actor, message_id, note)
       select :org, :s, :t, :reason, :signalType, :actor, :messageId, :note where :journal
     ), outbox as (
       ${OUTBOX_INSERT.replace('?', ':outbox')}
     )
     select (select count(*) from fingerprints)::int as fingerprints`,
    {
      org: orgId,
      s,
      t,
      reason: input.reason,
      signalType: input.signalType ?? null,
      actor: input.actor,
      messageId: input.messageId ?? null,
      note: input.note ?? null,
      journal: input.journal !== false,
      outbox: outboxRecords(input.publish === false ? [] : [profileChange(orgId, s, 'merged', t)]),
    },
  )) as { rows: Array<{ fingerprints: number }> };
  if ((rows[0]?.fingerprints ?? 0) > 0) await updateStability(trx, orgId, [t]);
}

/** Drops the kept-apart pairs whose two identifiers the live profile `survivorId` now holds both of (an admin joined them). */
async function liftKeptApart(trx: Db, orgId: string, survivorId: string): Promise<void> {
  await trx.raw(
    `delete from identity.kept_apart k
     where k.org_id = :org
       and exists (select 1 from identity.identity_signals s where s.org_id = k.org_id and s.profile_id = :p and s.signal_type = k.a_type and s.signal_value = k.a_value)
       and exists (select 1 from identity.identity_signals s where s.org_id = k.org_id and s.profile_id = :p and s.signal_type = k.b_type and s.signal_value = k.b_value)`,
    { org: orgId, p: survivorId },
  );
}

/** stability_score = the share of the profile's fingerprinted events that carried the hash. */
async function updateStability(trx: Db, orgId: string, profileIds: readonly string[]): Promise<void> {
  await preparedRaw(trx, 
    `update identity.fingerprints f set stability_score = f.occurrence_count::real / t.total
     from (select profile_id, sum(occurrence_count) as total from identity.fingerprints
           where org_id = ? and profile_id = any(?::uuid[]) group by profile_id) t
     where f.org_id = ? and f.profile_id = t.profile_id`,
    [orgId, [...profileIds], orgId],
  );
}

export interface AdminMergeInput {
  orgId: string;
  /** Profile UUID or canonical_id. */
  source: string;
  target: string;
  actor: string;
  note?: string | null;
}

/**
 * The admin merge (POST /v1-profiles/merge): resolves both ids (a merged-away
 * id stands for its survivor), refuses a profile into itself
 * (ValidationError) and unknown or other-organisation ids (NotFoundError
 * `One or both profiles not found`), merges in its own transaction (retried
 * on conflicts) and queues `updated` for the target. The resolver's outbox
 * relay publishes the changes. An admin merging two profiles an unmerge
 * keeps apart has decided otherwise: the rule between them goes.
 */
export async function adminMergeProfiles(db: Db, input: AdminMergeInput): Promise<{ sourceId: string; targetId: string }> {
  if (input.source === input.target) throw new ValidationError('source and target are the same profile');
  return inTransactionWithRetry(db, async (trx) => {
    await holdOffReplay(trx);
    const sourceId = await resolveProfileId(trx, input.orgId, input.source);
    const targetId = await resolveProfileId(trx, input.orgId, input.target);
    if (!sourceId || !targetId) throw new NotFoundError('One or both profiles not found');
    if (sourceId === targetId) throw new ValidationError('source and target are the same profile');
    await mergeProfiles(trx, { orgId: input.orgId, sourceId, targetId, reason: 'admin', actor: input.actor, note: input.note ?? null });
    await liftKeptApart(trx, input.orgId, targetId);
    await writeOutbox(trx, [profileChange(input.orgId, targetId, 'updated')]);
    return { sourceId, targetId };
  });
}
