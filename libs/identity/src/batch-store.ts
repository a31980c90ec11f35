import { preparedRaw, type Db } from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
import { mergeLockedProfiles, type MergeReason } from './merge';
import { OUTBOX_INSERT, outboxRecords, type OutboxMessage } from './outbox-records';
import { HOLD_OFF_REPLAY } from './replay-lock';
import { ConcurrentWriteError } from './retry';
import { signalKey, type SignalType } from './signals';
import { KEPT_APART_SQL, type KeptApartPair, type StoredEventRow } from './unmerge';

/**
 * The identity projections' batch statements and the rows they take: what
 * the resolver's batch (and an unmerge or a phone restatement, which resolve
 * through the same planning) writes. The resolver decides what to write;
 * each statement here takes planned rows and returns plain rows, so a
 * change to an identity table is made in this library and nowhere else.
 */

/** Which signal found an event's profile, or that a new one was made (identity.events.resolution_method). */
export type ResolutionMethod = SignalType | 'new_profile';

/** A campaign touch as profiles store it (first_touch, last_touch): where a visit came from, and when (event time). */
export interface Touch {
  source: string | null;
  medium: string | null;
  campaign: string | null;
  /** ISO 8601 event time. */
  at: string;
}

export interface ProfileRow {
  id: string;
  org_id: string;
  canonical_id: string;
  user_id: string | null;
  merged_into: string | null;
}

export interface SignalRow {
  org_id: string;
  signal_type: SignalType;
  signal_value: string;
  profile_id: string;
}

/** What the batch's one read statement found, after its identity locks. */
export interface BatchState {
  /** The ids of the events already stored (an event's id is its organisation's messageId's: eventIdFor). */
  stored: Set<string>;
  signals: SignalRow[];
  /** The signals' profiles, row-locked. */
  profiles: ProfileRow[];
  rules: Array<{ org_id: string; rules: unknown }>;
  /** The batch's organisations' kept-apart identifiers (unmerges), with who holds them. */
  keptApart: KeptApartPair[];
}

/** What readBatchState looks up: the signals (each of an organisation), the events' ids, and the organisations. */
export interface BatchLookups {
  signals: ReadonlyArray<{ orgId: string; type: SignalType; value: string }>;
  eventIds: readonly string[];
  orgIds: readonly string[];
}

/** An identity.events row: what an unmerge reads back (StoredEventRow), and where it is. */
export interface EventRow extends StoredEventRow {
  id: string;
  org_id: string;
  profile_id: string;
  resolution_method: ResolutionMethod;
}

export interface SignalUpsert {
  org_id: string;
  signal_type: SignalType;
  signal_value: string;
  profile_id: string;
  confidence: number;
  first_seen_at: string;
  last_seen_at: string;
  occurrence_count: number;
}

export interface SessionRow {
  org_id: string;
  profile_id: string;
  session_id: string;
}

export interface ClickIdUpsert {
  org_id: string;
  click_type: string;
  click_id: string;
  profile_id: string;
  campaign_source: string | null;
  campaign_medium: string | null;
  first_seen_at: string;
  last_seen_at: string;
}

export interface FingerprintUpsert {
  org_id: string;
  profile_id: string;
  fingerprint_hash: string;
  first_seen_at: string;
  last_seen_at: string;
  occurrence_count: number;
}

export interface ProfileUpdate {
  id: string;
  events: number;
  first_seen_at: string;
  last_seen_at: string;
  first_touch: Touch | null;
  last_touch: Touch | null;
  traits: Record<string, unknown>;
  user_id: string | null;
  engagement_points: number;
  engagement_at: string | null;
  half_life_days: number | null;
}

export interface NewProfileRow {
  id: string;
  org_id: string;
  canonical_id: string;
  first_seen_at: string;
  last_seen_at: string;
}

/** Every row the fresh events write, each table's rows coalesced by key. */
export interface Effects {
  events: EventRow[];
  signals: SignalUpsert[];
  sessions: SessionRow[];
  clicks: ClickIdUpsert[];
  fingerprints: FingerprintUpsert[];
  profiles: ProfileUpdate[];
}

/** A merge the batch planned: both profiles are locked and live, the target its survivor. */
export interface PlannedMergeRow {
  orgId: string;
  sourceId: string;
  targetId: string;
  reason: MergeReason;
  signalType: SignalType | null;
  messageId: string | null;
}

/** The most recently seen email and phone of each profile asked for, by profile id. */
export type Contacts = Map<string, { email: string | null; phone: string | null }>;

