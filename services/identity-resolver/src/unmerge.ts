import { STORED_EVENT_NAMES, type EventType, type RawEventEnvelope } from '@svc/contracts';
import {
  DEFAULT_PHONE_COUNTRY_CODE,
  claimPendingUnmerge,
  classifyFailure,
  compileStoredEngagementRules,
  finishUnmerge,
  holdOffReplay,
  inTransactionWithRetry,
  insertProfiles,
  journalOf,
  keepApart,
  lockIdentities,
  lockMergedCluster,
  mergeProfiles,
  profileIdsFor,
  readEngagementRules,
  readIdentityRules,
  readKeptApart,
  redirect,
  rescoreAndReadContacts,
  resolveProfileId,
  settleJournal,
  survivorsOf,
  takeApart,
  writeEffects,
  type MergeJournalRow,
  type MergedCluster,
  type PendingUnmerge,
  type Signal,
  type StoredEventRow,
} from '@svc/identity';
import type { Db, Logger } from '@svc/runtime';
import type { ResolverMetrics } from './metrics';
import { buildGraphs, distinctEvents, identityLockKeys, planBatch, profilesToRescore } from './plan';
import { startPolling, type Polling } from './polling';
import type { PlannedMerge } from './resolve';

/**
 * Carrying out an unmerge (libs/identity unmerge.ts records the request):
 * the live profile the journal entry made is taken apart (its events read
 * and deleted with everything derived from them, its profile rows emptied)
 * and its events are resolved again, in the order they arrived, as one
 * batch of the ordinary planning (plan.ts, resolve.ts), with a kept-apart
 * rule between the entry's two profiles: the merge is refused, so both come
 * back as the events make them had it never happened: events, identities,
 * click IDs, sessions, fingerprints, first and last touch by event time,
 * engagement, traits. Profile ids are derived from the identity that made
 * them, so every profile comes back under its own id. Admin merges of the
 * profile are decisions, not events: applied again afterwards, except one
 * that would join the two sides. Nothing is counted as usage and nothing
 * goes to events.resolved or conversions.candidates (conversions sent stay
 * sent); profiles.changes says what became of each profile row.
 */

export interface UnmergeOptions {
  /** PHONE_DEFAULT_COUNTRY_CODE, as the batch path's. */
  defaultPhoneCountryCode?: string;
}

export type UnmergeOutcome = { status: 'done'; profileIds: [string, string] } | { status: 'failed'; reason: string };

const TYPE_OF_STORED_NAME = new Map<string, EventType>(Object.entries(STORED_EVENT_NAMES).map(([type, name]) => [name, type as EventType]));

/** A stored event as the raw envelope it was stored from, as far as resolving it needs. */
export function envelopeOf(orgId: string, row: StoredEventRow): RawEventEnvelope {
  const type = TYPE_OF_STORED_NAME.get(row.event_name) ?? 'track';
  const clientIp = typeof row.context.ip_address === 'string' ? row.context.ip_address : '';
  return {
    v: 1,
    orgId,
    receivedAt: row.received_at,
    requestId: '',
    clientIp,
    event: {
      type,
      messageId: row.message_id,
      anonymousId: row.anonymous_id,
      timestamp: row.event_timestamp,
      ...(type === 'track' ? { event: row.event_name } : {}),
      ...(row.user_id === null ? {} : { userId: row.user_id }),
      ...(row.previous_id ? { previousId: row.previous_id } : {}),
      properties: row.properties,
      context: row.context,
      ...(row.traits === null ? {} : { traits: row.traits }),
    },
  };
}

/** The unmerge cannot be carried out on this data (recorded as the request's failure). */
class UnmergeDataError extends Error {}

/** The identifier the profile was made from (its id is derived from it: profileIdsFor), among the signals given. */
function seedOf(orgId: string, profileId: string, signals: readonly Signal[]): Signal | undefined {
  return signals.find((s) => (s.type === 'user_id' || s.type === 'anonymous_id') && profileIdsFor(orgId, s.type, s.value).id === profileId);
}

