import { expect, it } from '@jest/globals';
import { describeWithPostgres, testDatabaseForSuite } from '@svc/testkit';
import { ok, svcctl } from './test-support/run';

describeWithPostgres('svcctl against PostgreSQL', () => {
  const t = testDatabaseForSuite();

  it('creates organisations and keys of every type, revokes and rotates them', async () => {
    expect(await ok(t.url, ['migrate'])).toHaveProperty('applied');
    const org = await ok(t.url, ['org create', '--name', 'Acme Ltd', '--monthly-quota', '5000']);
    expect(org).toMatchObject({ name: 'Acme Ltd', monthly_event_quota: 5000, plan_state: 'active' });
    for (const [type, prefix] of [['write', 'uk_live_'], ['read', 'uk_read_'], ['admin', 'uk_admin_']]) {
      const key = await ok(t.url, ['key', 'create', '--org', String(org.id), '--type', type!]);
      expect(key).toMatchObject({ type, org_id: org.id });
      expect(String(key.key).startsWith(prefix!)).toBe(true);
    }
    const restricted = await ok(t.url, ['key', 'create', '--org', String(org.id), '--type', 'write',
      '--ip-allow', '10.0.0.0/8,192.0.2.1', '--origin-allow', 'https://shop.example.com', '--rate-cap', '30']);
    const listed = (await ok(t.url, ['key', 'list', '--org', String(org.id)])).keys as Array<Record<string, unknown>>;
    expect(listed).toHaveLength(4);
    expect(JSON.stringify(listed)).not.toContain(String(restricted.key));
    expect(listed.find((k) => k.id === restricted.id)).toMatchObject({
      ip_allowlist: ['10.0.0.0/8', '192.0.2.1/32'],
      origin_allowlist: ['https://shop.example.com'],
      rate_per_minute_cap: 30,
    });

    const rotated = await ok(t.url, ['key', 'rotate', '--id', String(restricted.id)]);
    expect(rotated).toMatchObject({ replaces: restricted.id, type: 'write' });
    expect(rotated.key).not.toEqual(restricted.key);
    const revoked = await ok(t.url, ['key', 'revoke', '--id', String(rotated.id)]);
    expect(revoked.revoked_at).toEqual(expect.any(String));

    expect(await ok(t.url, ['org', 'set-state', '--org', String(org.id), '--state', 'grace'])).toMatchObject({ plan_state: 'grace' });
  });

  const orgless = '00000000-0000-4000-8000-000000000000';
  const bad: Array<[string, string[], number, RegExp]> = [
    ['no command', [], 2, /usage/],
    ['unknown command', ['org', 'explode'], 2, /unknown command/],
    ['unknown flag', ['org', 'create', '--name', 'x', '--colour', 'red'], 2, /Unknown option '--colour'/],
    ['missing required flag', ['org', 'create'], 2, /missing required --name/],
    ['bad plan state', ['org', 'set-state', '--org', orgless, '--state', 'frozen'], 1, /--state must be one of/],
    ['bad quota', ['org', 'create', '--name', 'q', '--monthly-quota', 'lots'], 1, /--monthly-quota must be an integer/],
    ['unknown org', ['key', 'create', '--org', orgless, '--type', 'write'], 1, /organization .* not found/],
    ['malformed CIDR', ['key', 'create', '--org', 'ORG', '--type', 'write', '--ip-allow', '10.0.0.0/40'], 1, /invalid CIDR/],
    ['malformed origin', ['key', 'create', '--org', 'ORG', '--type', 'write', '--origin-allow', 'shop.example.com'], 1, /invalid origin/],
    ['bad key type', ['key', 'create', '--org', 'ORG', '--type', 'super'], 1, /--type must be one of write, read, admin/],
    ['zero rate cap', ['key', 'create', '--org', 'ORG', '--type', 'read', '--rate-cap', '0'], 1, /--rate-cap must be an integer of at least 1/],
    ['unknown key id', ['key', 'revoke', '--id', orgless], 1, /key .* not found/],
    ['non-uuid key id', ['key', 'rotate', '--id', 'abc'], 1, /key abc not found/],
  ];
  it.each(bad)('%s: JSON error on stderr, non-zero exit, nothing written', async (_name, args, code, message) => {
    const org = await ok(t.url, ['org', 'create', '--name', 'Scratch']);
    const count = async () => (await t.db.raw('select (select count(*) from accounts.api_keys) + (select count(*) from accounts.organizations) as n')).rows[0].n;
    const before = await count();
    const run = await svcctl(t.url, args.map((a) => (a === 'ORG' ? String(org.id) : a)));
    expect(run.code).toBe(code);
    if (args.length > 0) {
      expect(run.stdout).toBe('');
      expect(JSON.parse(run.stderr).error).toMatch(message);
    } else {
      expect(run.stdout).toMatch(message);
    }
    expect(await count()).toBe(before);
  });
});
