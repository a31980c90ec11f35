import type { RawEventEnvelope, RawLogMessage } from '@svc/contracts';
import type { Db, Logger } from '@svc/runtime';
import { UnreadableRawEventError, excludeWriters, identityMigrations, mergeProfiles, openRawLog, resolveProfileId, type DataKeyReader } from '@svc/identity';
import { processBatch, type BatchOptions } from './process-batch';

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
 * Not in the log, so carried over from the old tables: engagement rules and
 * admin merges (re-applied at the end, in their order). Exhausted clicks are
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
  batch?: Omit<BatchOptions, 'replay'>;
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

    let events = 0;
    let skipped = 0;
    let suppressed = 0;
    let erased = 0;
    const options: BatchOptions = { ...o.batch, replay: true };
    const leftOut = (err: unknown, messageId: string | undefined) => {
      skipped++;
      o.logger.warn({ err, messageId }, 'replay: event left out');
    };
    await o.source(async (messages) => {
      events += messages.length;
      let envelopes: RawEventEnvelope[] = [];
      try {
        const opened = await openRawLog(o.keys, messages);
        erased += opened.erased;
        envelopes = opened.events;
      } catch (err) {
        // A key that cannot be unwrapped (the master key missing) stops the replay: it must not rebuild without those events.
        if (!(err instanceof UnreadableRawEventError)) throw err;
        // One does not open with its own key (tampered, or not a raw event): open them one by one and leave that one out.
        for (const m of messages) {
          await openRawLog(o.keys, [m]).then(
            (one) => ((erased += one.erased), envelopes.push(...one.events)),
            (e: unknown) => {
              if (!(e instanceof UnreadableRawEventError)) throw e;
              leftOut(e, undefined);
            },
          );
        }
      }
      try {
        suppressed += (await trx.transaction((sp) => processBatch(sp, envelopes, options))).suppressed;
      } catch {
        // One event is bad: resolve them one by one and leave the bad ones out, as the live resolver did.
        for (const envelope of envelopes) {
          await trx.transaction((sp) => processBatch(sp, [envelope], options)).then(
            (r) => (suppressed += r.suppressed),
            (err: unknown) => leftOut(err, envelope.event.messageId),
          );
        }
      }
    });

    await trx.raw(
      `insert into identity.engagement_rules (org_id, rules, updated_at) select org_id, rules, updated_at from ??.engagement_rules`,
      [previousSchema],
    );
    const adminMerges = await reapplyAdminMerges(trx, previousSchema, o.logger);
    // Outputs describe new facts; a replay restates old ones, so nothing is published.
    await trx.raw('truncate identity.outbox');
    const { rows } = await trx.raw<{ rows: Array<{ n: string }> }>('select count(*) as n from identity.profiles where merged_into is null');
    return { previousSchema, events, skipped, suppressed, erased, profiles: Number(rows[0]!.n), adminMerges };
  });
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
  }>(`select org_id, source_profile_id, target_profile_id, actor, note from ??.merges where reason = 'admin' order by id`, [previousSchema]);
  let applied = 0;
  for (const m of rows) {
    const sourceId = await resolveProfileId(trx, m.org_id, m.source_profile_id);
    const targetId = await resolveProfileId(trx, m.org_id, m.target_profile_id);
    if (!sourceId || !targetId || sourceId === targetId) {
      logger.warn({ orgId: m.org_id }, 'replay: an admin merge has nothing left to merge');
      continue;
    }
    await mergeProfiles(trx, { orgId: m.org_id, sourceId, targetId, reason: 'admin', actor: m.actor, note: m.note });
    applied++;
  }
  return applied;
}
