import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { describeWithPostgres, testDatabaseForSuite } from '@svc/testkit';
import { ok, svcctl } from './test-support/run';

describeWithPostgres('svcctl rules', () => {
  const t = testDatabaseForSuite();
  let dir: string;
  let org: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svcctl-rules-'));
    org = String((await ok(t.url, ['org', 'create', '--name', 'Rules Ltd'])).id);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const file = async (name: string, content: unknown) => {
    const p = path.join(dir, name);
    await writeFile(p, typeof content === 'string' ? content : JSON.stringify(content));
    return p;
  };
  const stored = async () => (await t.db.raw('select org_id, rules from identity.engagement_rules order by org_id')).rows as unknown[];

  it('shows the default rule set, stores a valid file and shows it back', async () => {
    expect(await ok(t.url, ['rules', 'show', '--org', org])).toEqual({
      org_id: org,
      configured: false,
      rules: { version: 1, rules: [], decay: null },
      updated_at: null,
    });

    const rules = await file('rules.json', {
      version: 1,
      rules: [
        { event: 'purchase', points: 10, where: [{ property: 'plan', op: 'eq', value: 'pro' }], description: 'pro purchases' },
        { event: '$pageview', points: 1, where: [{ property: 'path', op: 'in', value: ['/pricing', '/plans'] }, { property: 'utm.source', op: 'exists' }] },
        { event: 'unsubscribe', points: -5 },
      ],
      decay: { half_life_days: 30 },
    });
    const set = await ok(t.url, ['rules', 'set', '--org', org, '--file', rules]);
    expect(set).toEqual({
      org_id: org,
      configured: true,
      rules: {
        version: 1,
        rules: [
          { event: 'purchase', points: 10, where: [{ property: 'plan', op: 'eq', value: 'pro' }], description: 'pro purchases' },
          { event: '$pageview', points: 1, where: [{ property: 'path', op: 'in', value: ['/pricing', '/plans'] }, { property: 'utm.source', op: 'exists', value: true }] },
          { event: 'unsubscribe', points: -5, where: [] },
        ],
        decay: { half_life_days: 30 },
      },
      updated_at: expect.any(String),
    });
    expect(await ok(t.url, ['rules', 'show', '--org', org])).toEqual(set);
    expect((await t.db('identity.engagement_rules').where({ org_id: org }).first()).half_life_days).toBe(30);

    // Replacing: the new document wins entirely.
    const replaced = await ok(t.url, ['rules', 'set', '--org', org, '--file', await file('v2.json', { version: 1, rules: [{ event: 'login', points: 1 }] })]);
    expect(replaced).toMatchObject({ configured: true, rules: { version: 1, rules: [{ event: 'login', points: 1, where: [] }], decay: null } });
    expect(Date.parse(String(replaced.updated_at))).toBeGreaterThanOrEqual(Date.parse(String(set.updated_at)));
    expect(await ok(t.url, ['rules', 'show', '--org', org])).toEqual(replaced);
  });

  it('an invalid file: every problem listed, exit 1, nothing stored', async () => {
    const before = await stored();
    const bad = await file('bad.json', {
      version: 1,
      rules: [
        { event: 'purchase', points: 5000 },
        { event: 'signup', points: 1, where: [{ property: 'plan', op: 'like', value: 'pro%' }] },
        { event: '', points: 1, where: [{ property: 'cart..total', op: 'gt', value: '100' }] },
      ],
      decay: { half_life_days: 0 },
    });
    const run = await svcctl(t.url, ['rules', 'set', '--org', org, '--file', bad]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    const problems = [
      '$.rules[0].points: must be a number from -1000 to 1000',
      '$.rules[1].where[0].op: must be one of eq, neq, gt, gte, lt, lte, in, exists',
      '$.rules[2].event: must be an event name of 1 to 200 characters, as stored ($pageview for page events)',
      '$.rules[2].where[0].property: must be a path of at most 200 characters into the event\'s properties: 1 to 10 keys of 1 to 100 characters separated by dots, e.g. "plan" or "cart.total"',
      '$.rules[2].where[0].value: must be a number for gt',
      '$.decay.half_life_days: must be a number of days greater than 0 and at most 3650',
    ];
    expect(JSON.parse(run.stderr)).toEqual({ error: `${bad} is not a valid engagement rules document (6 problems): ${problems.join('; ')}`, problems });
    expect(await stored()).toEqual(before);
  });

  const orgless = '00000000-0000-4000-8000-000000000000';
  it.each([
    ['not JSON', 1, ['--org', 'ORG', '--file', 'FILE:{"version": 1,'], /FILE is not valid JSON: /],
    ['a missing file', 1, ['--org', 'ORG', '--file', '/nonexistent/rules.json'], /--file \/nonexistent\/rules\.json cannot be read: ENOENT/],
    ['a directory', 1, ['--org', 'ORG', '--file', 'DIR'], /cannot be read: EISDIR/],
    ['an unknown organisation', 1, ['--org', orgless, '--file', 'FILE:{"version": 1, "rules": []}'], /organization 0{8}-.* not found/],
    ['no --file', 2, ['--org', 'ORG'], /missing required --file/],
  ] as Array<[string, number, string[], RegExp]>)('rules set with %s: JSON error, exit %d, nothing stored', async (_name, code, raw, message) => {
    const before = await stored();
    const args: string[] = [];
    let fileName = '';
    for (const a of raw) {
      if (a === 'ORG') args.push(org);
      else if (a === 'DIR') args.push(dir);
      else if (a.startsWith('FILE:')) args.push((fileName = await file(`f${Math.random().toString(36).slice(2)}.json`, a.slice(5))));
      else args.push(a);
    }
    const run = await svcctl(t.url, ['rules', 'set', ...args]);
    expect(run.code).toBe(code);
    expect(run.stdout).toBe('');
    expect(JSON.parse(run.stderr).error.replace(fileName || '\u0000', 'FILE')).toMatch(message);
    expect(await stored()).toEqual(before);
  });

  it('rules show of an unknown organisation fails', async () => {
    const run = await svcctl(t.url, ['rules', 'show', '--org', orgless]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stderr).error).toMatch(/organization .* not found/);
  });

  describe('identity-rules', () => {
    const storedIdentity = async () => (await t.db.raw('select org_id, rules from identity.identity_rules order by org_id')).rows as unknown[];

    it('shows the defaults, stores a valid file and shows it back', async () => {
      expect(await ok(t.url, ['identity-rules', 'show', '--org', org])).toEqual({
        org_id: org,
        configured: false,
        rules: { version: 1, phone: { default_region: null }, limits: {}, blocked: [], priority: ['email', 'phone', 'anonymous_id'] },
        updated_at: null,
      });
      const doc = { version: 1, phone: { default_region: 'GB' }, limits: { email: 5 }, blocked: [{ type: 'email', value: 'Support@Acme.io' }], priority: ['phone', 'email', 'anonymous_id'] };
      const set = await ok(t.url, ['identity-rules', 'set', '--org', org, '--file', await file('identity.json', doc)]);
      expect(set).toEqual({
        org_id: org,
        configured: true,
        rules: { ...doc, blocked: [{ type: 'email', value: 'support@acme.io' }] },
        updated_at: expect.any(String),
      });
      expect(await ok(t.url, ['identity-rules', 'show', '--org', org])).toEqual(set);
    });

    it('an invalid file: every problem listed, exit 1, nothing stored', async () => {
      const before = await storedIdentity();
      const bad = await file('identity-bad.json', { version: 2, phone: { default_region: 'UK' } });
      const run = await svcctl(t.url, ['identity-rules', 'set', '--org', org, '--file', bad]);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      const problems = ['$.version: must be 1', '$.phone.default_region: must be a country as an ISO 3166-1 alpha-2 code in capitals (GB, DE, IN, US), or null'];
      expect(JSON.parse(run.stderr)).toEqual({ error: `${bad} is not a valid identity rules document (2 problems): ${problems.join('; ')}`, problems });
      expect(await storedIdentity()).toEqual(before);
    });

    it.each([
      ['set', ['--file', 'FILE']],
      ['show', []],
    ])('identity-rules %s of an unknown organisation fails', async (verb, extra) => {
      const args = await Promise.all(extra.map(async (a) => (a === 'FILE' ? file('identity-ok.json', { version: 1 }) : a)));
      const run = await svcctl(t.url, ['identity-rules', verb, '--org', orgless, ...args]);
      expect(run.code).toBe(1);
      expect(JSON.parse(run.stderr).error).toMatch(/organization .* not found/);
    });
  });
});
