import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { identityMigrations } from '@svc/identity';
import { runMigrations, type MigrationSet } from '@svc/runtime';
import { accountsMigrations } from '@svc/accounts';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import { conversionsMigrations } from './migrations';

/** A set as it was before `name`: what a database migrated by an earlier release has applied. */
const before = (set: MigrationSet, name: string): MigrationSet => ({ ...set, migrations: set.migrations.filter((m) => m.name < name) });

describeWithPostgres('exhausted clicks move to the forwarder (conversions 0002, identity 0005)', () => {
  let t: TestDatabase;
  const org = randomUUID();

  beforeAll(async () => {
    // A database of the earlier release, where the forwarder marked identity.click_ids.
    t = await createTestDatabase([accountsMigrations, before(conversionsMigrations, '0002'), before(identityMigrations, '0005')]);
    const profile = randomUUID();
    await t.db('identity.profiles').insert({ id: profile, org_id: org, canonical_id: 'prf_exhaust000000000000000000', first_seen_at: new Date(), last_seen_at: new Date() });
    const click = (id: string, exhausted: boolean) => ({
      org_id: org, click_type: 'gclid', click_id: id, profile_id: profile, first_seen_at: new Date(), last_seen_at: new Date(),
      is_exhausted: exhausted, exhausted_at: exhausted ? new Date('2026-11-01T00:00:00Z') : null,
    });
    await t.db('identity.click_ids').insert([click('G-OLD', true), click('G-LIVE', false)]);
    // In the order every deployment runs them (services/standalone/src/migrations.ts): conversions first.
    await runMigrations(t.db, [accountsMigrations, conversionsMigrations, identityMigrations]);
  });
  afterAll(() => t.drop());

  it('keeps every mark the forwarder had made, in its own table', async () => {
    expect(await t.db('conversions.exhausted_click_ids').where({ org_id: org })).toEqual([
      { org_id: org, click_type: 'gclid', click_id: 'G-OLD', exhausted_at: new Date('2026-11-01T00:00:00Z') },
    ]);
  });

  it('leaves identity.click_ids to the resolver: the columns the forwarder wrote are gone', async () => {
    const columns = await t.db('information_schema.columns').where({ table_schema: 'identity', table_name: 'click_ids' }).pluck('column_name');
    expect(columns).not.toContain('is_exhausted');
    expect(columns).not.toContain('exhausted_at');
    expect(await t.db('identity.click_ids').where({ org_id: org }).count<Array<{ count: number }>>({ count: '*' })).toEqual([{ count: 2 }]);
  });
});
