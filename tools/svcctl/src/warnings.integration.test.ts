import { beforeAll, expect, it } from '@jest/globals';
import { recordWarnings } from '@svc/identity';
import { describeWithPostgres, testDatabaseForSuite } from '@svc/testkit';
import { ok, svcctl } from './test-support/run';

describeWithPostgres('svcctl warnings', () => {
  const t = testDatabaseForSuite();
  let org: string;
  let other: string;
  beforeAll(async () => {
    org = String((await ok(t.url, ['org', 'create', '--name', 'Warned Ltd'])).id);
    other = String((await ok(t.url, ['org', 'create', '--name', 'Other Ltd'])).id);
    await recordWarnings(t.db, [
      { orgId: org, kind: 'unreadable_phone', messageId: 'm-1', detail: null },
      { orgId: org, kind: 'soft_cap', messageId: 'm-2', detail: 'properties: too_deep' },
      { orgId: org, kind: 'soft_cap', messageId: 'm-3', detail: 'traits: too_many_keys' },
      { orgId: other, kind: 'timestamp_clamped', messageId: 'x-1', detail: '2099-01-01T00:00:00.000Z' },
    ]);
  });

  it('counts by kind and lists the newest first, of the organisation only', async () => {
    const report = await ok(t.url, ['warnings', '--org', org]);
    expect(report).toEqual({
      org_id: org,
      counts: [
        { kind: 'soft_cap', count: 2, last_at: expect.any(String) },
        { kind: 'unreadable_phone', count: 1, last_at: expect.any(String) },
      ],
      warnings: [
        { id: expect.stringMatching(/^\d+$/), at: expect.any(String), kind: 'soft_cap', message_id: 'm-3', detail: 'traits: too_many_keys' },
        { id: expect.stringMatching(/^\d+$/), at: expect.any(String), kind: 'soft_cap', message_id: 'm-2', detail: 'properties: too_deep' },
        { id: expect.stringMatching(/^\d+$/), at: expect.any(String), kind: 'unreadable_phone', message_id: 'm-1', detail: null },
      ],
    });
  });

  it('filters by kind and limits', async () => {
    const report = await ok(t.url, ['warnings', '--org', org, '--kind', 'soft_cap', '--limit', '1']);
    expect((report.warnings as Array<{ message_id: string }>).map((w) => w.message_id)).toEqual(['m-3']);
  });

  it.each([
    ['an unknown kind', ['--kind', 'oops'], 1, /--kind must be one of unreadable_phone, timestamp_clamped, soft_cap/],
    ['a bad limit', ['--limit', '0'], 1, /--limit must be an integer of at least 1/],
    ['an unknown organisation', ['--org', '00000000-0000-4000-8000-000000000000'], 1, /organization .* not found/],
  ] as Array<[string, string[], number, RegExp]>)('%s: JSON error, exit %d', async (_, extra, code, message) => {
    const args = extra.includes('--org') ? extra : ['--org', org, ...extra];
    const result = await svcctl(t.url, ['warnings', ...args]);
    expect(result.code).toBe(code);
    expect(result.stdout).toBe('');
    expect(JSON.parse(result.stderr).error).toMatch(message);
  });
});
