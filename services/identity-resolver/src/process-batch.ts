import { qualifiesAsConversion, type RawEventEnvelope } from '@svc/contracts';
import { AccountsStore, type Db } from '@svc/runtime';
import { ConcurrentWriteError, HOLD_OFF_REPLAY, OUTBOX_INSERT, SIGNAL_CONFIDENCE, combineEngagement, compileStoredEngagementRules, eventPoints, mergeLockedProfiles, normaliseEmail, normalisePhone, outboxRecords, profileChange, resolvedEventRef, scoringTime, signalKey, signalLockKey, signalsOf, type CompiledEngagementRules, type EngagementState, type MergeReason, type OutboxMessage, type Signal, type SignalType } from '@svc/identity';
import { earlierTouch, laterTouch, type Touch } from './context';
import { conversionCandidate } from './conversions';
import { prepareEvent, type PreparedEvent } from './prepare';
import { IdentityGraph, type ProfileNode, type Resolution } from './resolve';

/**
 * One batch, one transaction: lock every identity the batch touches, skip
 * what is already stored, resolve the rest in order, and write every effect
 * (events, profiles, signals, sessions, click IDs, fingerprints, usage, the
 * outbox) set-based. Effects happen only for events whose row is new, so a
 * redelivered batch changes nothing.
 */

export interface BatchOptions {
  /** Who merges, in merges.actor. */
  actor?: string;
  defaultPhoneCountryCode?: string;
  /**
   * The names that qualify as conversions for the organisation: the union
   * over its active connectors (empty when it has none, so nothing goes on
   * conversions.candidates), or null for the spec's defaults.
   */
  conversionNames?: (orgId: string) => Promise<ReadonlySet<string> | null>;
  /**
   * Rebuilding the projections (replay.ts): the replay holds the projections
   * exclusively, so no identity locks; and it restates history rather than
   * adding to it, so no usage and no outputs.
   */
  replay?: boolean;
}

export interface BatchOutcome {
  stored: number;
  duplicates: number;
  profilesCreated: number;
  merges: MergeReason[];
  /** Organisations whose stored engagement rules fail the check (their events scored nothing): to report. */
  invalidEngagementRules: string[];
}

const ACTOR = 'identity-resolver';
const orgKey = (orgId: string, messageId: string) => `${orgId}\u0000${messageId}`;

/** The signals an event makes us lock and read: its own, and an alias's previousId as either kind. */
function lookupSignals(e: PreparedEvent): Signal[] {
  const out = signalsOf(e.identity);
  if (e.identity.previousId !== null) {
    out.push({ type: 'user_id', value: e.identity.previousId }, { type: 'anonymous_id', value: e.identity.previousId });
  }
  return out;
}

