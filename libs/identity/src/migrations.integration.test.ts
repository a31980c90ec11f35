import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { runMigrations, type MigrationSet } from '@svc/runtime';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import { identityMigrations } from './migrations';

/** A set as it was before `name`: what a database migrated by an earlier release has applied. */
const before = (set: MigrationSet, name: string): MigrationSet => ({ ...set, migrations: set.migrations.filter((m) => m.name < name) });

const indexesOf = async (t: TestDatabase, table: string): Promise<string[]> => {
  const { rows } = await t.db.raw<{ rows: Array<{ indexname: string }> }>(
    `select indexname from pg_indexes where schemaname = 'identity' and tablename = ? order by indexname`,
    [table],
  );
  return rows.map((r) => r.indexname);
};

/**
 * What the Profiles API's own migration set (`profile_api` 0001, since folded
 * into identity 0004) had created on a database of an earlier release.
 */
const EARLIER_RELEASE_READ_INDEXES = `
  create extension if not exists pg_trgm;
  create index if not exists profiles_canonical_id_trgm_idx on identity.profiles using gin (canonical_id gin_trgm_ops);`;

describeWithPostgres('canonical_id search off identity.profiles (identity 0003, and 0004 that took over the Profiles API read indexes)', () => {
  let t: TestDatabase;
  const org = randomUUID();
  const profile = (canonical: string) => ({ id: randomUUID(), org_id: org, canonical_id: canonical, first_seen_at: new Date(), last_seen_at: new Date() });
  const older = profile('prf_older0000000000000000000');

  beforeAll(async () => {
    // A database from before the move, with a profile in it.
    t = await createTestDatabase([before(identityMigrations, '0003')]);
    await t.db.raw(EARLIER_RELEASE_READ_INDEXES);
    expect(await indexesOf(t, 'profiles')).toContain('profiles_canonical_id_trgm_idx');
    await t.db('identity.profiles').insert(older);
    await runMigrations(t.db, [identityMigrations]);
  });
  afterAll(() => t.drop());

  it('copies the canonical ids of the profiles already there, and gives the planner their statistics', async () => {
    expect(await t.db('identity.canonical_ids').where({ org_id: org })).toEqual([{ org_id: org, canonical_id: older.canonical_id, profile_id: older.id }]);
    // -1 until the table is first analyzed; a planner without statistics skips the trigram index.
    const { rows } = await t.db.raw<{ rows: Array<{ reltuples: number }> }>(`select reltuples from pg_class where oid = 'identity.canonical_ids'::regclass`);
    expect(rows[0]?.reltuples).toBe(1);
  });

  it('keeps them for every profile inserted afterwards, several in one statement included', async () => {
    const newer = [profile('prf_newer1000000000000000000'), profile('prf_newer2000000000000000000')];
    await t.db('identity.profiles').insert(newer);
    const rows = await t.db('identity.canonical_ids').where({ org_id: org }).orderBy('canonical_id');
    expect(rows.map((r: { profile_id: string }) => r.profile_id)).toEqual([newer[0]!.id, newer[1]!.id, older.id]);
  });

  it('moves the trigram index: none on profiles, whose every update would add to it', async () => {
    expect(await indexesOf(t, 'profiles')).not.toContain('profiles_canonical_id_trgm_idx');
    expect(await indexesOf(t, 'canonical_ids')).toEqual(['canonical_ids_pkey', 'canonical_ids_value_trgm_idx']);
  });
});

describeWithPostgres('the per-event rows and the outbox (identity 0007 to 0009)', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase([before(identityMigrations, '0007')]);
    // An events.resolved row as an earlier release wrote it: one event per row.
    await t.db.raw(`insert into identity.outbox (topic, event_id) values ('eventsResolved', ?)`, [randomUUID()]);
    await runMigrations(t.db, [identityMigrations]);
  });
  afterAll(() => t.drop());

  it('keeps foreign keys to profiles only on the rows written once per profile or merge', async () => {
    const { rows } = await t.db.raw<{ rows: Array<{ source: string }> }>(
      `select conrelid::regclass::text || '.' || conname as source from pg_constraint
       where contype = 'f' and confrelid = 'identity.profiles'::regclass order by 1`,
    );
    expect(rows.map((r) => r.source)).toEqual([
      'identity.canonical_ids.canonical_ids_profile_id_fkey',
      'identity.merges.merges_source_profile_id_fkey',
      'identity.merges.merges_target_profile_id_fkey',
      'identity.profiles.profiles_merged_into_fkey',
    ]);
  });

  it('indexes an event row three times: its id (which keeps (org_id, message_id) unique) and the two reads by profile', async () => {
    expect(await indexesOf(t, 'events')).toEqual(['events_pkey', 'events_profile_name_time_idx', 'events_profile_time_idx']);
  });

  it('an events.resolved row names its events, as a list or (from an earlier release) one; other topics name none', async () => {
    await t.db.raw(`insert into identity.outbox (topic, event_ids) values ('eventsResolved', ?::uuid[])`, [[randomUUID(), randomUUID()]]);
    expect(await t.db('identity.outbox').where({ topic: 'eventsResolved' }).count({ n: '*' })).toEqual([{ n: 2 }]);
    await expect(t.db.raw(`insert into identity.outbox (topic) values ('eventsResolved')`)).rejects.toThrow(/outbox_events_named/);
    await expect(
      t.db.raw(`insert into identity.outbox (topic, message_key, payload, event_ids) values ('profilesChanges', 'k', '{}', ?::uuid[])`, [[randomUUID()]]),
    ).rejects.toThrow(/outbox_events_named/);
  });
});
