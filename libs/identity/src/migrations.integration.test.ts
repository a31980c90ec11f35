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
