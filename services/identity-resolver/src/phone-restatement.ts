import {
  DEFAULT_PHONE_COUNTRY_CODE,
  SIGNAL_CONFIDENCE,
  claimRestatement,
  dropPhones,
  eventIdFor,
  finishRestatement,
  inTransactionWithRetry,
  loadSurvivors,
  lockIdentities,
  mergePlannedProfiles,
  normalisePhone,
  readBatchState,
  readHeldAndWrittenPhones,
  readIdentityRules,
  readPhoneSightings,
  readSignalCounts,
  recordWarnings,
  signalKey,
  signalLockKey,
  signalOfOrg,
  writeEffects,
  type CompiledIdentityRules,
  type EventIdentity,
  type HeldPhone,
  type IngestionWarning,
  type MergeReason,
  type PhoneSighting,
  type RestatementChunk,
  type Signal,
  type SignalUpsert,
  type WrittenPhone,
} from '@svc/identity';
import type { Db, Logger } from '@svc/runtime';
import type { ResolverMetrics } from './metrics';
import { batchLookups, buildGraphs, identityLockKeys } from './plan';
import { startPolling, type Polling } from './polling';
import type { IdentityGraph } from './resolve';

/**
 * Carrying out phone restatements (libs/identity phone-restatement.ts queues
 * them and says why): profile by profile, the phone numbers held are made
 * what the profile's stored events give under the organisation's rules now.
 * Step 1 drops the numbers no event gives any more. Step 2 runs each event
 * identity whose number its profile does not hold through the ordinary
 * resolution (resolve.ts), as that event would be resolved today with its
 * userId, anonymousId and the number: the number is attached, or the
 * profiles sharing it merge where the rules allow (journaled with the event
 * and this actor, on profiles.changes), or it stays with the profile holding
 * it (two identified people, a limit, an unmerge's rule; those are warnings).
 * Nothing else of the events is restated: they are stored already, counted
 * and published.
 */

export interface RestatementOptions {
  /** PHONE_DEFAULT_COUNTRY_CODE, as the batch path's. */
  defaultPhoneCountryCode?: string;
  /** Profiles per transaction. */
  chunkSize?: number;
}

export interface RestatementOutcome {
  orgId: string;
  step: 1 | 2;
  profiles: number;
  /** Numbers dropped (step 1); signals attached and merges made (step 2). */
  dropped: number;
  attached: number;
  merges: MergeReason[];
  warnings: IngestionWarning[];
}

/** Who made a restatement's merges, in the merge journal. */
export const RESTATEMENT_ACTOR = 'phone-restatement';

/** How often the resolver looks for queued restatements. */
export const RESTATEMENT_POLL_INTERVAL_MS = 5_000;

const DEFAULT_CHUNK = 50;

/** A raw phone as the organisation reads it now (null: unreadable or blocked: no signal). */
function phoneReader(rules: CompiledIdentityRules): (raw: unknown) => string | null {
  return (raw) => {
    const phone = normalisePhone(raw, rules.phoneDefault);
    return phone !== null && !rules.blocked.has(signalKey('phone', phone)) ? phone : null;
  };
}

/** Step 1: the numbers held that none of their profile's events gives under today's reading. */
export function stalePhones(held: readonly HeldPhone[], written: readonly WrittenPhone[], read: (raw: unknown) => string | null): HeldPhone[] {
  const given = new Set(written.flatMap((w) => {
    const phone = read(w.raw);
    return phone === null ? [] : [`${w.profile_id}\u0000${phone}`];
  }));
  return held.filter((h) => !given.has(`${h.profile_id}\u0000${h.value}`));
}

