import { qualifiesAsConversion, type RawEventEnvelope } from '@svc/contracts';
import { AccountsStore, type Db } from '@svc/runtime';
import { earlierTouch, laterTouch, type Touch } from './context';
import { conversionCandidate } from './conversions';
import { combineEngagement, eventPoints, scoringTime, type CompiledEngagementRules, type EngagementState } from './engagement';
import { loadEngagementRules } from './engagement-rules-store';
import { signalLockKey } from './ids';
import { holdOffReplay } from './replay-lock';
import { mergeProfiles, updateStability } from './merge';
import { profileChange, resolvedEventRef, writeOutbox, type OutboxMessage } from './outbox';
import { prepareEvent, type PreparedEvent } from './prepare';
import { IdentityGraph, type MergeReason, type ProfileNode, type Resolution } from './resolve';
import { ConcurrentWriteError } from './retry';
import { SIGNAL_CONFIDENCE, normaliseEmail, normalisePhone, signalKey, signalsOf, type Signal, type SignalType } from './signals';

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

  // 1. Serialise on every identity in one global order, before reading anything
  //    (and wait while a replay rebuilds the projections).
  if (!options.replay) {
    await holdOffReplay(trx);
    const keys = [...new Set(prepared.flatMap((e) => lookupSignals(e).map((s) => signalLockKey(e.orgId, s.type, s.value))))];
    keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    await trx.raw('select count(pg_advisory_xact_lock(k)) from unnest(?::bigint[]) as k', [keys.map(String)]);
  }

  // 2. Already stored: a redelivery or a retry. Nothing of theirs happens again.
  const { rows: existing } = (await trx.raw(
    `select e.org_id, e.message_id from unnest(?::uuid[], ?::text[]) as k (org_id, message_id)
     join identity.events e on e.org_id = k.org_id and e.message_id = k.message_id`,
    [prepared.map((e) => e.orgId), prepared.map((e) => e.messageId)],
  )) as { rows: Array<{ org_id: string; message_id: string }> };
  const stored = new Set(existing.map((r) => orgKey(r.org_id, r.message_id)));
  const fresh = prepared.filter((e) => !stored.has(orgKey(e.orgId, e.messageId)));
  outcome.duplicates += prepared.length - fresh.length;
  if (fresh.length === 0) return outcome;

  // 3. Load the identity graph of the fresh events, profiles row-locked.
  const graphs = await loadGraphs(trx, fresh);

  // 4. Resolve, in partition order.
  const resolutions = fresh.map((e) => graphOf(graphs, e.orgId).resolveEvent(e.identity, e.messageId));

  // 5. Write.
  const final = (e: PreparedEvent, r: Resolution) => graphOf(graphs, e.orgId).find(r.profileId);
  // Each organisation's engagement rules, read once per batch (in this transaction).
  const engagement = await loadEngagementRules(trx, [...graphs.keys()]);
  outcome.invalidEngagementRules = engagement.invalid;
  const deltas = profileDeltas(graphs, fresh, resolutions, engagement.rules);
  const outbox: OutboxMessage[] = [];

  const created = [...graphs.values()].flatMap((g) => g.created.filter((n) => n.mergedInto === null).map((n) => ({ g, n })));
  await insertProfiles(trx, created, deltas);
  await writeOutbox(trx, created.map(({ g, n }) => profileChange(g.orgId, n.id, 'created')));
  outcome.profilesCreated = created.length;

  for (const g of graphs.values()) {
    for (const m of g.merges) {
      // A profile made in this batch has nothing stored yet: merging it away is only a redirect.
      if (isNew(g, m.sourceId)) continue;
      await mergeProfiles(trx, { orgId: g.orgId, sourceId: m.sourceId, targetId: g.find(m.targetId), reason: m.reason, actor: options.actor ?? ACTOR, messageId: m.messageId });
      outcome.merges.push(m.reason);
    }
  }

  await insertEvents(trx, fresh, resolutions, final);
  outcome.stored = fresh.length;
  await upsertSignals(trx, graphs, fresh, resolutions, final);
  await insertSessions(trx, fresh, resolutions, final, deltas);
  await upsertClickIds(trx, fresh, resolutions, final);
  await upsertFingerprints(trx, fresh, resolutions, final);
  await updateProfiles(trx, deltas);

  // Usage last: its (org, month) row is the one lock every transaction of an org shares, so it is held briefly.
  const usage = new Map<string, { orgId: string; at: Date; n: number }>();
  for (const e of fresh) {
    const k = `${e.orgId} ${e.receivedAt.slice(0, 7)}`;
    const u = usage.get(k) ?? { orgId: e.orgId, at: new Date(e.receivedAt), n: 0 };
    u.n++;
    usage.set(k, u);
  }
  if (options.replay) return outcome;
  for (const k of [...usage.keys()].sort()) {
    const u = usage.get(k)!;
    await AccountsStore.addUsage(trx, u.orgId, u.at, u.n);
  }

  const createdIds = new Set(created.map(({ n }) => n.id));
  for (const [id, d] of deltas) if (!createdIds.has(id)) outbox.push(profileChange(d.orgId, id, 'updated'));
  fresh.forEach((e) => outbox.push(resolvedEventRef(e.eventId)));
  outbox.push(...(await conversionCandidates(trx, fresh, resolutions, final, options)));
  await writeOutbox(trx, outbox);
  return outcome;
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

