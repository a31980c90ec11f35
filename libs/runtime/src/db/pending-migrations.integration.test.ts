import { expect, it } from '@jest/globals';
import { describeWithPostgres, testDatabaseForSuite } from '@svc/testkit';
import { runMigrations, type MigrationSet } from './migrations';
import { pendingMigrations } from './pending-migrations';

const set = (schema: string, names: string[]): MigrationSet => ({
  schema,
  migrations: names.map((name) => ({ name, up: async (db) => void (await db.raw('select 1')) })),
});

describeWithPostgres('pendingMigrations', () => {
  const t = testDatabaseForSuite();

  it('names every migration of a fresh database, in order, schema by schema', async () => {
    const sets = [set('pending_a', ['002_b', '001_a']), set('pending_b', ['001_x'])];
    expect(await pendingMigrations(t.db, sets)).toEqual(['pending_a/001_a', 'pending_a/002_b', 'pending_b/001_x']);
  });

  it('names only what is missing once some have run, and nothing once all have', async () => {
    await runMigrations(t.db, [set('pending_c', ['001_a'])]);
    expect(await pendingMigrations(t.db, [set('pending_c', ['001_a', '002_b'])])).toEqual(['pending_c/002_b']);
    await runMigrations(t.db, [set('pending_c', ['001_a', '002_b'])]);
    expect(await pendingMigrations(t.db, [set('pending_c', ['001_a', '002_b'])])).toEqual([]);
  });

  it('counts a database migrated by a newer release as current', async () => {
    await runMigrations(t.db, [set('pending_d', ['001_a', '002_newer'])]);
    expect(await pendingMigrations(t.db, [set('pending_d', ['001_a'])])).toEqual([]);
  });
});
