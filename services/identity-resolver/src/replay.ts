import type { RawEventEnvelope, RawLogMessage } from '@svc/contracts';
import type { Db, Logger } from '@svc/runtime';
import {
  UnreadableRawEventError,
  adminMergesToReapply,
  carryEngagementRules,
  carryUnrelayedOutbox,
  eventIdFor,
  eventsStoredIn,
  liveProfileCount,
  mergeProfiles,
  openRawLog,
  resolveProfileId,
  setIdentitySchemaAside,
  type DataKeyReader,
} from '@svc/identity';
import { processBatch, type BatchOptions, type BatchOutcome } from './process-batch';

/**
 * Rebuilds the identity projections from the raw log into fresh tables and
 * switches to them, atomically.
 *
 * It all happens in one transaction: the live `identity` schema is renamed
 * aside, a fresh one is created by the same migrations, the whole log is
 * resolved into it, and the commit makes the switch. Until the commit every
 * reader keeps seeing the old tables (PostgreSQL DDL is transactional);
 * writers (resolvers, admin merges) wait on the replay lock, and the log keeps
 * their input; afterwards they carry on into the new tables, and events the
 * replay already stored are skipped as duplicates. The old schema is kept,
 * renamed, for comparison or rollback.
 *
 * Handing over to the live path without swallowing its work: an event the
 * live path had stored (it is in the old tables) is restated, with no
 * outputs and no usage, since it had both already. An event it had not
 * reached (a lagging or stopped resolver, or one that arrived during the
 * replay) is stored as the live path stores it: its events.resolved,
 * profiles.changes and conversion candidates go into the outbox and its
 * usage is counted, once; the live path then finds it stored and skips it.
 * Outbox rows the live path committed but had not relayed yet are carried
 * over into the new outbox, so the relay still sends them.
 *
 * Not in the log, so carried over from the old tables: identity rules and
 * the profiles unmerges keep apart (first: they decide how the log's
 * identifiers are read and joined), the ingestion
 * warnings of the events the live path stored, engagement rules and
 * admin merges not undone (re-applied at the end, in their order). The
 * journal starts again from what the log merges: an undone merge is not
 * made again, so it is not in it, and unmerge requests stay in the old
 * schema. Exhausted clicks are
 * the forwarder's, in its own schema, which a replay does not touch.
 */

export interface ReplayOptions {
  db: Db;
  /**
   * Feeds the whole raw log, in batches, in partition order, and resolves
   * once it has fed everything up to the log's end as of the call.
   */
  source: (consume: (messages: readonly RawLogMessage[]) => Promise<void>) => Promise<void>;
  /** The raw log's data keys: an event whose key an erasure deleted cannot come back. */
  keys: Pick<DataKeyReader, 'read'>;
  logger: Logger;
  /** As the live resolver's: the phone country code, and the conversion names of the events the replay stores first. */
  batch: Omit<BatchOptions, 'replay' | 'restate'>;
  /** Suffix of the schema the old tables are kept in (default: the time). */
  label?: string;
}

export interface ReplayReport {
  /** Where the old tables are now. */
  previousSchema: string;
  events: number;
  /** Events that failed alone (the live resolver dead-lettered them too). */
  skipped: number;
  /** Events left out because they carry an erased person's identifier (privacy.suppressions). */
  suppressed: number;
  /** Events left out because an erasure deleted the key that sealed them: they no longer open. */
  erased: number;
  /** Events the live path had not stored yet: stored by the replay with their outputs and usage. */
  caughtUp: number;
  profiles: number;
  adminMerges: number;
}