/** Restates one claimed chunk in the caller's transaction, and removes it from the queue. */
export async function restateChunk(trx: Db, chunk: RestatementChunk, options: RestatementOptions = {}): Promise<RestatementOutcome> {
  const { orgId } = chunk;
  const rules = (await readIdentityRules(trx, [orgId], options.defaultPhoneCountryCode ?? DEFAULT_PHONE_COUNTRY_CODE)).rules(orgId);
  const read = phoneReader(rules);
  const outcome: RestatementOutcome = { orgId, step: chunk.step, profiles: chunk.profileIds.length, dropped: 0, attached: 0, merges: [], warnings: [] };
  if (chunk.step === 1) {
    const { held, written } = await readHeldAndWrittenPhones(trx, orgId, chunk.profileIds);
    const stale = stalePhones(held, written, read);
    await lockIdentities(trx, [...new Set(stale.map((s) => signalLockKey(orgId, 'phone', s.value)))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    await dropPhones(trx, orgId, stale);
    outcome.dropped = stale.length;
  } else {
    Object.assign(outcome, await attachPhones(trx, orgId, rules, chunk.profileIds, read));
  }
  await finishRestatement(trx, chunk);
  return outcome;
}

/** One event identity of the chunk with its number read today, and the sighting it stands for. */
interface Sighted {
  orgId: string;
  eventId: string;
  messageId: string;
  identity: EventIdentity;
  sighting: PhoneSighting;
}

/** Step 2 for the chunk's profiles (see the module's comment). */
async function attachPhones(trx: Db, orgId: string, rules: CompiledIdentityRules, profileIds: readonly string[], read: (raw: unknown) => string | null) {
  const sighted: Sighted[] = (await readPhoneSightings(trx, orgId, profileIds)).flatMap((s) => {
    const phone = read(s.raw);
    if (phone === null) return [];
    const identity: EventIdentity = { anonymousId: s.anonymous_id, userId: s.user_id, email: null, phone, previousId: null };
    return [{ orgId, eventId: eventIdFor(orgId, s.message_id), messageId: s.message_id, identity, sighting: s }];
  });
  if (sighted.length === 0) return {};
  await lockIdentities(trx, identityLockKeys(sighted));
  const state = await readBatchState(trx, batchLookups(sighted));
  const profiles = await loadSurvivors(trx, state.profiles);
  const counts = Object.keys(rules.limits).length > 0 ? await readSignalCounts(trx, [...profiles.keys()]) : new Map();
  const graph = buildGraphs(sighted, state.signals, profiles.values(), () => rules, counts, state.keptApart).get(orgId)!;

  // The sightings whose number their profile does not hold: resolved as their events would be today.
  const resolved = sighted.filter((s) => {
    const own = ownerOf(graph, s.identity);
    // Stored events' identities are known; one that is not (a limit kept it off) is left as it is, not given a profile.
    if (own === undefined || graph.owner('phone', s.identity.phone) === own) return false;
    graph.resolveEvent(s.identity, s.messageId);
    return true;
  });
  if (graph.created.length > 0) throw new Error('phone restatement: the resolution made a profile for a stored event');

  const merges = graph.merges.map((m) => ({ ...m, orgId, targetId: graph.find(m.targetId) }));
  await mergePlannedProfiles(trx, merges, RESTATEMENT_ACTOR, true);
  const signals = sightedSignals(graph, resolved);
  const made = new Set(signals.filter((r) => graph.attached.has(signalKey(r.signal_type, r.signal_value))).map((r) => signalOfOrg(orgId, r.signal_type, r.signal_value)));
  await writeEffects(trx, { events: [], signals, sessions: [], clicks: [], fingerprints: [], profiles: [] }, made);
  const warnings = graph.warnings.map((w) => ({ orgId, ...w }));
  await recordWarnings(trx, warnings);
  return { attached: made.size, merges: merges.map((m) => m.reason), warnings };
}

/** The profile a stored event identity is on: its userId's, else its anonymousId's. */
const ownerOf = (graph: IdentityGraph, identity: EventIdentity): string | undefined =>
  identity.userId !== null ? graph.owner('user_id', identity.userId) : graph.owner('anonymous_id', identity.anonymousId);

/**
 * The signal rows the resolved sightings add: each number on the profile
 * that holds it now, counted over the sightings that ended there (their
 * events were never counted for it), and any other identifier the resolution
 * attached, as the batch path counts an event's signals on the profile that
 * owns them.
 */
function sightedSignals(graph: IdentityGraph, resolved: readonly Sighted[]): SignalUpsert[] {
  const rows = new Map<string, SignalUpsert>();
  for (const { identity, sighting } of resolved) {
    const on = ownerOf(graph, identity);
    const carried: Signal[] = [{ type: 'phone', value: identity.phone! }, { type: 'anonymous_id', value: identity.anonymousId }];
    if (identity.userId !== null) carried.push({ type: 'user_id', value: identity.userId });
    for (const { type, value } of carried) {
      const key = signalKey(type, value);
      if ((type !== 'phone' && !graph.attached.has(key)) || graph.owner(type, value) !== on || on === undefined) continue;
      const row = rows.get(key);
      if (!row) {
        rows.set(key, {
          org_id: graph.orgId, signal_type: type, signal_value: value, profile_id: on, confidence: SIGNAL_CONFIDENCE[type],
          first_seen_at: sighting.first_seen_at, last_seen_at: sighting.last_seen_at, occurrence_count: sighting.events,
        });
      } else {
        row.occurrence_count += sighting.events;
        if (sighting.first_seen_at < row.first_seen_at) row.first_seen_at = sighting.first_seen_at;
        if (sighting.last_seen_at > row.last_seen_at) row.last_seen_at = sighting.last_seen_at;
      }
    }
  }
  return [...rows.values()];
}

/**
 * Carries out queued restatements, a chunk of profiles per transaction
 * (retried on conflicts): at start, then every `intervalMs`. Several
 * resolvers share the queue (claims skip locked rows).
 */
export function startRestatingPhones(o: {
  db: Db;
  logger: Logger;
  options?: RestatementOptions;
  metrics?: Pick<ResolverMetrics, 'phoneRestatements' | 'merges' | 'warnings'>;
  intervalMs?: number;
  onDone?: () => void;
}): Polling {
  const one = async (): Promise<boolean> => {
    const outcome = await inTransactionWithRetry(o.db, async (trx) => {
      const chunk = await claimRestatement(trx, o.options?.chunkSize ?? DEFAULT_CHUNK);
      return chunk && (await restateChunk(trx, chunk, o.options));
    });
    if (!outcome) return false;
    o.metrics?.phoneRestatements.inc({ step: String(outcome.step) }, outcome.profiles);
    for (const reason of outcome.merges) o.metrics?.merges.inc({ reason });
    for (const w of outcome.warnings) o.metrics?.warnings.inc({ kind: w.kind });
    const { orgId, step, profiles, dropped, attached } = outcome;
    o.logger.info({ orgId, step, profiles, dropped, attached, merges: outcome.merges.length, warnings: outcome.warnings.length }, 'phone signals restated');
    if (outcome.merges.length > 0) o.onDone?.();
    return true;
  };
  return startPolling({ what: 'phone restatement', one, logger: o.logger, intervalMs: o.intervalMs ?? RESTATEMENT_POLL_INTERVAL_MS });
}
