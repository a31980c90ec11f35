import { qualifiesAsConversion, type RawEventEnvelope, type ResolvedEvent } from '@svc/contracts';
import {
  SIGNAL_CONFIDENCE,
  combineEngagement,
  eventPoints,
  normaliseEmail,
  normalisePhone,
  profileChange,
  resolvedEventOf,
  resolvedEventsRef,
  scoringTime,
  signalKey,
  signalLockKey,
  signalOfOrg,
  signalsOf,
  type BatchLookups,
  type BatchState,
  type ClickIdUpsert,
  type CompiledEngagementRules,
  type Contacts,
  type Effects,
  type EventRow,
  type FingerprintUpsert,
  type NewProfileRow,
  type ProfileRow,
  type ProfileUpdate,
  type SessionRow,
  type SignalCounts,
  type SignalRow,
  type SignalUpsert,
  type Touch,
  type EngagementState,
  type CompiledIdentityRules,
  type IngestionWarning,
  type KeptApartPair,
  type OutboxMessage,
  type Signal,
} from '@svc/identity';
import { earlierTouch, laterTouch } from './context';
import { conversionCandidate } from './conversions';
import { prepareEvent, type PreparedEvent } from './prepare';
import { IdentityGraph, type PlannedMerge, type ProfileNode, type Resolution } from './resolve';

/**
 * The batch's planning: pure functions from the events and what the database
 * holds of them to the rows to write. No I/O; process-batch.ts runs the steps
 * and the identity library's batch store (@svc/identity) holds every statement.
 */

const orgKey = (orgId: string, id: string) => `${orgId}\u0000${id}`;

/** The batch's distinct events (first of each organisation's messageId), prepared; and how many repeats it carried. */
export function distinctEvents(envelopes: readonly RawEventEnvelope[], rulesOf: (orgId: string) => CompiledIdentityRules): { events: PreparedEvent[]; repeats: number } {
  const events: PreparedEvent[] = [];
  const seen = new Set<string>();
  for (const envelope of envelopes) {
    const e = prepareEvent(envelope, rulesOf(envelope.orgId));
    const key = orgKey(e.orgId, e.messageId);
    if (seen.has(key)) continue;
    seen.add(key);
    events.push(e);
  }
  return { events, repeats: envelopes.length - events.length };
}

/** The signals an event makes us lock and read: its own, and an alias's previousId as either kind. */
export function lookupSignals(e: Pick<PreparedEvent, 'identity'>): Signal[] {
  const out = signalsOf(e.identity);
  if (e.identity.previousId !== null) {
    out.push({ type: 'user_id', value: e.identity.previousId }, { type: 'anonymous_id', value: e.identity.previousId });
  }
  return out;
}