/** How counts of each signal type per profile come back (for the identity rules' limits). */
export type SignalCounts = ReadonlyMap<string, Partial<Record<SignalType, number>>>;

/** The key of a signal of an organisation, as writeEffects' `madeSignals` names them. */
export const signalOfOrg = (orgId: string, type: SignalType, value: string): string => `${orgId}\u0000${signalKey(type, value)}`;

/** Profiles the loaded ones were merged into that are not loaded yet: to lock and load next. */
export function survivorsToLoad(profiles: ReadonlyMap<string, ProfileRow>, loaded: Iterable<ProfileRow>): string[] {
  const ids = new Set<string>();
  for (const p of loaded) if (p.merged_into && !profiles.has(p.merged_into)) ids.add(p.merged_into);
  return [...ids];
}

/**
 * Every statement of a batch's transaction, in the order process-batch.ts
 * runs them. Each takes planned values and returns plain rows; deciding what
 * to write is plan.ts's.
 */

/**
 * Serialises on every identity the batch touches (keys in one global order),
 * and waits while a replay rebuilds the projections. Its own statement: what
 * follows must read with a snapshot taken after the locks were granted.
 */
export async function lockIdentities(trx: Db, keys: readonly bigint[]): Promise<void> {
  await preparedRaw(trx, `select ${HOLD_OFF_REPLAY}, (select count(pg_advisory_xact_lock(k)) from unnest(?::bigint[]) as k)`, [keys.map(String)]);
}

/**
 * One round trip: which events are stored already, the known signals of
 * every event and their profiles (locked `for update` in id order), and the
 * organisations' engagement rules.
 */
export async function readBatchState(trx: Db, lookups: BatchLookups): Promise<BatchState> {
  const wanted = lookups.signals;
  const { rows } = (await preparedRaw(
    trx,
    `with signals as materialized (
       select s.org_id, s.signal_type, s.signal_value, s.profile_id
       from unnest(:sigOrgs::uuid[], :sigTypes::text[], :sigValues::text[]) as k (org_id, signal_type, signal_value)
       join identity.identity_signals s
         on s.org_id = k.org_id and s.signal_type = k.signal_type and s.signal_value = k.signal_value
     ), profiles as materialized (
       select id, org_id, canonical_id, user_id, merged_into from identity.profiles
       where id in (select profile_id from signals) order by id for update
     )
     select
       (select coalesce(json_agg(e.id), '[]') from identity.events e where e.id = any(:eventIds::uuid[])) as stored,
       (select coalesce(json_agg(signals), '[]') from signals) as signals,
       (select coalesce(json_agg(profiles), '[]') from profiles) as profiles,
       (select coalesce(json_agg(json_build_object('org_id', r.org_id, 'rules', r.rules)), '[]')
        from identity.engagement_rules r where r.org_id = any(:ruleOrgs::uuid[])) as rules,
       (${KEPT_APART_SQL(':ruleOrgs::uuid[]')}) as kept_apart`,
    {
      sigOrgs: wanted.map((w) => w.orgId),
      sigTypes: wanted.map((w) => w.type),
      sigValues: wanted.map((w) => w.value),
      eventIds: [...lookups.eventIds],
      ruleOrgs: [...lookups.orgIds],
    },
  )) as { rows: Array<{ stored: string[]; signals: BatchState['signals']; profiles: ProfileRow[]; rules: BatchState['rules']; kept_apart: BatchState['keptApart'] }> };
  const row = rows[0]!;
  return { stored: new Set(row.stored), signals: row.signals, profiles: row.profiles, rules: row.rules, keptApart: row.kept_apart };
}

/**
 * The state's profiles, and the survivors of those merged away by someone
 * else since their signals were read, locked next (a rare out-of-order lock;
 * a deadlock is retried), following each chain to its end.
 */
export async function loadSurvivors(trx: Db, read: readonly ProfileRow[]): Promise<Map<string, ProfileRow>> {
  const profiles = new Map(read.map((p) => [p.id, p]));
  let toLock = survivorsToLoad(profiles, read);
  for (let round = 0; toLock.length > 0; round++) {
    if (round > 16) throw new Error('merged_into chain does not end');
    const { rows } = (await preparedRaw(
    trx,
      `select id, org_id, canonical_id, user_id, merged_into from identity.profiles
       where id = any(?::uuid[]) order by id for update`,
      [toLock],
    )) as { rows: ProfileRow[] };
    for (const r of rows) profiles.set(r.id, r);
    toLock = survivorsToLoad(profiles, rows);
  }
  return profiles;
}

