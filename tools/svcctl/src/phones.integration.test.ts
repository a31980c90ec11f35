import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import { ok as okArgs, svcctl as run } from './test-support/run';

const ok = (url: string, ...args: string[]) => okArgs(url, args);
const svcctl = (url: string, ...args: string[]) => run(url, args);

describeWithPostgres('svcctl phones restate', () => {
  let t: TestDatabase;
  let org: string;
  const profile = randomUUID();
  beforeAll(async () => {
    t = await createTestDatabase();
    org = String((await ok(t.url, 'org', 'create', '--name', 'Phoned Ltd')).id);
    const at = new Date();
    await t.db('identity.profiles').insert({ id: profile, org_id: org, canonical_id: 'prf_phoned000000000000000000', first_seen_at: at, last_seen_at: at });
    await t.db('identity.identity_signals').insert({ org_id: org, signal_type: 'phone', signal_value: '+912079460958', profile_id: profile, confidence: 0.8, first_seen_at: at, last_seen_at: at });
  });
  afterAll(() => t.drop());

  it('queues the organisation’s profiles holding a phone for the resolver; queued already, they are not queued twice', async () => {
    expect(await ok(t.url, 'phones', 'restate', '--org', org)).toEqual({ org_id: org, queued: 1 });
    expect(await t.db('identity.phone_restatements').select('org_id', 'profile_id', 'step')).toEqual([{ org_id: org, profile_id: profile, step: 1 }]);
    expect(await ok(t.url, 'phones', 'restate')).toEqual({ org_id: null, queued: 0 });
  });

  it('an unknown organisation: JSON error, exit 1', async () => {
    const result = await svcctl(t.url, 'phones', 'restate', '--org', '00000000-0000-4000-8000-000000000000');
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stderr).error).toMatch(/organization .* not found/);
  });
});