export async function processBatch(trx: Db, envelopes: readonly RawEventEnvelope[], options: BatchOptions = {}): Promise<BatchOutcome> {
  const prepared: PreparedEvent[] = [];
  const seen = new Set<string>();
  for (const envelope of envelopes) {
    const e = prepareEvent(envelope, options.defaultPhoneCountryCode);
    const key = orgKey(e.orgId, e.messageId);
    if (seen.has(key)) continue;
    seen.add(key);
    prepared.push(e);
  }
  const outcome: BatchOutcome = { stored: 0, duplicates: envelopes.length - prepared.length, profilesCreated: 0, merges: [], invalidEngagementRules: [] };
  if (prepared.length === 0) return outcome;

  // The organisations' conversion names come from outside this transaction (the caller's function):
  // asked for now, one organisation after another, while the transaction goes on; awaited when needed.
  const conversionNames = options.replay ? undefined : lookUpConversionNames(prepared, options);

  // 1. Serialise on every identity in one global order, before reading anything
  //    (and wait while a replay rebuilds the projections). Its own statement: what
  //    follows must read with a snapshot taken after the locks were granted.
  if (!options.replay) {
    const keys = [...new Set(prepared.flatMap((e) => lookupSignals(e).map((s) => signalLockKey(e.orgId, s.type, s.value))))];
    keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    await trx.raw(`select ${HOLD_OFF_REPLAY}, (select count(pg_advisory_xact_lock(k)) from unnest(?::bigint[]) as k)`, [keys.map(String)]);
  }

  // 2. One statement reads what the batch needs: which events are stored already (a redelivery or a
  //    retry: nothing of theirs happens again), the identity graph (signals, and their profiles
  //    row-locked) and the organisations' engagement rules.
  const state = await readBatchState(trx, prepared);
  const fresh = prepared.filter((e) => !state.stored.has(orgKey(e.orgId, e.messageId)));
  outcome.duplicates += prepared.length - fresh.length;
  if (fresh.length === 0) return outcome;

  // 3. The identity graph of the fresh events.
  const graphs = await buildGraphs(trx, fresh, state);

  // 4. Resolve, in partition order.
  const resolutions = fresh.map((e) => graphOf(graphs, e.orgId).resolveEvent(e.identity, e.messageId));

  // 5. Write, in as few statements as the order of things allows.
  const final = (e: PreparedEvent, r: Resolution) => graphOf(graphs, e.orgId).find(r.profileId);
  // Each organisation's engagement rules, read once per batch (in this transaction, with the state).
  const engagement = compileStoredEngagementRules(
    [...graphs.keys()],
    state.rules.filter((r) => graphs.has(r.org_id)),
  );
  outcome.invalidEngagementRules = engagement.invalid;
  const deltas = profileDeltas(graphs, fresh, resolutions, engagement.rules);

  // New profiles first: merges and events point at them.
  const created = [...graphs.values()].flatMap((g) => g.created.filter((n) => n.mergedInto === null).map((n) => ({ g, n })));
  if (created.length > 0) {
    await trx.raw(
      `with profiles as (
         insert into identity.profiles (id, org_id, canonical_id, first_seen_at, last_seen_at)
         select id, org_id, canonical_id, first_seen_at, last_seen_at
         from jsonb_to_recordset(:profiles::jsonb) as r (id uuid, org_id uuid, canonical_id text, first_seen_at timestamptz, last_seen_at timestamptz)
       ), outbox as (
         ${OUTBOX_INSERT.replace('?', ':outbox')}
       )
       select 1`,
      {
        profiles: JSON.stringify(newProfileRows(created, deltas)),
        outbox: outboxRecords(created.map(({ g, n }) => profileChange(g.orgId, n.id, 'created'))),
      },
    );
  }
  outcome.profilesCreated = created.length;

  for (const g of graphs.values()) {
    for (const m of g.merges) {
      // A profile made in this batch has nothing stored yet: merging it away is only a redirect.
      if (isNew(g, m.sourceId)) continue;
      // Both are in the graph, so locked since the batch read them (or made by it), and live: the graph
      // follows every merge, this batch's included.
      await mergeLockedProfiles(trx, { orgId: g.orgId, sourceId: m.sourceId, targetId: g.find(m.targetId), reason: m.reason, actor: options.actor ?? ACTOR, messageId: m.messageId });
      outcome.merges.push(m.reason);
    }
  }

  const fingerprints = fingerprintRows(fresh, resolutions, final);
  await writeEffects(trx, graphs, {
    events: eventRows(fresh, resolutions, final),
    signals: signalRows(graphs, fresh, resolutions, final),
    sessions: sessionRows(fresh, resolutions, final),
    clicks: clickIdRows(fresh, resolutions, final),
    fingerprints,
    profiles: profileRows(deltas),
  });
  outcome.stored = fresh.length;

  // Stability of the fingerprints just counted, and the contact details conversions need: both read
  // what the statement above wrote, so they follow it, together.
  const qualifying = conversionNames ? await qualifyingConversions(fresh, resolutions, final, conversionNames) : [];
  const contact = await afterEffects(trx, fingerprints, qualifying);
  if (options.replay) return outcome;

  // Usage and outputs last, in one statement: the (org, month) usage row is the one lock every
  // transaction of an organisation shares, so it is held only for this statement and the commit.
  const usage = new Map<string, { orgId: string; at: Date; count: number }>();
  for (const e of fresh) {
    const k = `${e.orgId} ${e.receivedAt.slice(0, 7)}`;
    const u = usage.get(k) ?? { orgId: e.orgId, at: new Date(e.receivedAt), count: 0 };
    u.count++;
    usage.set(k, u);
  }
  const outbox: OutboxMessage[] = [];
  const createdIds = new Set(created.map(({ n }) => n.id));
  for (const [id, d] of deltas) if (!createdIds.has(id)) outbox.push(profileChange(d.orgId, id, 'updated'));
  fresh.forEach((e) => outbox.push(resolvedEventRef(e.eventId)));
  outbox.push(...conversionMessages(qualifying, contact, options));
  await trx.raw(
    `with usage as (
       ${AccountsStore.usageUpsertSql(':usage')}
     ), outbox as (
       ${OUTBOX_INSERT.replace('?', ':outbox')}
     )
     select 1`,
    { usage: AccountsStore.usageRecords([...usage.values()]), outbox: outboxRecords(outbox) },
  );
  return outcome;
}