async function loadGraphs(trx: Db, fresh: readonly PreparedEvent[]): Promise<Map<string, IdentityGraph>> {
  const wanted = fresh.flatMap((e) => lookupSignals(e).map((s) => ({ orgId: e.orgId, ...s })));
  const { rows: signals } = (await trx.raw(
    `select s.org_id, s.signal_type, s.signal_value, s.profile_id
     from unnest(?::uuid[], ?::text[], ?::text[]) as k (org_id, signal_type, signal_value)
     join identity.identity_signals s
       on s.org_id = k.org_id and s.signal_type = k.signal_type and s.signal_value = k.signal_value`,
    [wanted.map((w) => w.orgId), wanted.map((w) => w.type), wanted.map((w) => w.value)],
  )) as { rows: Array<{ org_id: string; signal_type: SignalType; signal_value: string; profile_id: string }> };

  const profiles = new Map<string, ProfileRow>();
  let toLock = [...new Set(signals.map((s) => s.profile_id))];
  // Lock in id order. A profile merged away by someone else since we read its signals
  // leads to its survivor, which is locked next (a rare out-of-order lock; a deadlock is retried).
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

async function insertProfiles(trx: Db, created: ReadonlyArray<{ g: IdentityGraph; n: ProfileNode }>, deltas: ReadonlyMap<string, ProfileDelta>): Promise<void> {
  if (created.length === 0) return;
  const rows = created.map(({ g, n }) => {
    const d = deltas.get(n.id);
    // A profile made only to be merged into in the same batch may have no event of its own.
    const at = d?.firstSeen ?? new Date().toISOString();
    return { id: n.id, org_id: g.orgId, canonical_id: n.canonicalId, first_seen_at: at, last_seen_at: d?.lastSeen ?? at };
  });
  await trx.raw(
    `insert into identity.profiles (id, org_id, canonical_id, first_seen_at, last_seen_at)
     select id, org_id, canonical_id, first_seen_at, last_seen_at
     from jsonb_to_recordset(?::jsonb) as r (id uuid, org_id uuid, canonical_id text, first_seen_at timestamptz, last_seen_at timestamptz)`,
    [JSON.stringify(rows)],
  );
}

type Final = (e: PreparedEvent, r: Resolution) => string;

async function insertEvents(trx: Db, fresh: readonly PreparedEvent[], resolutions: readonly Resolution[], final: Final): Promise<void> {
  const rows = fresh.map((e, i) => ({
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
  const result = (await trx.raw(
    `insert into identity.events (id, org_id, message_id, profile_id, event_name, event_timestamp, received_at,
                                  properties, context, traits, anonymous_id, user_id, resolution_method)
     select id, org_id, message_id, profile_id, event_name, event_timestamp, received_at,
            coalesce(properties, '{}'), coalesce(context, '{}'), traits, anonymous_id, user_id, resolution_method
     from jsonb_to_recordset(?::jsonb) as r (id uuid, org_id uuid, message_id text, profile_id uuid, event_name text,
       event_timestamp timestamptz, received_at timestamptz, properties jsonb, context jsonb, traits jsonb,
       anonymous_id text, user_id text, resolution_method text)
     on conflict (org_id, message_id) do nothing`,
    [JSON.stringify(rows)],
  )) as { rowCount: number | null };
  // Someone stored one of these between our check and our insert (the same messageId on another
  // partition): start over, and the check will see it.
  if (result.rowCount !== rows.length) throw new ConcurrentWriteError();
}

async function upsertSignals(
  trx: Db,
  graphs: ReadonlyMap<string, IdentityGraph>,
  fresh: readonly PreparedEvent[],
  resolutions: readonly Resolution[],
  final: Final,
): Promise<void> {
  const rows = new Map<string, { org_id: string; signal_type: SignalType; signal_value: string; profile_id: string; confidence: number; first_seen_at: string; last_seen_at: string; occurrence_count: number }>();
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
  if (rows.size === 0) return;
  const { rows: written } = (await trx.raw(
    `insert into identity.identity_signals as s
       (org_id, signal_type, signal_value, profile_id, confidence, first_seen_at, last_seen_at, occurrence_count)
     select org_id, signal_type, signal_value, profile_id, confidence, first_seen_at, last_seen_at, occurrence_count
     from jsonb_to_recordset(?::jsonb) as r (org_id uuid, signal_type text, signal_value text, profile_id uuid,
       confidence real, first_seen_at timestamptz, last_seen_at timestamptz, occurrence_count bigint)
     order by org_id, signal_type, signal_value
     on conflict (org_id, signal_type, signal_value) do update set
       first_seen_at = least(s.first_seen_at, excluded.first_seen_at),
       last_seen_at = greatest(s.last_seen_at, excluded.last_seen_at),
       occurrence_count = s.occurrence_count + excluded.occurrence_count
     returning s.org_id, s.signal_type, s.signal_value, (s.xmax = 0) as inserted`,
    [JSON.stringify([...rows.values()])],
  )) as { rows: Array<{ org_id: string; signal_type: SignalType; signal_value: string; inserted: boolean }> };
  // A signal this batch made must be new. If someone else stored it first, the graph we resolved
  // on was stale (the identity locks make this impossible; this is the safety net): start over.
  const made = new Set([...graphs.values()].flatMap((g) => [...g.attached.keys()].map((k) => `${g.orgId}\u0000${k}`)));
  for (const w of written) {
    if (!w.inserted && made.has(`${w.org_id}\u0000${signalKey(w.signal_type, w.signal_value)}`)) {
      throw new ConcurrentWriteError(`signal ${w.signal_type} was stored by a concurrent transaction`);
    }
  }
}

async function insertSessions(
  trx: Db,
  fresh: readonly PreparedEvent[],
  resolutions: readonly Resolution[],
  final: Final,
  deltas: Map<string, ProfileDelta>,
): Promise<void> {
  const rows = new Map<string, { org_id: string; profile_id: string; session_id: string }>();
  fresh.forEach((e, i) => {
    if (e.sessionId === null) return;
    const profileId = final(e, resolutions[i]!);
    rows.set(`${profileId}\u0000${e.sessionId}`, { org_id: e.orgId, profile_id: profileId, session_id: e.sessionId });
  });
  if (rows.size === 0) return;
  const { rows: inserted } = (await trx.raw(
    `insert into identity.profile_sessions (org_id, profile_id, session_id)
     select org_id, profile_id, session_id from jsonb_to_recordset(?::jsonb) as r (org_id uuid, profile_id uuid, session_id text)
     on conflict do nothing returning profile_id`,
    [JSON.stringify([...rows.values()])],
  )) as { rows: Array<{ profile_id: string }> };
  for (const { profile_id } of inserted) {
    const d = deltas.get(profile_id);
    if (d) d.sessions++;
  }
}

async function upsertClickIds(trx: Db, fresh: readonly PreparedEvent[], resolutions: readonly Resolution[], final: Final): Promise<void> {
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
  if (rows.size === 0) return;
  await trx.raw(
    `insert into identity.click_ids as c
       (org_id, click_type, click_id, profile_id, campaign_source, campaign_medium, first_seen_at, last_seen_at)
     select org_id, click_type, click_id, profile_id, campaign_source, campaign_medium, first_seen_at, last_seen_at
     from jsonb_to_recordset(?::jsonb) as r (org_id uuid, click_type text, click_id text, profile_id uuid,
       campaign_source text, campaign_medium text, first_seen_at timestamptz, last_seen_at timestamptz)
     order by org_id, click_type, click_id
     on conflict (org_id, click_type, click_id) do update set
       campaign_source = case when excluded.first_seen_at < c.first_seen_at then excluded.campaign_source else c.campaign_source end,
       campaign_medium = case when excluded.first_seen_at < c.first_seen_at then excluded.campaign_medium else c.campaign_medium end,
       first_seen_at = least(c.first_seen_at, excluded.first_seen_at),
       last_seen_at = greatest(c.last_seen_at, excluded.last_seen_at)`,
    [JSON.stringify([...rows.values()])],
  );
}

async function upsertFingerprints(trx: Db, fresh: readonly PreparedEvent[], resolutions: readonly Resolution[], final: Final): Promise<void> {
  const rows = new Map<string, { org_id: string; profile_id: string; fingerprint_hash: string; first_seen_at: string; last_seen_at: string; occurrence_count: number }>();
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
  if (rows.size === 0) return;
  await trx.raw(
    `insert into identity.fingerprints as f (org_id, profile_id, fingerprint_hash, first_seen_at, last_seen_at, occurrence_count)
     select org_id, profile_id, fingerprint_hash, first_seen_at, last_seen_at, occurrence_count
     from jsonb_to_recordset(?::jsonb) as r (org_id uuid, profile_id uuid, fingerprint_hash text,
       first_seen_at timestamptz, last_seen_at timestamptz, occurrence_count bigint)
     order by org_id, profile_id, fingerprint_hash
     on conflict (org_id, profile_id, fingerprint_hash) do update set
       first_seen_at = least(f.first_seen_at, excluded.first_seen_at),
       last_seen_at = greatest(f.last_seen_at, excluded.last_seen_at),
       occurrence_count = f.occurrence_count + excluded.occurrence_count`,
    [JSON.stringify([...rows.values()])],
  );
  const byOrg = new Map<string, string[]>();
  for (const r of rows.values()) byOrg.set(r.org_id, [...(byOrg.get(r.org_id) ?? []), r.profile_id]);
  for (const [orgId, ids] of byOrg) await updateStability(trx, orgId, ids);
}

async function updateProfiles(trx: Db, deltas: ReadonlyMap<string, ProfileDelta>): Promise<void> {
  if (deltas.size === 0) return;
  const rows = [...deltas].map(([id, d]) => ({
    id,
    events: d.events,
    sessions: d.sessions,
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
  // Touches compare by event time: a late event older than the first touch becomes the first touch.
  await trx.raw(
    `update identity.profiles p set
       event_count = p.event_count + d.events,
       session_count = p.session_count + d.sessions,
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
     from jsonb_to_recordset(?::jsonb) as d (id uuid, events bigint, sessions integer, first_seen_at timestamptz,
       last_seen_at timestamptz, first_touch jsonb, last_touch jsonb, traits jsonb, user_id text,
       engagement_points double precision, engagement_at timestamptz, half_life_days double precision)
     where p.id = d.id`,
    [JSON.stringify(rows)],
  );
}

async function conversionCandidates(
  trx: Db,
  fresh: readonly PreparedEvent[],
  resolutions: readonly Resolution[],
  final: Final,
  options: BatchOptions,
): Promise<OutboxMessage[]> {
  const names = new Map<string, ReadonlySet<string> | null>();
  const qualifying: Array<{ e: PreparedEvent; profileId: string }> = [];
  for (const [i, e] of fresh.entries()) {
    if (!names.has(e.orgId)) names.set(e.orgId, (await options.conversionNames?.(e.orgId)) ?? null);
    if (qualifiesAsConversion(e.eventName, names.get(e.orgId))) qualifying.push({ e, profileId: final(e, resolutions[i]!) });
  }
  if (qualifying.length === 0) return [];
  const contact = new Map<string, { email: string | null; phone: string | null }>();
  const needed = qualifying.filter(({ e }) => e.identity.email === null || e.identity.phone === null);
  if (needed.length > 0) {
    // The profile's most recently seen email and phone, when the event carries none.
    const { rows } = (await trx.raw(
      `select distinct on (s.profile_id, s.signal_type) s.profile_id, s.signal_type, s.signal_value
       from unnest(?::uuid[], ?::uuid[]) as k (org_id, profile_id)
       join identity.identity_signals s on s.org_id = k.org_id and s.profile_id = k.profile_id
       where s.signal_type in ('email', 'phone')
       order by s.profile_id, s.signal_type, s.last_seen_at desc`,
      [needed.map((q) => q.e.orgId), needed.map((q) => q.profileId)],
    )) as { rows: Array<{ profile_id: string; signal_type: 'email' | 'phone'; signal_value: string }> };
    for (const r of rows) {
      const c = contact.get(r.profile_id) ?? { email: null, phone: null };
      c[r.signal_type] = r.signal_value;
      contact.set(r.profile_id, c);
    }
  }
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