/** The advisory lock keys of every identity the batch touches, distinct and in one global order (no deadlocks between batches). */
export function identityLockKeys(events: ReadonlyArray<Pick<PreparedEvent, 'orgId' | 'identity'>>): bigint[] {
  const keys = [...new Set(events.flatMap((e) => lookupSignals(e).map((s) => signalLockKey(e.orgId, s.type, s.value))))];
  return keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** What a batch's read statement looks up for these events: their signals, their ids, their organisations. */
export function batchLookups(events: ReadonlyArray<Pick<PreparedEvent, 'orgId' | 'eventId' | 'identity'>>): BatchLookups {
  return {
    signals: events.flatMap((e) => lookupSignals(e).map((s) => ({ orgId: e.orgId, ...s }))),
    eventIds: events.map((e) => e.eventId),
    orgIds: [...new Set(events.map((e) => e.orgId))],
  };
}

/** The events not stored already: a redelivery or a retry changes nothing of theirs. */
export function freshEvents(events: readonly PreparedEvent[], state: Pick<BatchState, 'stored'>): PreparedEvent[] {
  return events.filter((e) => !state.stored.has(e.eventId));
}

/**
 * The identity graph of each organisation of the fresh events, from the
 * signals and profiles read under lock, under the organisation's identity
 * rules (with the profiles' stored signal counts where they set limits).
 */
export function buildGraphs(
  fresh: ReadonlyArray<Pick<PreparedEvent, 'orgId' | 'identity'>>,
  signals: readonly SignalRow[],
  profiles: Iterable<ProfileRow>,
  rulesOf: (orgId: string) => CompiledIdentityRules,
  counts: SignalCounts,
  keptApart: readonly KeptApartPair[] = [],
): Map<string, IdentityGraph> {
  // Only the signals of fresh events (the state also holds those of events stored already).
  const freshSignals = new Set(fresh.flatMap((e) => lookupSignals(e).map((s) => orgKey(e.orgId, signalKey(s.type, s.value)))));
  const signalMaps = new Map<string, Map<string, string>>();
  const nodeMaps = new Map<string, Map<string, ProfileNode>>();
  for (const e of fresh) {
    if (signalMaps.has(e.orgId)) continue;
    signalMaps.set(e.orgId, new Map());
    nodeMaps.set(e.orgId, new Map());
  }
  for (const s of signals) {
    const key = signalKey(s.signal_type, s.signal_value);
    if (freshSignals.has(orgKey(s.org_id, key))) signalMaps.get(s.org_id)?.set(key, s.profile_id);
  }
  for (const p of profiles) {
    nodeMaps.get(p.org_id)?.set(p.id, { id: p.id, canonicalId: p.canonical_id, userId: p.user_id, isNew: false, mergedInto: p.merged_into });
  }
  const apart = new Map<string, KeptApartPair[]>();
  for (const pair of keptApart) apart.set(pair.orgId, [...(apart.get(pair.orgId) ?? []), pair]);
  const graphs = new Map<string, IdentityGraph>();
  for (const [orgId, signalMap] of signalMaps) {
    graphs.set(orgId, new IdentityGraph(orgId, signalMap, nodeMaps.get(orgId)!, rulesOf(orgId), counts, apart.get(orgId)));
  }
  return graphs;
}

function graphOf(graphs: ReadonlyMap<string, IdentityGraph>, orgId: string): IdentityGraph {
  const g = graphs.get(orgId);
  if (!g) throw new Error(`no identity graph loaded for organisation ${orgId}`);
  return g;
}

/** What the batch adds to one surviving profile. */
export interface ProfileDelta {
  orgId: string;
  events: number;
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

/** The batch planned: what to create, merge and write, decided before any of it is written. */
export interface BatchPlan {
  /** The profiles made by the batch and not merged away in it, with their `created` changes. */
  created: NewProfileRow[];
  createdChanges: OutboxMessage[];
  /** Merges of stored profiles (a profile made in the batch merged away is only a redirect), the target its survivor. */
  merges: Array<PlannedMerge & { orgId: string }>;
  effects: Effects;
  /** signalOfOrg of each signal this batch made: each must be inserted by it. */
  madeSignals: Set<string>;
  /** The profile each fresh event ends up on, in batch order. */
  profileOf: string[];
  deltas: Map<string, ProfileDelta>;
}

/**
 * Resolves the fresh events in partition order on their graphs and plans
 * every write: new profiles, merges, and the coalesced rows of each table.
 */
export function planBatch(
  fresh: readonly PreparedEvent[],
  graphs: ReadonlyMap<string, IdentityGraph>,
  engagementRules: ReadonlyMap<string, CompiledEngagementRules>,
  now: () => string = () => new Date().toISOString(),
): BatchPlan {
  const resolutions = fresh.map((e) => graphOf(graphs, e.orgId).resolveEvent(e.identity, e.messageId));
  const profileOf = fresh.map((e, i) => graphOf(graphs, e.orgId).find(resolutions[i]!.profileId));
  const deltas = profileDeltas(graphs, fresh, profileOf, engagementRules);

  const created: NewProfileRow[] = [];
  const createdChanges: OutboxMessage[] = [];
  const merges: BatchPlan['merges'] = [];
  const madeSignals = new Set<string>();
  for (const g of graphs.values()) {
    for (const n of g.created) {
      if (n.mergedInto !== null) continue;
      const d = deltas.get(n.id);
      // A profile made only to be merged into in the same batch may have no event of its own.
      const at = d?.firstSeen ?? now();
      created.push({ id: n.id, org_id: g.orgId, canonical_id: n.canonicalId, first_seen_at: at, last_seen_at: d?.lastSeen ?? at });
      createdChanges.push(profileChange(g.orgId, n.id, 'created'));
    }
    const madeHere = new Set(g.created.map((n) => n.id));
    for (const m of g.merges) {
      if (madeHere.has(m.sourceId)) continue;
      merges.push({ ...m, orgId: g.orgId, targetId: g.find(m.targetId) });
    }
    for (const s of g.attached.values()) madeSignals.add(signalOfOrg(g.orgId, s.type, s.value));
  }

  return {
    created,
    createdChanges,
    merges,
    madeSignals,
    profileOf,
    deltas,
    effects: {
      events: fresh.map((e, i) => eventRow(e, profileOf[i]!, resolutions[i]!)),
      signals: signalRows(graphs, fresh, profileOf),
      sessions: sessionRows(fresh, profileOf),
      clicks: clickIdRows(fresh, profileOf),
      fingerprints: fingerprintRows(fresh, profileOf),
      profiles: [...deltas].map(([id, d]) => profileUpdate(id, d)),
    },
  };
}

function profileDeltas(
  graphs: ReadonlyMap<string, IdentityGraph>,
  fresh: readonly PreparedEvent[],
  profileOf: readonly string[],
  engagementRules: ReadonlyMap<string, CompiledEngagementRules>,
): Map<string, ProfileDelta> {
  const deltas = new Map<string, ProfileDelta>();
  fresh.forEach((e, i) => {
    const id = profileOf[i]!;
    const rules = engagementRules.get(e.orgId);
    let d = deltas.get(id);
    if (!d) {
      d = {
        orgId: e.orgId, events: 0, firstSeen: e.timestamp, lastSeen: e.timestamp, firstTouch: null, lastTouch: null, traits: {}, userId: null,
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

function eventRow(e: PreparedEvent, profileId: string, r: Resolution): EventRow {
  return {
    id: e.eventId,
    org_id: e.orgId,
    message_id: e.messageId,
    profile_id: profileId,
    event_name: e.eventName,
    event_timestamp: e.timestamp,
    received_at: e.receivedAt,
    properties: e.properties,
    context: e.context,
    traits: e.traits,
    anonymous_id: e.identity.anonymousId,
    user_id: e.identity.userId,
    previous_id: e.previousId,
    resolution_method: r.method,
  };
}

/** first/last seen and a count, widened by one more sighting at `at`. */
function sighted(row: { first_seen_at: string; last_seen_at: string; occurrence_count: number }, at: string): void {
  row.occurrence_count++;
  if (at < row.first_seen_at) row.first_seen_at = at;
  if (at > row.last_seen_at) row.last_seen_at = at;
}

function signalRows(graphs: ReadonlyMap<string, IdentityGraph>, fresh: readonly PreparedEvent[], profileOf: readonly string[]): SignalUpsert[] {
  const rows = new Map<string, SignalUpsert>();
  fresh.forEach((e, i) => {
    const g = graphOf(graphs, e.orgId);
    const profileId = profileOf[i]!;
    const carried = signalsOf(e.identity);
    if (e.identity.previousId !== null) carried.push({ type: 'user_id', value: e.identity.previousId });
    for (const s of carried) {
      // Counted on the profile that owns it; a signal left with another profile (shared device) is not.
      if (g.owner(s.type, s.value) !== profileId) continue;
      const k = orgKey(e.orgId, signalKey(s.type, s.value));
      const row = rows.get(k);
      if (row) sighted(row, e.timestamp);
      else rows.set(k, { org_id: e.orgId, signal_type: s.type, signal_value: s.value, profile_id: profileId, confidence: SIGNAL_CONFIDENCE[s.type], first_seen_at: e.timestamp, last_seen_at: e.timestamp, occurrence_count: 1 });
    }
  });
  return [...rows.values()];
}

function sessionRows(fresh: readonly PreparedEvent[], profileOf: readonly string[]): SessionRow[] {
  const rows = new Map<string, SessionRow>();
  fresh.forEach((e, i) => {
    if (e.sessionId === null) return;
    const profileId = profileOf[i]!;
    rows.set(`${profileId}\u0000${e.sessionId}`, { org_id: e.orgId, profile_id: profileId, session_id: e.sessionId });
  });
  return [...rows.values()];
}

function clickIdRows(fresh: readonly PreparedEvent[], profileOf: readonly string[]): ClickIdUpsert[] {
  const rows = new Map<string, ClickIdUpsert>();
  fresh.forEach((e, i) => {
    for (const c of e.clickIds) {
      const k = `${e.orgId}\u0000${c.clickType}\u0000${c.clickId}`;
      const row = rows.get(k);
      if (!row) {
        rows.set(k, { org_id: e.orgId, click_type: c.clickType, click_id: c.clickId, profile_id: profileOf[i]!, campaign_source: c.campaignSource, campaign_medium: c.campaignMedium, first_seen_at: e.timestamp, last_seen_at: e.timestamp });
      } else {
        // The campaign of a click ID is the one of its first sighting.
        if (e.timestamp < row.first_seen_at) Object.assign(row, { first_seen_at: e.timestamp, campaign_source: c.campaignSource, campaign_medium: c.campaignMedium });
        if (e.timestamp > row.last_seen_at) row.last_seen_at = e.timestamp;
      }
    }
  });
  return [...rows.values()];
}

function fingerprintRows(fresh: readonly PreparedEvent[], profileOf: readonly string[]): FingerprintUpsert[] {
  const rows = new Map<string, FingerprintUpsert>();
  fresh.forEach((e, i) => {
    if (e.fingerprint === null) return;
    const profileId = profileOf[i]!;
    const k = `${profileId}\u0000${e.fingerprint}`;
    const row = rows.get(k);
    if (row) sighted(row, e.timestamp);
    else rows.set(k, { org_id: e.orgId, profile_id: profileId, fingerprint_hash: e.fingerprint, first_seen_at: e.timestamp, last_seen_at: e.timestamp, occurrence_count: 1 });
  });
  return [...rows.values()];
}

function profileUpdate(id: string, d: ProfileDelta): ProfileUpdate {
  return {
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
  };
}

/** The profiles whose fingerprint stability the batch changed: one (org, profile) per counted profile. */
export function profilesToRescore(fingerprints: readonly FingerprintUpsert[]): Array<{ orgId: string; profileId: string }> {
  const seen = new Map<string, { orgId: string; profileId: string }>();
  for (const f of fingerprints) seen.set(orgKey(f.org_id, f.profile_id), { orgId: f.org_id, profileId: f.profile_id });
  return [...seen.values()];
}

export type Qualifying = Array<{ e: PreparedEvent; profileId: string }>;

/** The fresh events that qualify as conversions for their organisation, with the profile each ends up on. */
export function qualifyingConversions(fresh: readonly PreparedEvent[], profileOf: readonly string[], names: ReadonlyMap<string, ReadonlySet<string> | null>): Qualifying {
  const qualifying: Qualifying = [];
  fresh.forEach((e, i) => {
    if (qualifiesAsConversion(e.eventName, names.get(e.orgId) ?? null)) qualifying.push({ e, profileId: profileOf[i]! });
  });
  return qualifying;
}

/** The conversions whose event lacks an email or a phone: their profiles' known contact details are read. */
export function contactsNeeded(qualifying: Qualifying): Array<{ orgId: string; profileId: string }> {
  return qualifying.filter(({ e }) => e.identity.email === null || e.identity.phone === null).map(({ e, profileId }) => ({ orgId: e.orgId, profileId }));
}

/** The events.resolved message of each event the batch stores (the relay sends it from memory once committed). */
export function resolvedEvents(effects: Pick<Effects, 'events'>): ResolvedEvent[] {
  return effects.events.map(resolvedEventOf);
}

/** Events per (organisation, month of receipt): the usage the batch adds. */
export function usageOf(fresh: readonly PreparedEvent[]): Array<{ orgId: string; at: Date; count: number }> {
  const usage = new Map<string, { orgId: string; at: Date; count: number }>();
  for (const e of fresh) {
    const k = `${e.orgId} ${e.receivedAt.slice(0, 7)}`;
    const u = usage.get(k) ?? { orgId: e.orgId, at: new Date(e.receivedAt), count: 0 };
    u.count++;
    usage.set(k, u);
  }
  return [...usage.values()];
}

/**
 * The batch's outputs after its writes: an `updated` change for every
 * profile it changed and did not create, one row naming every event (its
 * events.resolved messages, in order), and a conversion candidate per qualifying event (with the event's
 * contact details, else the profile's).
 */
export function outputMessages(
  plan: BatchPlan,
  fresh: readonly PreparedEvent[],
  qualifying: Qualifying,
  contacts: Contacts,
  rulesOf: (orgId: string) => Pick<CompiledIdentityRules, 'phoneDefault'>,
  traceparents?: ReadonlyMap<string, string>,
): OutboxMessage[] {
  const outbox: OutboxMessage[] = [];
  const createdIds = new Set(plan.created.map((p) => p.id));
  for (const [id, d] of plan.deltas) if (!createdIds.has(id)) outbox.push(profileChange(d.orgId, id, 'updated'));
  outbox.push(resolvedEventsRef(fresh.map((e) => e.eventId)));
  // The batch's own messages carry its first request's trace; a conversion candidate its event's.
  const batchTrace = traceparents?.get(fresh[0]?.requestId ?? '');
  if (batchTrace !== undefined) for (const m of outbox) m.traceparent = batchTrace;
  for (const { e, profileId } of qualifying) {
    const known = contacts.get(profileId);
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
      phone: e.identity.phone ?? normalisePhone(e.properties.phone, rulesOf(e.orgId).phoneDefault) ?? known?.phone ?? null,
      clientIp: e.clientIp,
    });
    const traceparent = traceparents?.get(e.requestId);
    outbox.push({ topic: 'conversionsCandidates', key: profileId, payload, eventIds: null, ...(traceparent === undefined ? {} : { traceparent }) });
  }
  return outbox;
}

/** The fresh events' ingestion warnings, each with its organisation and messageId, then what the rules kept the graphs from doing. */
export function warningsOf(fresh: readonly PreparedEvent[], graphs: ReadonlyMap<string, IdentityGraph>): IngestionWarning[] {
  return [
    ...fresh.flatMap((e) => e.warnings.map((w) => ({ orgId: e.orgId, messageId: e.messageId, ...w }))),
    ...[...graphs.values()].flatMap((g) => g.warnings.map((w) => ({ orgId: g.orgId, ...w }))),
  ];
}

/** Whether some organisation's rules cap identifiers per profile (the graphs then need the profiles' signal counts). */
export function limitsApply(fresh: readonly PreparedEvent[], rulesOf: (orgId: string) => CompiledIdentityRules): boolean {
  return [...new Set(fresh.map((e) => e.orgId))].some((orgId) => Object.keys(rulesOf(orgId).limits).length > 0);
}