/**
 * The conversion names of each organisation of the batch, looked up one after
 * another (one connection at a time, as the callback may use the pool) while
 * the transaction proceeds. A failure surfaces where the names are awaited.
 */
function lookUpConversionNames(prepared: readonly PreparedEvent[], options: BatchOptions): Promise<Map<string, ReadonlySet<string> | null>> {
  const lookUp = async () => {
    const names = new Map<string, ReadonlySet<string> | null>();
    for (const orgId of new Set(prepared.map((e) => e.orgId))) names.set(orgId, (await options.conversionNames?.(orgId)) ?? null);
    return names;
  };
  const pending = lookUp();
  // Awaited later, or not at all when the batch ends early (everything a duplicate, or a failure).
  pending.catch(() => undefined);
  return pending;
}

function isNew(g: IdentityGraph, id: string): boolean {
  return g.created.some((n) => n.id === id);
}

function graphOf(graphs: ReadonlyMap<string, IdentityGraph>, orgId: string): IdentityGraph {
  const g = graphs.get(orgId);
  if (!g) throw new Error(`no identity graph loaded for organisation ${orgId}`);
  return g;
}

interface ProfileRow {
  id: string;
  org_id: string;
  canonical_id: string;
  user_id: string | null;
  merged_into: string | null;
}

interface SignalRow {
  org_id: string;
  signal_type: SignalType;
  signal_value: string;
  profile_id: string;
}

/** What one statement read for the batch, after its identity locks. */
interface BatchState {
  /** orgKey of the events already stored. */
  stored: Set<string>;
  signals: SignalRow[];
  /** The signals' profiles, row-locked. */
  profiles: ProfileRow[];
  rules: Array<{ org_id: string; rules: unknown }>;
}

/**
 * Which events are stored already, the known signals of every event and their
 * profiles (locked `for update` in id order, which the sort below the lock
 * guarantees), and the organisations' engagement rules: one round trip.
 */