/** Carries out one claimed request in the caller's transaction, and records its outcome there. */
export async function carryOutUnmerge(trx: Db, request: PendingUnmerge, options: UnmergeOptions = {}): Promise<UnmergeOutcome> {
  const { orgId } = request;
  await holdOffReplay(trx);
  const cluster = await lockMergedCluster(trx, orgId, request.mergeId);
  if ('failure' in cluster) {
    await finishUnmerge(trx, request.id, { failure: cluster.failure });
    return { status: 'failed', reason: cluster.failure };
  }
  const entry = cluster.entry;
  const journal = await journalOf(trx, orgId, cluster.members);
  const stored = await takeApart(trx, orgId, cluster);
  // The identifiers that made the two profiles: no profile may hold both again.
  const [sourceSeed, targetSeed] = [seedOf(orgId, entry.source_profile_id, stored.signals), seedOf(orgId, entry.target_profile_id, stored.signals)];
  if (!sourceSeed || !targetSeed) throw new UnmergeDataError('the merged profile no longer holds the identifier that made one of the two');
  await keepApart(trx, orgId, sourceSeed, targetSeed, request.id);

  const resolution = await resolveAgain(trx, orgId, stored.events, cluster, options);
  const undone = new Set([entry.id, ...(await reapplyAdminMerges(trx, orgId, journal, entry))]);
  const rows = new Set([...cluster.members, ...resolution.live]);
  const after = await survivorsOf(trx, orgId, [...rows]);
  const journalChanges = compareJournal(journal, resolution, rows, after);
  for (const id of journalChanges.undone) undone.add(id);
  await settleJournal(trx, { orgId, unmergeId: request.id, before: cluster, undone: [...undone], made: journalChanges.made, after });

  const profileIds: [string, string] = [after.get(entry.source_profile_id) ?? entry.source_profile_id, after.get(entry.target_profile_id) ?? entry.target_profile_id];
  await finishUnmerge(trx, request.id, { profileIds });
  return { status: 'done', profileIds };
}

interface Resolution {
  /** The profiles the resolution made live (their rows taken over or new). */
  live: Set<string>;
  /** Where a profile id went in the resolution (itself when the graph never saw it). */
  find(id: string): string;
  /** The merges the resolution made, in order. */
  merges: readonly PlannedMerge[];
}

/**
 * The taken-apart events resolved again, in the order they arrived, as one
 * batch of the ordinary planning on an empty graph with the organisation's
 * kept-apart pairs, written by the batch's own statements (the profile
 * inserts taking over the emptied rows); the emptied rows it did not make
 * live point where their identity went.
 */
async function resolveAgain(trx: Db, orgId: string, rows: readonly StoredEventRow[], cluster: MergedCluster, options: UnmergeOptions): Promise<Resolution> {
  const identityRules = await readIdentityRules(trx, [orgId], options.defaultPhoneCountryCode ?? DEFAULT_PHONE_COUNTRY_CODE);
  const { events } = distinctEvents(rows.map((row) => envelopeOf(orgId, row)), identityRules.rules);
  await lockIdentities(trx, identityLockKeys(events));
  const graphs = buildGraphs(events, [], [], identityRules.rules, new Map(), await readKeptApart(trx, orgId));
  const engagement = compileStoredEngagementRules([orgId], await readEngagementRules(trx, [orgId]));
  const plan = planBatch(events, graphs, engagement.rules);
  // Nothing was loaded: every profile is made by the batch, so every merge is one within it.
  if (plan.merges.length > 0) throw new Error('unmerge: a merge of a stored profile planned');
  await insertProfiles(trx, { created: plan.created, createdChanges: [] }, true);
  await writeEffects(trx, plan.effects, plan.madeSignals);
  await rescoreAndReadContacts(trx, profilesToRescore(plan.effects.fingerprints), []);

  const graph = graphs.get(orgId);
  const live = new Set(plan.created.map((p) => p.id));
  const find = (id: string) => graph?.find(id) ?? id;
  const target = find(cluster.entry.target_profile_id);
  const fallback = live.has(target) ? target : plan.created[0]?.id;
  const redirects = cluster.members.flatMap((id) => {
    if (live.has(id)) return [];
    const to = live.has(find(id)) ? find(id) : fallback;
    return to === undefined ? [] : [{ id, survivor: to }];
  });
  await redirect(trx, orgId, redirects);
  return { live, find, merges: graph?.merges ?? [] };
}