/** The organisations' stored engagement rules (the batch reads them within readBatchState). */
export async function readEngagementRules(trx: Db, orgIds: readonly string[]): Promise<BatchState['rules']> {
  const { rows } = (await preparedRaw(trx, 'select org_id, rules from identity.engagement_rules where org_id = any(?::uuid[])', [[...orgIds]])) as { rows: BatchState['rules'] };
  return rows;
}

/** How many signals of each type each of the profiles holds (for the identity rules' limits). */
export async function readSignalCounts(trx: Db, profileIds: readonly string[]): Promise<SignalCounts> {
  const counts = new Map<string, Partial<Record<SignalType, number>>>();
  if (profileIds.length === 0) return counts;
  const { rows } = (await preparedRaw(
    trx,
    `select s.profile_id, s.signal_type, count(*)::int as n from identity.identity_signals s
     join identity.profiles p on p.id = s.profile_id and p.org_id = s.org_id
     where p.id = any(?::uuid[]) group by s.profile_id, s.signal_type`,
    [[...profileIds]],
  )) as { rows: Array<{ profile_id: string; signal_type: SignalType; n: number }> };
  for (const r of rows) counts.set(r.profile_id, { ...counts.get(r.profile_id), [r.signal_type]: r.n });
  return counts;
}

/**
 * The batch's new profiles and their `created` changes: first, as merges and
 * events point at them. `reuse`: a profile row that exists already (one an
 * unmerge emptied to resolve its events again) is the one made, with the
 * new first and last seen.
 */
export async function insertProfiles(trx: Db, plan: { created: readonly NewProfileRow[]; createdChanges: readonly OutboxMessage[] }, reuse = false): Promise<void> {
  if (plan.created.length === 0) return;
  await preparedRaw(
    trx,
    `with profiles as (
       insert into identity.profiles (id, org_id, canonical_id, first_seen_at, last_seen_at)
       select id, org_id, canonical_id, first_seen_at, last_seen_at
       from jsonb_to_recordset(:profiles::jsonb) as r (id uuid, org_id uuid, canonical_id text, first_seen_at timestamptz, last_seen_at timestamptz)
       ${reuse ? 'on conflict (id) do update set first_seen_at = excluded.first_seen_at, last_seen_at = excluded.last_seen_at' : ''}
     ), outbox as (
       ${OUTBOX_INSERT.replace('?', ':outbox')}
     )
     select 1`,
    { profiles: JSON.stringify(plan.created), outbox: outboxRecords(plan.createdChanges) },
  );
}

/** The planned merges, each through the identity library's merge (both profiles are locked and live); `publish` as MergeInput's. */
export async function mergePlannedProfiles(trx: Db, merges: readonly PlannedMergeRow[], actor: string, publish: boolean): Promise<void> {
  for (const m of merges) {
    await mergeLockedProfiles(trx, { orgId: m.orgId, sourceId: m.sourceId, targetId: m.targetId, reason: m.reason, signalType: m.signalType, actor, messageId: m.messageId, publish });
  }
}

/**
 * Every effect of the fresh events in one statement (one round trip), each
 * part a data-modifying CTE on a table of its own: the events
 * (`on conflict do nothing`: a short count means a concurrent writer, so the
 * transaction is retried), the signals (a signal this batch made must
 * actually be inserted by it, or it retries), sessions, click IDs,
 * fingerprints, and the profiles' counters, touches, traits and engagement
 * scores, with the sessions the statement actually inserted. Rows of each
 * table are written in key order, so concurrent batches take their row locks
 * in one order.
 */