async function readBatchState(trx: Db, prepared: readonly PreparedEvent[]): Promise<BatchState> {
  const wanted = prepared.flatMap((e) => lookupSignals(e).map((s) => ({ orgId: e.orgId, ...s })));
  const orgIds = [...new Set(prepared.map((e) => e.orgId))];
  const { rows } = (await trx.raw(
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
       (select coalesce(json_agg(json_build_array(e.org_id, e.message_id)), '[]')
        from unnest(:eventOrgs::uuid[], :messageIds::text[]) as k (org_id, message_id)
        join identity.events e on e.org_id = k.org_id and e.message_id = k.message_id) as stored,
       (select coalesce(json_agg(signals), '[]') from signals) as signals,
       (select coalesce(json_agg(profiles), '[]') from profiles) as profiles,
       (select coalesce(json_agg(json_build_object('org_id', r.org_id, 'rules', r.rules)), '[]')
        from identity.engagement_rules r where r.org_id = any(:ruleOrgs::uuid[])) as rules`,
    {
      sigOrgs: wanted.map((w) => w.orgId),
      sigTypes: wanted.map((w) => w.type),
      sigValues: wanted.map((w) => w.value),
      eventOrgs: prepared.map((e) => e.orgId),
      messageIds: prepared.map((e) => e.messageId),
      ruleOrgs: orgIds,
    },
  )) as { rows: Array<{ stored: Array<[string, string]>; signals: SignalRow[]; profiles: ProfileRow[]; rules: Array<{ org_id: string; rules: unknown }> }> };
  const row = rows[0]!;
  return { stored: new Set(row.stored.map(([orgId, messageId]) => orgKey(orgId, messageId))), signals: row.signals, profiles: row.profiles, rules: row.rules };
}

/** The identity graph of each organisation of the fresh events, from the state read under lock. */
async function buildGraphs(trx: Db, fresh: readonly PreparedEvent[], state: BatchState): Promise<Map<string, IdentityGraph>> {
  // Only the signals of fresh events (the state also holds those of events stored already).
  const freshSignals = new Set(fresh.flatMap((e) => lookupSignals(e).map((s) => `${e.orgId}\u0000${signalKey(s.type, s.value)}`)));
  const signals = state.signals.filter((s) => freshSignals.has(`${s.org_id}\u0000${signalKey(s.signal_type, s.signal_value)}`));
  const profiles = new Map<string, ProfileRow>(state.profiles.map((p) => [p.id, p]));
  // A profile merged away by someone else since its signals were read leads to its survivor, which is
  // locked next (a rare out-of-order lock; a deadlock is retried).
  let toLock = [...new Set(state.profiles.flatMap((r) => (r.merged_into && !profiles.has(r.merged_into) ? [r.merged_into] : [])))];
  for (let round = 0; toLock.length > 0; round++) {
    if (round > 16) throw new Error('merged_into chain does not end');
    const { rows } = (await trx.raw(
      `select id, org_id, canonical_id, user_id, merged_into from identity.profiles
       where id = any(?::uuid[]) order by id for update`,
      [toLock],
    )) as { rows: ProfileRow[] };
    for (const r of rows) profiles.set(r.id, r);
    toLock = [...new Set(rows.flatMap((r) => (r.merged_into && !profiles.has(r.merged_into) ? [r.merged_into] : [])))];
  }

  const graphs = new Map<string, IdentityGraph>();
  for (const orgId of new Set(fresh.map((e) => e.orgId))) {
    const signalMap = new Map<string, string>();
    for (const s of signals) if (s.org_id === orgId) signalMap.set(signalKey(s.signal_type, s.signal_value), s.profile_id);
    const nodes = new Map<string, ProfileNode>();
    for (const p of profiles.values()) {
      if (p.org_id !== orgId) continue;
      nodes.set(p.id, { id: p.id, canonicalId: p.canonical_id, userId: p.user_id, isNew: false, mergedInto: p.merged_into });
    }
    graphs.set(orgId, new IdentityGraph(orgId, signalMap, nodes));
  }
  return graphs;
}

/** What the batch adds to one surviving profile. */
interface ProfileDelta {
  orgId: string;
  events: number;
  sessions: number;
  firstSeen: string;
  lastSeen: string;
  firstTouch: Touch | null;
  lastTouch: Touch | null;
  traits: Record<string, unknown>;
  userId: string | null;
  /** The points of the batch's events, as of the latest of them (see engagement.ts). */
  engagement: EngagementState;
  halfLifeDays: number | null;
}

function profileDeltas(
  graphs: ReadonlyMap<string, IdentityGraph>,
  fresh: readonly PreparedEvent[],
  resolutions: readonly Resolution[],
  engagementRules: ReadonlyMap<string, CompiledEngagementRules>,
): Map<string, ProfileDelta> {
  const deltas = new Map<string, ProfileDelta>();
  fresh.forEach((e, i) => {
    const g = graphOf(graphs, e.orgId);
    const id = g.find(resolutions[i]!.profileId);
    const rules = engagementRules.get(e.orgId);
    let d = deltas.get(id);
    if (!d) {
      d = {
        orgId: e.orgId, events: 0, sessions: 0, firstSeen: e.timestamp, lastSeen: e.timestamp, firstTouch: null, lastTouch: null, traits: {}, userId: null,
        engagement: { score: 0, at: null }, halfLifeDays: rules?.halfLifeDays ?? null,
      };
      deltas.set(id, d);
    }
    d.events++;
    const points = rules ? eventPoints(rules, e.eventName, e.properties) : 0;
    if (points !== 0) d.engagement = combineEngagement(d.engagement, { score: points, at: scoringTime(e.timestamp, e.receivedAt) }, d.halfLifeDays);
    if (e.timestamp < d.firstSeen) d.firstSeen = e.timestamp;
    if (e.timestamp > d.lastSeen) d.lastSeen = e.timestamp;
    d.firstTouch = earlierTouch(d.firstTouch, e.touch);
    d.lastTouch = laterTouch(d.lastTouch, e.touch);
    if (e.type === 'identify' && e.traits) Object.assign(d.traits, e.traits);
  });
  // Identified in this batch: the survivor carries the userId now.
  for (const [id, d] of deltas) d.userId = graphOf(graphs, d.orgId).profile(id).userId;
  return deltas;
}

function newProfileRows(created: ReadonlyArray<{ g: IdentityGraph; n: ProfileNode }>, deltas: ReadonlyMap<string, ProfileDelta>) {
  return created.map(({ g, n }) => {
    const d = deltas.get(n.id);
    // A profile made only to be merged into in the same batch may have no event of its own.
    const at = d?.firstSeen ?? new Date().toISOString();
    return { id: n.id, org_id: g.orgId, canonical_id: n.canonicalId, first_seen_at: at, last_seen_at: d?.lastSeen ?? at };
  });
}

type Final = (e: PreparedEvent, r: Resolution) => string;

function eventRows(fresh: readonly PreparedEvent[], resolutions: readonly Resolution[], final: Final) {
  return fresh.map((e, i) => ({
    id: e.eventId,
    org_id: e.orgId,
    message_id: e.messageId,
    profile_id: final(e, resolutions[i]!),
    event_name: e.eventName,
    event_timestamp: e.timestamp,
    received_at: e.receivedAt,
    properties: e.properties,
    context: e.context,
    traits: e.traits,
    anonymous_id: e.identity.anonymousId,
    user_id: e.identity.userId,
    resolution_method: resolutions[i]!.method,
  }));
}

interface SignalUpsert {
  org_id: string;
  signal_type: SignalType;
  signal_value: string;
  profile_id: string;
  confidence: number;
  first_seen_at: string;
  last_seen_at: string;
  occurrence_count: number;
}

function signalRows(
  graphs: ReadonlyMap<string, IdentityGraph>,
  fresh: readonly PreparedEvent[],
  resolutions: readonly Resolution[],
  final: Final,
): SignalUpsert[] {
  const rows = new Map<string, SignalUpsert>();
  fresh.forEach((e, i) => {
    const g = graphOf(graphs, e.orgId);
    const profileId = final(e, resolutions[i]!);
    const carried = signalsOf(e.identity);
    if (e.identity.previousId !== null) carried.push({ type: 'user_id', value: e.identity.previousId });
    for (const s of carried) {
      // Counted on the profile that owns it; a signal left with another profile (shared device) is not.
      if (g.owner(s.type, s.value) !== profileId) continue;
      const k = `${e.orgId}\u0000${signalKey(s.type, s.value)}`;
      const row = rows.get(k);
      if (!row) {
        rows.set(k, { org_id: e.orgId, signal_type: s.type, signal_value: s.value, profile_id: profileId, confidence: SIGNAL_CONFIDENCE[s.type], first_seen_at: e.timestamp, last_seen_at: e.timestamp, occurrence_count: 1 });
      } else {
        row.occurrence_count++;
        if (e.timestamp < row.first_seen_at) row.first_seen_at = e.timestamp;
        if (e.timestamp > row.last_seen_at) row.last_seen_at = e.timestamp;
      }
    }
  });
  return [...rows.values()];
}

function sessionRows(fresh: readonly PreparedEvent[], resolutions: readonly Resolution[], final: Final) {
  const rows = new Map<string, { org_id: string; profile_id: string; session_id: string }>();
  fresh.forEach((e, i) => {
    if (e.sessionId === null) return;
    const profileId = final(e, resolutions[i]!);
    rows.set(`${profileId}\u0000${e.sessionId}`, { org_id: e.orgId, profile_id: profileId, session_id: e.sessionId });
  });
  return [...rows.values()];
}

function clickIdRows(fresh: readonly PreparedEvent[], resolutions: readonly Resolution[], final: Final) {
  const rows = new Map<string, { org_id: string; click_type: string; click_id: string; profile_id: string; campaign_source: string | null; campaign_medium: string | null; first_seen_at: string; last_seen_at: string }>();
  fresh.forEach((e, i) => {
    for (const c of e.clickIds) {
      const k = `${e.orgId}\u0000${c.clickType}\u0000${c.clickId}`;
      const row = rows.get(k);
      if (!row) {
        rows.set(k, { org_id: e.orgId, click_type: c.clickType, click_id: c.clickId, profile_id: final(e, resolutions[i]!), campaign_source: c.campaignSource, campaign_medium: c.campaignMedium, first_seen_at: e.timestamp, last_seen_at: e.timestamp });
      } else {
        if (e.timestamp < row.first_seen_at) Object.assign(row, { first_seen_at: e.timestamp, campaign_source: c.campaignSource, campaign_medium: c.campaignMedium });
        if (e.timestamp > row.last_seen_at) row.last_seen_at = e.timestamp;
      }
    }
  });
  return [...rows.values()];
}

interface FingerprintUpsert {
  org_id: string;
  profile_id: string;
  fingerprint_hash: string;
  first_seen_at: string;
  last_seen_at: string;
  occurrence_count: number;
}

function fingerprintRows(fresh: readonly PreparedEvent[], resolutions: readonly Resolution[], final: Final): FingerprintUpsert[] {
  const rows = new Map<string, FingerprintUpsert>();
  fresh.forEach((e, i) => {
    if (e.fingerprint === null) return;
    const profileId = final(e, resolutions[i]!);
    const k = `${profileId}\u0000${e.fingerprint}`;
    const row = rows.get(k);
    if (!row) {
      rows.set(k, { org_id: e.orgId, profile_id: profileId, fingerprint_hash: e.fingerprint, first_seen_at: e.timestamp, last_seen_at: e.timestamp, occurrence_count: 1 });
    } else {
      row.occurrence_count++;
      if (e.timestamp < row.first_seen_at) row.first_seen_at = e.timestamp;
      if (e.timestamp > row.last_seen_at) row.last_seen_at = e.timestamp;
    }
  });
  return [...rows.values()];
}

function profileRows(deltas: ReadonlyMap<string, ProfileDelta>) {
  return [...deltas].map(([id, d]) => ({
    id,
    events: d.events,
    first_seen_at: d.firstSeen,
    last_seen_at: d.lastSeen,
    first_touch: d.firstTouch,
    last_touch: d.lastTouch,
    traits: d.traits,
    user_id: d.userId,
    engagement_points: d.engagement.score,
    engagement_at: d.engagement.at,
    half_life_days: d.halfLifeDays,
  }));
}

/**
 * Every effect of the fresh events in one statement (one round trip), each
 * part a data-modifying CTE on a table of its own: the events
 * (`on conflict do nothing`: a short count means a concurrent writer, so the
 * transaction is retried), the signals (a signal this batch created must
 * actually be inserted by it, or it retries), sessions, click IDs,
 * fingerprints, and the profiles' counters, touches, traits and engagement
 * scores, with the sessions the statement actually inserted. Rows of each
 * table are written in key order, as before, so concurrent batches take
 * their row locks in one order.
 */
async function writeEffects(
  trx: Db,
  graphs: ReadonlyMap<string, IdentityGraph>,
  rows: {
    events: ReturnType<typeof eventRows>;
    signals: SignalUpsert[];
    sessions: ReturnType<typeof sessionRows>;
    clicks: ReturnType<typeof clickIdRows>;
    fingerprints: FingerprintUpsert[];
    profiles: ReturnType<typeof profileRows>;
  },
): Promise<void> {
  const { rows: result } = (await trx.raw(
    `with events as (
       insert into identity.events (id, org_id, message_id, profile_id, event_name, event_timestamp, received_at,
                                    properties, context, traits, anonymous_id, user_id, resolution_method)
       select id, org_id, message_id, profile_id, event_name, event_timestamp, received_at,
              coalesce(properties, '{}'), coalesce(context, '{}'), traits, anonymous_id, user_id, resolution_method
       from jsonb_to_recordset(:events::jsonb) as r (id uuid, org_id uuid, message_id text, profile_id uuid, event_name text,
         event_timestamp timestamptz, received_at timestamptz, properties jsonb, context jsonb, traits jsonb,
         anonymous_id text, user_id text, resolution_method text)
       on conflict (org_id, message_id) do nothing
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
      events: JSON.stringify(rows.events),
      signals: JSON.stringify(rows.signals),
      sessions: JSON.stringify(rows.sessions),
      clicks: JSON.stringify(rows.clicks),
      fingerprints: JSON.stringify(rows.fingerprints),
      profiles: JSON.stringify(rows.profiles),
    },
  )) as { rows: Array<{ events: number; existing_signals: Array<[string, SignalType, string]> }> };
  const written = result[0]!;
  // Someone stored one of these between our check and our insert (the same messageId on another
  // partition): start over, and the check will see it.
  if (written.events !== rows.events.length) throw new ConcurrentWriteError();
  // A signal this batch made must be new. If someone else stored it first, the graph we resolved
  // on was stale (the identity locks make this impossible; this is the safety net): start over.
  const made = new Set([...graphs.values()].flatMap((g) => [...g.attached.keys()].map((k) => `${g.orgId}\u0000${k}`)));
  for (const [orgId, type, value] of written.existing_signals) {
    if (made.has(`${orgId}\u0000${signalKey(type, value)}`)) {
      throw new ConcurrentWriteError(`signal ${type} was stored by a concurrent transaction`);
    }
  }
}

