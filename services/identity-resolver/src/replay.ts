import type { RawEventEnvelope, RawLogMessage } from '@svc/contracts';
import type { Db, Logger } from '@svc/runtime';
import { UnreadableRawEventError, eventIdFor, excludeWriters, identityMigrations, mergeProfiles, openRawLog, resolveProfileId, type DataKeyReader } from '@svc/identity';
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
    await excludeWriters(trx);
    await trx.raw('alter schema identity rename to ??', [previousSchema]);
    await trx.raw('create schema identity');
    for (const m of [...identityMigrations.migrations].sort((a, b) => a.name.localeCompare(b.name))) await m.up(trx);
    await carryMigrationLog(trx, previousSchema);
    // Before the log: they decide how its events' identifiers are read, and which profiles stay apart (unmerges).
    await trx.raw('insert into identity.identity_rules (org_id, rules, updated_at) select org_id, rules, updated_at from ??.identity_rules', [previousSchema]);
    await trx.raw(
      'insert into identity.kept_apart (org_id, a_type, a_value, b_type, b_value, unmerge_id, created_at) select org_id, a_type, a_value, b_type, b_value, unmerge_id, created_at from ??.kept_apart',
      [previousSchema],
    );
    // The warnings so far, in their order: the restated events' are not recorded again.
    await trx.raw(
      'insert into identity.ingestion_warnings (org_id, kind, message_id, detail, at) select org_id, kind, message_id, detail, at from ??.ingestion_warnings order by id',
      [previousSchema],
    );

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
      const handled = await storedBefore(trx, previousSchema, envelopes);
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

    await trx.raw(
      `insert into identity.engagement_rules (org_id, rules, updated_at) select org_id, rules, updated_at from ??.engagement_rules`,
      [previousSchema],
    );
    // The outbox now holds the caught-up events' rows only: restated events and re-applied admin merges publish nothing.
    const adminMerges = await reapplyAdminMerges(trx, previousSchema, o.logger);
    // What the live path committed but had not relayed: still to be sent (last, so the relay's deletes meanwhile are
    // seen; one it makes after this sends a row again, as after any relay crash: consumers de-duplicate).
    await trx.raw(
      `insert into identity.outbox (topic, message_key, payload, event_id, event_ids, created_at)
       select topic, message_key, payload, event_id, event_ids, created_at from ??.outbox order by id`,
      [previousSchema],
    );
    const { rows } = await trx.raw<{ rows: Array<{ n: string }> }>('select count(*) as n from identity.profiles where merged_into is null');
    return { previousSchema, events, skipped, suppressed, erased, caughtUp, profiles: Number(rows[0]!.n), adminMerges };
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

/** The ids of the events the live path had stored, among these: those in the tables the replay replaces. */
async function storedBefore(trx: Db, previousSchema: string, envelopes: readonly RawEventEnvelope[]): Promise<Set<string>> {
  if (envelopes.length === 0) return new Set();
  const { rows } = await trx.raw<{ rows: Array<{ id: string }> }>(`select id from ??.events where id = any(?::uuid[])`, [
    previousSchema,
    envelopes.map((e) => eventIdFor(e.orgId, e.event.messageId)),
  ]);
  return new Set(rows.map((r) => r.id));
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

/** knex's migration log of the schema, so later `migrate` runs see the same migrations applied. */
async function carryMigrationLog(trx: Db, previousSchema: string): Promise<void> {
  await trx.raw(`
    create table identity.knex_migrations (id serial primary key, name varchar(255), batch integer, migration_time timestamptz);
    create table identity.knex_migrations_lock (index serial primary key, is_locked integer);
    insert into identity.knex_migrations_lock (is_locked) values (0);
  `);
  await trx.raw(
    'insert into identity.knex_migrations (name, batch, migration_time) select name, batch, migration_time from ??.knex_migrations order by id',
    [previousSchema],
  );
}

/** Admin merges are decisions, not log events: applied again, in order, to the profiles they named (ids are deterministic). */
async function reapplyAdminMerges(trx: Db, previousSchema: string, logger: Logger): Promise<number> {
  const { rows } = await trx.raw<{
    rows: Array<{ org_id: string; source_profile_id: string; target_profile_id: string; actor: string; note: string | null }>;
  }>(`select org_id, source_profile_id, target_profile_id, actor, note from ??.merges where reason = 'admin' and undone_by is null order by id`, [previousSchema]);
  let applied = 0;
  for (const m of rows) {
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
