import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import { accountsMigrations } from './migrations';
import { AccountsStore } from './store';
import { KEY_PREFIXES, hashApiKey } from './api-keys';
import { NotFoundError, ValidationError } from '@svc/runtime';

describeWithPostgres('AccountsStore on PostgreSQL', () => {
  let t: TestDatabase;
  let store: AccountsStore;
  beforeAll(async () => {
    t = await createTestDatabase([accountsMigrations]);
    store = new AccountsStore(t.db);
  });
  afterAll(() => t.drop());

  it.each(['write', 'read', 'admin'] as const)('creates and verifies a %s key, stored only as a hash', async (type) => {
    const org = await store.createOrganization({ name: 'Acme' });
    const { record, key } = await store.createApiKey({ orgId: org.id, type });
    expect(key.startsWith(KEY_PREFIXES[type])).toBe(true);
    const verified = await store.verifyApiKey(key);
    expect(verified).toMatchObject({ keyId: record.id, orgId: org.id, type, planState: 'active' });
    const raw = await t.db('accounts.api_keys').where({ id: record.id }).first();
    expect(JSON.stringify(raw)).not.toContain(key.slice(8));
    expect(Buffer.compare(raw.key_hash, hashApiKey(key))).toBe(0);
  });

  it('refuses unknown, malformed and revoked keys; rotation stops the old key at once', async () => {
    const org = await store.createOrganization({ name: 'Rotor' });
    const { record, key } = await store.createApiKey({ orgId: org.id, type: 'write', ratePerMinuteCap: 10 });
    expect(await store.verifyApiKey(key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a'))).toBeUndefined();
    expect(await store.verifyApiKey('uk_live_short')).toBeUndefined();
    const rotated = await store.rotateApiKey(record.id);
    expect(await store.verifyApiKey(key)).toBeUndefined();
    expect(await store.verifyApiKey(rotated.key)).toMatchObject({ type: 'write', ratePerMinuteCap: 10 });
    expect((await store.getApiKey(record.id)).replacedBy).toBe(rotated.record.id);
    await store.revokeApiKey(rotated.record.id);
    expect(await store.verifyApiKey(rotated.key)).toBeUndefined();
    await expect(store.rotateApiKey(rotated.record.id)).rejects.toBeInstanceOf(ValidationError);
  });

  it('readApiKey: its condition holds until the key or its organisation changes in any way', async () => {
    const holds = async (condition: { sql: string; bindings: readonly string[] }) =>
      (await t.db.raw(`select exists (${condition.sql}) as holds`, [...condition.bindings])).rows[0].holds as boolean;
    const changes: Array<[string, (orgId: string, keyId: string) => Promise<unknown>]> = [
      ['revoked', (_org, id) => store.revokeApiKey(id)],
      ['rotated', (_org, id) => store.rotateApiKey(id)],
      ['its allowlist changed', (_org, id) => t.db('accounts.api_keys').where({ id }).update({ origin_allowlist: ['https://shop.test'] })],
      ['its organisation paused', (org) => store.setPlanState(org, 'paused')],
      ['its organisation given a quota', (org) => store.setMonthlyQuota(org, 10)],
    ];
    for (const [what, change] of changes) {
      const org = await store.createOrganization({ name: what });
      const { record, key } = await store.createApiKey({ orgId: org.id, type: 'write' });
      const read = await store.readApiKey(key);
      expect([what, read?.key]).toEqual([what, await store.verifyApiKey(key)]);
      expect([what, await holds(read!.unchanged)]).toEqual([what, true]);
      await change(org.id, record.id);
      expect([what, await holds(read!.unchanged)]).toEqual([what, false]);
    }
  });

  it('normalises allowlists and refuses malformed ones, writing nothing', async () => {
    const org = await store.createOrganization({ name: 'Lists' });
    const { record } = await store.createApiKey({
      orgId: org.id,
      type: 'write',
      ipAllowlist: ['10.1.2.3/8', '192.0.2.7', '2001:db8::1/32'],
      originAllowlist: ['https://Shop.Example.com/'],
    });
    expect(record.ipAllowlist).toEqual(['10.0.0.0/8', '192.0.2.7/32', '2001:db8::/32']);
    expect(record.originAllowlist).toEqual(['https://shop.example.com']);
    const before = await t.db('accounts.api_keys').count({ n: '*' }).first();
    await expect(store.createApiKey({ orgId: org.id, type: 'read', ipAllowlist: ['10.0.0.0/33'] })).rejects.toBeInstanceOf(ValidationError);
    await expect(store.createApiKey({ orgId: org.id, type: 'read', originAllowlist: ['https://x.com/path'] })).rejects.toBeInstanceOf(ValidationError);
    expect(await t.db('accounts.api_keys').count({ n: '*' }).first()).toEqual(before);
  });

  it('sets plan state and reports unknown ids as not found', async () => {
    const org = await store.createOrganization({ name: 'Plans', monthlyEventQuota: 1000 });
    expect((await store.setPlanState(org.id, 'grace')).planState).toBe('grace');
    const { key } = await store.createApiKey({ orgId: org.id, type: 'write' });
    expect(await store.verifyApiKey(key)).toMatchObject({ planState: 'grace', monthlyEventQuota: 1000 });
    await expect(store.getOrganization('00000000-0000-4000-8000-000000000000')).rejects.toBeInstanceOf(NotFoundError);
    await expect(store.getOrganization('not-a-uuid')).rejects.toBeInstanceOf(NotFoundError);
    await expect(store.revokeApiKey('nope')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('counts monthly usage per calendar month', async () => {
    const org = await store.createOrganization({ name: 'Usage' });
    await AccountsStore.addUsage(t.db, org.id, new Date('2026-11-30T23:59:59Z'), 5);
    await AccountsStore.addUsage(t.db, org.id, new Date('2026-11-01T00:00:00Z'), 2);
    await AccountsStore.addUsage(t.db, org.id, new Date('2026-12-01T00:00:00Z'), 1);
    expect(await store.monthlyUsage(org.id, new Date('2026-11-15T00:00:00Z'))).toBe(7);
    expect(await store.monthlyUsage(org.id, new Date('2026-12-31T00:00:00Z'))).toBe(1);
    expect(await store.monthlyUsage(org.id, new Date('2027-01-01T00:00:00Z'))).toBe(0);
  });
});