/** The cluster's admin merges (decisions, not events) applied again, in order; returns those that would join the entry's two sides, which are undone with it. */
async function reapplyAdminMerges(trx: Db, orgId: string, journal: readonly MergeJournalRow[], entry: MergeJournalRow): Promise<string[]> {
  const undone: string[] = [];
  const live = (id: string) => resolveProfileId(trx, orgId, id);
  for (const admin of journal.filter((m) => m.reason === 'admin' && m.id !== entry.id)) {
    const [s, t] = [await live(admin.source_profile_id), await live(admin.target_profile_id)];
    if (!s || !t || s === t) continue;
    const [a, b] = [await live(entry.source_profile_id), await live(entry.target_profile_id)];
    if ((s === a && t === b) || (s === b && t === a)) {
      undone.push(admin.id);
      continue;
    }
    await mergeProfiles(trx, { orgId, sourceId: s, targetId: t, reason: 'admin', actor: admin.actor, note: admin.note, publish: false, journal: false });
  }
  return undone;
}

/**
 * The journal against the resolution: an entry it did not make again (the
 * same event merging the same profile into the same one, as profiles are
 * now) is undone; a merge it made that the journal lacks is to be recorded
 * (only between profile rows: one made and merged away within the
 * resolution never had a row).
 */
function compareJournal(journal: readonly MergeJournalRow[], resolution: Resolution, rows: ReadonlySet<string>, after: ReadonlyMap<string, string>) {
  const liveOf = (id: string) => after.get(id) ?? after.get(resolution.find(id)) ?? id;
  const key = (source: string, messageId: string | null, target: string) => `${source}\u0000${messageId ?? ''}\u0000${liveOf(target)}`;
  const remade = new Set(resolution.merges.map((m) => key(m.sourceId, m.messageId, m.targetId)));
  const journaled = new Set(journal.map((m) => key(m.source_profile_id, m.message_id, m.target_profile_id)));
  return {
    undone: journal.filter((m) => m.reason !== 'admin' && !remade.has(key(m.source_profile_id, m.message_id, m.target_profile_id))).map((m) => m.id),
    made: resolution.merges
      .filter((m) => rows.has(m.sourceId) && !journaled.has(key(m.sourceId, m.messageId, m.targetId)))
      .map((m) => ({ sourceId: m.sourceId, targetId: rows.has(m.targetId) ? m.targetId : resolution.find(m.targetId), reason: m.reason, signalType: m.signalType, messageId: m.messageId })),
  };
}

/** How often the resolver looks for unmerge requests (the Profiles API records them). */
export const UNMERGE_POLL_INTERVAL_MS = 1_000;

/**
 * Carries out pending unmerge requests, oldest first, each in a transaction
 * of its own (retried on conflicts): at start, then every `intervalMs`. A
 * request that fails on its data is recorded as failed; the database
 * unavailable leaves it pending for the next pass.
 */
export function startUnmerging(o: {
  db: Db;
  logger: Logger;
  options?: UnmergeOptions;
  metrics?: Pick<ResolverMetrics, 'unmerges'>;
  intervalMs?: number;
  onDone?: () => void;
}): Polling {
  const one = async (): Promise<boolean> => {
    let claimed: PendingUnmerge | undefined;
    try {
      const outcome = await inTransactionWithRetry(o.db, async (trx) => {
        claimed = await claimPendingUnmerge(trx);
        return claimed && (await carryOutUnmerge(trx, claimed, o.options));
      });
      if (!outcome || !claimed) return false;
      o.metrics?.unmerges.inc({ outcome: outcome.status });
      if (outcome.status === 'done') o.logger.info({ orgId: claimed.orgId, unmergeId: claimed.id, mergeId: claimed.mergeId, profileIds: outcome.profileIds }, 'merge undone');
      else o.logger.warn({ orgId: claimed.orgId, unmergeId: claimed.id, mergeId: claimed.mergeId, reason: outcome.reason }, 'unmerge failed');
      o.onDone?.();
      return true;
    } catch (err) {
      if (!claimed || classifyFailure(err) !== 'data') throw err;
      const request = claimed;
      o.logger.error({ err, unmergeId: request.id }, 'unmerge failed on its data; recorded as failed');
      const reason = `unmerge failed: ${(err as Error).message.split(' - ').pop() ?? 'unknown error'}`;
      await inTransactionWithRetry(o.db, (trx) => finishUnmerge(trx, request.id, { failure: reason }));
      o.metrics?.unmerges.inc({ outcome: 'failed' });
      return true;
    }
  };
  return startPolling({ what: 'unmerges', one, logger: o.logger, intervalMs: o.intervalMs ?? UNMERGE_POLL_INTERVAL_MS });
}