export async function writeEffects(trx: Db, effects: Effects, madeSignals: ReadonlySet<string>): Promise<void> {
  const { rows: result } = (await preparedRaw(
    trx,
    `with events as (
       insert into identity.events (id, org_id, message_id, profile_id, event_name, event_timestamp, received_at,
                                    properties, context, traits, anonymous_id, user_id, previous_id, resolution_method)
       select id, org_id, message_id, profile_id, event_name, event_timestamp, received_at,
              coalesce(properties, '{}'), coalesce(context, '{}'), traits, anonymous_id, user_id, previous_id, resolution_method
       from jsonb_to_recordset(:events::jsonb) as r (id uuid, org_id uuid, message_id text, profile_id uuid, event_name text,
         event_timestamp timestamptz, received_at timestamptz, properties jsonb, context jsonb, traits jsonb,
         anonymous_id text, user_id text, previous_id text, resolution_method text)
       on conflict (id) do nothing
       returning 1
     ), signals as (
       insert into identity.identity_signals as s
         (org_id, signal_type, signal_value, profile_id, confidence, first_seen_at, last_seen_at, occurrence_count)
       select org_id, signal_type, signal_value, profile_id, confidence, first_seen_at, last_seen_at, occurrence_count
       from jsonb_to_recordset(:signals::jsonb) as r (org_id uuid, signal_type text, signal_value text, profile_id uuid,
         confidence real, first_seen_at timestamptz, last_seen_at timestamptz, occurrence_count bigint)
       order by org_id, signal_type, signal_value
       on conflict (org_id, signal_type, signal_value) do update set
         first_seen_at = least(s.first_seen_at, excluded.first_seen_at),
         last_seen_at = greatest(s.last_seen_at, excluded.last_seen_at),
         occurrence_count = s.occurrence_count + excluded.occurrence_count
       returning s.org_id, s.signal_type, s.signal_value, (s.xmax = 0) as inserted
     ), sessions as (
       insert into identity.profile_sessions (org_id, profile_id, session_id)
       select org_id, profile_id, session_id from jsonb_to_recordset(:sessions::jsonb) as r (org_id uuid, profile_id uuid, session_id text)
       on conflict do nothing returning profile_id
     ), new_sessions as (
       select profile_id, count(*)::integer as n from sessions group by profile_id
     ), clicks as (
       insert into identity.click_ids as c
         (org_id, click_type, click_id, profile_id, campaign_source, campaign_medium, first_seen_at, last_seen_at)
       select org_id, click_type, click_id, profile_id, campaign_source, campaign_medium, first_seen_at, last_seen_at
       from jsonb_to_recordset(:clicks::jsonb) as r (org_id uuid, click_type text, click_id text, profile_id uuid,
         campaign_source text, campaign_medium text, first_seen_at timestamptz, last_seen_at timestamptz)
       order by org_id, click_type, click_id
       on conflict (org_id, click_type, click_id) do update set
         campaign_source = case when excluded.first_seen_at < c.first_seen_at then excluded.campaign_source else c.campaign_source end,
         campaign_medium = case when excluded.first_seen_at < c.first_seen_at then excluded.campaign_medium else c.campaign_medium end,
         first_seen_at = least(c.first_seen_at, excluded.first_seen_at),
         last_seen_at = greatest(c.last_seen_at, excluded.last_seen_at)
     ), fingerprints as (
       insert into identity.fingerprints as f (org_id, profile_id, fingerprint_hash, first_seen_at, last_seen_at, occurrence_count)
       select org_id, profile_id, fingerprint_hash, first_seen_at, last_seen_at, occurrence_count
       from jsonb_to_recordset(:fingerprints::jsonb) as r (org_id uuid, profile_id uuid, fingerprint_hash text,
         first_seen_at timestamptz, last_seen_at timestamptz, occurrence_count bigint)
       order by org_id, profile_id, fingerprint_hash
       on conflict (org_id, profile_id, fingerprint_hash) do update set
         first_seen_at = least(f.first_seen_at, excluded.first_seen_at),
         last_seen_at = greatest(f.last_seen_at, excluded.last_seen_at),
         occurrence_count = f.occurrence_count + excluded.occurrence_count
     ), profiles as (
       -- Touches compare by event time: a late event older than the first touch becomes the first touch.
       update identity.profiles p set
         event_count = p.event_count + d.events,
         session_count = p.session_count + coalesce(ns.n, 0),
         first_seen_at = least(p.first_seen_at, d.first_seen_at),
         last_seen_at = greatest(p.last_seen_at, d.last_seen_at),
         first_touch = case when d.first_touch is null then p.first_touch
                            when p.first_touch is null or (d.first_touch ->> 'at')::timestamptz < (p.first_touch ->> 'at')::timestamptz
                            then d.first_touch else p.first_touch end,
         last_touch = case when d.last_touch is null then p.last_touch
                           when p.last_touch is null or (d.last_touch ->> 'at')::timestamptz >= (p.last_touch ->> 'at')::timestamptz
                           then d.last_touch else p.last_touch end,
         traits = p.traits || d.traits,
         user_id = coalesce(p.user_id, d.user_id),
         -- Both decayed to the later instant and added (engagement.ts); untouched when no event scored.
         engagement_score = case when d.engagement_at is null then p.engagement_score else
           identity.engagement_decay(p.engagement_score, p.engagement_updated_at, greatest(p.engagement_updated_at, d.engagement_at), d.half_life_days)
           + identity.engagement_decay(d.engagement_points, d.engagement_at, greatest(p.engagement_updated_at, d.engagement_at), d.half_life_days) end,
         engagement_updated_at = greatest(p.engagement_updated_at, d.engagement_at),
         updated_at = now()
       from jsonb_to_recordset(:profiles::jsonb) as d (id uuid, events bigint, first_seen_at timestamptz,
         last_seen_at timestamptz, first_touch jsonb, last_touch jsonb, traits jsonb, user_id text,
         engagement_points double precision, engagement_at timestamptz, half_life_days double precision)
       left join new_sessions ns on ns.profile_id = d.id
       where p.id = d.id
     )
     select (select count(*) from events)::integer as events,
            (select coalesce(json_agg(json_build_array(org_id, signal_type, signal_value)), '[]') from signals where not inserted) as existing_signals`,
    {
      events: JSON.stringify(effects.events),
      signals: JSON.stringify(effects.signals),
      sessions: JSON.stringify(effects.sessions),
      clicks: JSON.stringify(effects.clicks),
      fingerprints: JSON.stringify(effects.fingerprints),
      profiles: JSON.stringify(effects.profiles),
    },
  )) as { rows: Array<{ events: number; existing_signals: Array<[string, SignalType, string]> }> };
  const written = result[0]!;
  // Someone stored one of these between our check and our insert (the same messageId on another
  // partition): start over, and the check will see it.
  if (written.events !== effects.events.length) throw new ConcurrentWriteError();
  // A signal this batch made must be new. If someone else stored it first, the graph we resolved
  // on was stale (the identity locks make this impossible; this is the safety net): start over.
  for (const [orgId, type, value] of written.existing_signals) {
    if (madeSignals.has(signalOfOrg(orgId, type, value))) {
      throw new ConcurrentWriteError(`signal ${type} was stored by a concurrent transaction`);
    }
  }
}

