import type { Db } from '@svc/runtime';
import { identityMigrations } from './migrations';
import { excludeWriters } from './replay-lock';

/**
 * A replay's statements on the identity schema (the resolver's replay.ts
 * drives them, in one transaction): the live schema set aside under another
 * name, a fresh one made by the same migrations, and what the raw log does
 * not hold carried over from the old tables into the new.
 */

/**
 * Waits for every writer to finish and holds them off, renames the live
 * schema to `previousSchema` and creates it again, empty, at the same
 * migrations, with what decides how the log is read carried over first:
 * identity rules, the profiles unmerges keep apart, and the ingestion
 * warnings so far (in their order: the restated events' are not recorded again).
 */
export async function setIdentitySchemaAside(trx: Db, previousSchema: string): Promise<void> {
  await excludeWriters(trx);
  await trx.raw('alter schema identity rename to ??', [previousSchema]);
  await trx.raw('create schema identity');
  for (const m of [...identityMigrations.migrations].sort((a, b) => a.name.localeCompare(b.name))) await m.up(trx);
  await carryMigrationLog(trx, previousSchema);
  await trx.raw('insert into identity.identity_rules (org_id, rules, updated_at) select org_id, rules, updated_at from ??.identity_rules', [previousSchema]);
  await trx.raw(
    'insert into identity.kept_apart (org_id, a_type, a_value, b_type, b_value, unmerge_id, created_at) select org_id, a_type, a_value, b_type, b_value, unmerge_id, created_at from ??.kept_apart',
    [previousSchema],
  );
  await trx.raw(
    'insert into identity.ingestion_warnings (org_id, kind, message_id, detail, at) select org_id, kind, message_id, detail, at from ??.ingestion_warnings order by id',
    [previousSchema],
  );
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

/** Which of these event ids the set-aside tables hold: the events the live path had stored. */
export async function eventsStoredIn(trx: Db, previousSchema: string, eventIds: readonly string[]): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const { rows } = await trx.raw<{ rows: Array<{ id: string }> }>(`select id from ??.events where id = any(?::uuid[])`, [previousSchema, [...eventIds]]);
  return new Set(rows.map((r) => r.id));
}

/** The engagement rules, carried over as they were. */
export async function carryEngagementRules(trx: Db, previousSchema: string): Promise<void> {
  await trx.raw(`insert into identity.engagement_rules (org_id, rules, updated_at) select org_id, rules, updated_at from ??.engagement_rules`, [previousSchema]);
}

/** An admin merge of the set-aside journal, not undone: a decision, not a log event, so applied again. */
export interface AdminMergeRecord {
  org_id: string;
  source_profile_id: string;
  target_profile_id: string;
  actor: string;
  note: string | null;
}

/** The set-aside journal's admin merges not undone, in the order they were made. */
export async function adminMergesToReapply(trx: Db, previousSchema: string): Promise<AdminMergeRecord[]> {
  const { rows } = await trx.raw<{ rows: AdminMergeRecord[] }>(
    `select org_id, source_profile_id, target_profile_id, actor, note from ??.merges where reason = 'admin' and undone_by is null order by id`,
    [previousSchema],
  );
  return rows;
}

/**
 * What the live path committed but had not relayed: still to be sent. Last,
 * so the relay's deletes meanwhile are seen; one it makes after this sends a
 * row again, as after any relay crash: consumers de-duplicate.
 */
export async function carryUnrelayedOutbox(trx: Db, previousSchema: string): Promise<void> {
  await trx.raw(
    `insert into identity.outbox (topic, message_key, payload, event_id, event_ids, created_at)
     select topic, message_key, payload, event_id, event_ids, created_at from ??.outbox order by id`,
    [previousSchema],
  );
}

/** Profiles not merged away, in the new tables. */
export async function liveProfileCount(trx: Db): Promise<number> {
  const { rows } = await trx.raw<{ rows: Array<{ n: string }> }>('select count(*) as n from identity.profiles where merged_into is null');
  return Number(rows[0]!.n);
}