export async function replayProjections(o: ReplayOptions): Promise<ReplayReport> {
  const previousSchema = `identity_before_replay_${o.label ?? new Date().toISOString().replace(/\D/g, '').slice(0, 14)}`;
  return o.db.transaction(async (trx) => {
    // With what decides how the log's identifiers are read and joined carried over first.
    await setIdentitySchemaAside(trx, previousSchema);

    let events = 0;
    let skipped = 0;
    let suppressed = 0;
    let erased = 0;
    let caughtUp = 0;
    const restated: BatchOptions = { ...o.batch, replay: true, restate: true };
    const caughtUpOptions: BatchOptions = { ...o.batch, replay: true };
    const leftOut = (err: unknown, messageId: string | undefined) => {
      skipped++;
      o.logger.warn({ err, messageId }, 'replay: event left out');
    };
    const counted = (r: BatchOutcome, options: BatchOptions) => {
      suppressed += r.suppressed;
      if (!options.restate) caughtUp += r.stored;
    };
    await o.source(async (messages) => {
      events += messages.length;
      const envelopes = await openAll(o.keys, messages, (n) => (erased += n), (err) => leftOut(err, undefined));
      const handled = await eventsStoredIn(
        trx,
        previousSchema,
        envelopes.map((e) => eventIdFor(e.orgId, e.event.messageId)),
      );
      // In log order: runs of events the live path had stored, and of events it had not.
      for (const run of runsBy(envelopes, (e) => handled.has(eventIdFor(e.orgId, e.event.messageId)))) {
        const options = run.value ? restated : caughtUpOptions;
        try {
          counted(await trx.transaction((sp) => processBatch(sp, run.items, options)), options);
        } catch {
          // One event is bad: resolve them one by one and leave the bad ones out, as the live resolver did.
          for (const envelope of run.items) {
            await trx.transaction((sp) => processBatch(sp, [envelope], options)).then(
              (r) => counted(r, options),
              (err: unknown) => leftOut(err, envelope.event.messageId),
            );
          }
        }
      }
    });

    await carryEngagementRules(trx, previousSchema);
    // The outbox now holds the caught-up events' rows only: restated events and re-applied admin merges publish nothing.
    const adminMerges = await reapplyAdminMerges(trx, previousSchema, o.logger);
    await carryUnrelayedOutbox(trx, previousSchema);
    return { previousSchema, events, skipped, suppressed, erased, caughtUp, profiles: await liveProfileCount(trx), adminMerges };
  });
}

/**
 * A run of messages opened with one key read; those whose key is gone counted
 * by `erased`. One that does not open with its own key (tampered, or not a
 * raw event) is left out alone; a key that cannot be unwrapped (the master
 * key missing) stops the replay: it must not rebuild without those events.
 */
async function openAll(
  keys: Pick<DataKeyReader, 'read'>,
  messages: readonly RawLogMessage[],
  erased: (n: number) => void,
  leftOut: (err: unknown) => void,
): Promise<RawEventEnvelope[]> {
  try {
    const opened = await openRawLog(keys, messages);
    erased(opened.erased);
    return opened.events;
  } catch (err) {
    if (!(err instanceof UnreadableRawEventError)) throw err;
  }
  const envelopes: RawEventEnvelope[] = [];
  for (const m of messages) {
    try {
      const one = await openRawLog(keys, [m]);
      erased(one.erased);
      envelopes.push(...one.events);
    } catch (err) {
      if (!(err instanceof UnreadableRawEventError)) throw err;
      leftOut(err);
    }
  }
  return envelopes;
}

/** Consecutive items with the same value of `of`, in order. */
function runsBy<T>(items: readonly T[], of: (item: T) => boolean): Array<{ value: boolean; items: T[] }> {
  const runs: Array<{ value: boolean; items: T[] }> = [];
  for (const item of items) {
    const value = of(item);
    const last = runs[runs.length - 1];
    if (last && last.value === value) last.items.push(item);
    else runs.push({ value, items: [item] });
  }
  return runs;
}

/** Admin merges are decisions, not log events: applied again, in order, to the profiles they named (ids are deterministic). */
async function reapplyAdminMerges(trx: Db, previousSchema: string, logger: Logger): Promise<number> {
  let applied = 0;
  for (const m of await adminMergesToReapply(trx, previousSchema)) {
    const sourceId = await resolveProfileId(trx, m.org_id, m.source_profile_id);
    const targetId = await resolveProfileId(trx, m.org_id, m.target_profile_id);
    if (!sourceId || !targetId || sourceId === targetId) {
      logger.warn({ orgId: m.org_id }, 'replay: an admin merge has nothing left to merge');
      continue;
    }
    // Published when it was made.
    await mergeProfiles(trx, { orgId: m.org_id, sourceId, targetId, reason: 'admin', actor: m.actor, note: m.note, publish: false });
    applied++;
  }
  return applied;
}
