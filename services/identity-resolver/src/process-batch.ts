import type { RawEventEnvelope, ResolvedEvent } from '@svc/contracts';
import type { Db } from '@svc/runtime';
import {
  DEFAULT_PHONE_COUNTRY_CODE,
  addUsageAndOutputs,
  compileStoredEngagementRules,
  insertProfiles,
  loadSurvivors,
  lockIdentities,
  mergePlannedProfiles,
  readBatchState,
  readIdentityRules,
  readSignalCounts,
  recordWarnings,
  rescoreAndReadContacts,
  writeEffects,
  type IdentifierHashes,
  type IngestionWarning,
  type MergeReason,
} from '@svc/identity';
import { batchLookups, buildGraphs, contactsNeeded, distinctEvents, freshEvents, identityLockKeys, limitsApply, outputMessages, planBatch, profilesToRescore, qualifyingConversions, resolvedEvents, usageOf, warningsOf } from './plan';
import type { PreparedEvent } from './prepare';
import { withoutSuppressed } from './suppression';

/**
 * One batch, one transaction: lock every identity the batch touches, skip
 * what is already stored, resolve the rest in order, and write every effect
 * (events, profiles, signals, sessions, click IDs, fingerprints, usage, the
 * outbox) set-based. Effects happen only for events whose row is new, so a
 * redelivered batch changes nothing. The steps below alternate between
 * planning (plan.ts, pure) and the identity library's statements (batch-store.ts).
 */

export interface BatchOptions {
  /** How identifiers are hashed, to find an event's in the suppression list (IDENTIFIER_HASH_KEYS). */
  hashes: IdentifierHashes;
  /** Who merges, in merges.actor. */
  actor?: string;
  /** PHONE_DEFAULT_COUNTRY_CODE: how a phone without its country is read where the organisation's identity rules name no region. */
  defaultPhoneCountryCode?: string;
  /**
   * The names that qualify as conversions for the organisation: the union
   * over its active connectors (empty when it has none, so nothing goes on
   * conversions.candidates), or null for the spec's defaults.
   */
  conversionNames?: (orgId: string) => Promise<ReadonlySet<string> | null>;
  /** Rebuilding the projections (replay.ts): the replay holds them exclusively, so no identity locks. */
  replay?: boolean;
  /**
   * Events the live path already stored (and published, and counted): a
   * replay restates them, so no usage and no outputs (not even the profiles'
   * created and merged changes). A replay's events the
   * live path had not reached are not restated: it stores them as the live
   * path would, outputs and usage included, and the live path then finds
   * them stored.
   */
  restate?: boolean;
  /** With tracing on: the traceparent of the span resolving each request's events (by requestId), carried by their outputs. */
  traceparents?: ReadonlyMap<string, string>;
}

export interface BatchOutcome {
  stored: number;
  duplicates: number;
  /** Events dropped because they carry an erased person's identifier (privacy.suppressions). */
  suppressed: number;
  profilesCreated: number;
  merges: MergeReason[];
  /** Organisations whose stored engagement rules fail the check (their events scored nothing): to report. */
  invalidEngagementRules: string[];
  /** Organisations whose stored identity rules fail the check (the defaults applied): to report. */
  invalidIdentityRules: string[];
  /** The stored events' ingestion warnings (recorded in the batch's transaction): to count. */
  warnings: IngestionWarning[];
  /** The events.resolved messages of the stored events (their outbox rows name them), for the relay once committed. */
  resolved: ResolvedEvent[];
}

const ACTOR = 'identity-resolver';

export async function processBatch(trx: Db, envelopes: readonly RawEventEnvelope[], options: BatchOptions): Promise<BatchOutcome> {
  // Before anything else: they decide how the events' identifiers are read.
  const identityRules = await readIdentityRules(trx, envelopes.map((e) => e.orgId), options.defaultPhoneCountryCode ?? DEFAULT_PHONE_COUNTRY_CODE);
  const { events, repeats } = distinctEvents(envelopes, identityRules.rules);
  const outcome: BatchOutcome = {
    stored: 0,
    duplicates: repeats,
    suppressed: 0,
    profilesCreated: 0,
    merges: [],
    invalidEngagementRules: [],
    invalidIdentityRules: identityRules.invalid,
    warnings: [],
    resolved: [],
  };
  if (events.length === 0) return outcome;

  // The organisations' conversion names come from outside this transaction (the caller's function):
  // asked for now, while the transaction goes on; awaited when needed.
  const conversionNames = options.restate ? undefined : lookUpConversionNames(events, options);

  if (!options.replay) await lockIdentities(trx, identityLockKeys(events));
  const allowed = await withoutSuppressed(trx, events, options.hashes);
  outcome.suppressed = events.length - allowed.length;
  if (allowed.length === 0) return outcome;
  const state = await readBatchState(trx, batchLookups(allowed));
  const fresh = freshEvents(allowed, state);
  outcome.duplicates += allowed.length - fresh.length;
  if (fresh.length === 0) return outcome;

  const profiles = await loadSurvivors(trx, state.profiles);
  const counts = limitsApply(fresh, identityRules.rules) ? await readSignalCounts(trx, [...profiles.keys()]) : new Map();
  const graphs = buildGraphs(fresh, state.signals, profiles.values(), identityRules.rules, counts, state.keptApart);
  const engagement = compileStoredEngagementRules([...graphs.keys()], state.rules.filter((r) => graphs.has(r.org_id)));
  outcome.invalidEngagementRules = engagement.invalid;
  const plan = planBatch(fresh, graphs, engagement.rules);

  await insertProfiles(trx, options.restate ? { created: plan.created, createdChanges: [] } : plan);
  await mergePlannedProfiles(trx, plan.merges, options.actor ?? ACTOR, !options.restate);
  await writeEffects(trx, plan.effects, plan.madeSignals);
  outcome.stored = fresh.length;
  outcome.profilesCreated = plan.created.length;
  outcome.merges = plan.merges.map((m) => m.reason);

  const qualifying = conversionNames ? qualifyingConversions(fresh, plan.profileOf, await conversionNames) : [];
  const contacts = await rescoreAndReadContacts(trx, profilesToRescore(plan.effects.fingerprints), contactsNeeded(qualifying));
  if (options.restate) return outcome;

  await addUsageAndOutputs(trx, usageOf(fresh), outputMessages(plan, fresh, qualifying, contacts, identityRules.rules, options.traceparents));
  outcome.warnings = warningsOf(fresh, graphs);
  await recordWarnings(trx, outcome.warnings);
  outcome.resolved = resolvedEvents(plan.effects);
  return outcome;
}

/**
 * The conversion names of each organisation of the batch, looked up one after
 * another (one connection at a time, as the callback may use the pool) while
 * the transaction proceeds. A failure surfaces where the names are awaited.
 */
function lookUpConversionNames(events: readonly PreparedEvent[], options: BatchOptions): Promise<Map<string, ReadonlySet<string> | null>> {
  const lookUp = async () => {
    const names = new Map<string, ReadonlySet<string> | null>();
    for (const orgId of new Set(events.map((e) => e.orgId))) names.set(orgId, (await options.conversionNames?.(orgId)) ?? null);
    return names;
  };
  const pending = lookUp();
  // Awaited later, or not at all when the batch ends early (everything a duplicate, or a failure).
  pending.catch(() => undefined);
  return pending;
}