/**
 * After the effects, in one statement (both read what writeEffects wrote):
 * the stability scores of the profiles whose fingerprints the batch counted
 * (stability_score = the share of the profile's fingerprinted events that
 * carried the hash), and the most recently seen email and phone of the
 * profiles whose conversions need them.
 */
export async function rescoreAndReadContacts(
  trx: Db,
  rescore: ReadonlyArray<{ orgId: string; profileId: string }>,
  contactsOf: ReadonlyArray<{ orgId: string; profileId: string }>,
): Promise<Contacts> {
  const contacts: Contacts = new Map();
  if (rescore.length === 0 && contactsOf.length === 0) return contacts;
  const { rows } = (await preparedRaw(
    trx,
    `with stability as (
       update identity.fingerprints f set stability_score = f.occurrence_count::real / t.total
       from (select f.org_id, f.profile_id, sum(f.occurrence_count) as total
             from unnest(:stableOrgs::uuid[], :stableProfiles::uuid[]) as k (org_id, profile_id)
             join identity.fingerprints f on f.org_id = k.org_id and f.profile_id = k.profile_id
             group by f.org_id, f.profile_id) t
       where f.org_id = t.org_id and f.profile_id = t.profile_id
     )
     select distinct on (s.profile_id, s.signal_type) s.profile_id, s.signal_type, s.signal_value
     from unnest(:contactOrgs::uuid[], :contactProfiles::uuid[]) as k (org_id, profile_id)
     join identity.identity_signals s on s.org_id = k.org_id and s.profile_id = k.profile_id
     where s.signal_type in ('email', 'phone')
     order by s.profile_id, s.signal_type, s.last_seen_at desc`,
    {
      stableOrgs: rescore.map((p) => p.orgId),
      stableProfiles: rescore.map((p) => p.profileId),
      contactOrgs: contactsOf.map((p) => p.orgId),
      contactProfiles: contactsOf.map((p) => p.profileId),
    },
  )) as { rows: Array<{ profile_id: string; signal_type: 'email' | 'phone'; signal_value: string }> };
  for (const r of rows) {
    const c = contacts.get(r.profile_id) ?? { email: null, phone: null };
    c[r.signal_type] = r.signal_value;
    contacts.set(r.profile_id, c);
  }
  return contacts;
}

/**
 * Usage and outputs last, in one statement: the (org, month) usage row is the
 * one lock every transaction of an organisation shares, so it is held only
 * for this statement and the commit.
 */
export async function addUsageAndOutputs(trx: Db, usage: Array<{ orgId: string; at: Date; count: number }>, outbox: readonly OutboxMessage[]): Promise<void> {
  await preparedRaw(
    trx,
    `with usage as (
       ${AccountsStore.usageUpsertSql(':usage')}
     ), outbox as (
       ${OUTBOX_INSERT.replace('?', ':outbox')}
     )
     select 1`,
    { usage: AccountsStore.usageRecords(usage), outbox: outboxRecords(outbox) },
  );
}