type Qualifying = Array<{ e: PreparedEvent; profileId: string }>;
type Contacts = Map<string, { email: string | null; phone: string | null }>;

async function qualifyingConversions(
  fresh: readonly PreparedEvent[],
  resolutions: readonly Resolution[],
  final: Final,
  conversionNames: Promise<Map<string, ReadonlySet<string> | null>>,
): Promise<Qualifying> {
  const names = await conversionNames;
  const qualifying: Qualifying = [];
  for (const [i, e] of fresh.entries()) {
    if (qualifiesAsConversion(e.eventName, names.get(e.orgId) ?? null)) qualifying.push({ e, profileId: final(e, resolutions[i]!) });
  }
  return qualifying;
}

/**
 * After the effects, in one statement: the stability scores of the profiles
 * whose fingerprints the batch counted (stability_score = the share of the
 * profile's fingerprinted events that carried the hash), and the profiles'
 * most recently seen email and phone for conversions whose event carries none.
 */
async function afterEffects(trx: Db, fingerprints: readonly FingerprintUpsert[], qualifying: Qualifying): Promise<Contacts> {
  const contact: Contacts = new Map();
  const stable = [...new Map(fingerprints.map((f) => [`${f.org_id}\u0000${f.profile_id}`, f])).values()];
  const needed = qualifying.filter(({ e }) => e.identity.email === null || e.identity.phone === null);
  if (stable.length === 0 && needed.length === 0) return contact;
  const { rows } = (await trx.raw(
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
      stableOrgs: stable.map((f) => f.org_id),
      stableProfiles: stable.map((f) => f.profile_id),
      contactOrgs: needed.map((q) => q.e.orgId),
      contactProfiles: needed.map((q) => q.profileId),
    },
  )) as { rows: Array<{ profile_id: string; signal_type: 'email' | 'phone'; signal_value: string }> };
  for (const r of rows) {
    const c = contact.get(r.profile_id) ?? { email: null, phone: null };
    c[r.signal_type] = r.signal_value;
    contact.set(r.profile_id, c);
  }
  return contact;
}

function conversionMessages(qualifying: Qualifying, contact: Contacts, options: BatchOptions): OutboxMessage[] {
  return qualifying.map(({ e, profileId }) => {
    const known = contact.get(profileId);
    const payload = conversionCandidate({
      orgId: e.orgId,
      profileId,
      eventId: e.eventId,
      messageId: e.messageId,
      eventName: e.eventName,
      eventTimestamp: e.timestamp,
      properties: e.properties,
      context: e.context,
      email: e.identity.email ?? normaliseEmail(e.properties.email) ?? known?.email ?? null,
      phone: e.identity.phone ?? normalisePhone(e.properties.phone, options.defaultPhoneCountryCode) ?? known?.phone ?? null,
      clientIp: e.clientIp,
    });
    return { topic: 'conversionsCandidates', key: profileId, payload, eventId: null };
  });
}
