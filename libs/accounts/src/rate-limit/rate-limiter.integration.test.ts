import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import { rateLimitMigrations } from './migrations';
import { PostgresRateLimiter, type RateLimitRule } from './rate-limiter';

describeWithPostgres('PostgresRateLimiter', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase([rateLimitMigrations]);
  });
  afterAll(() => t.drop());

  /** The two buckets one hit counts against at once, as a per-IP and a per-organisation rule would be. */
  const ipAndOrgRules = (name: string, ipLimit: number, orgLimit: number): RateLimitRule[] => [
    { bucket: `ip:${name}`, limit: ipLimit },
    { bucket: `org:${name}`, limit: orgLimit },
  ];

  it('counts fixed one-minute windows per bucket and says when each window ends', async () => {
    const limiter = new PostgresRateLimiter(t.db);
    const at = new Date('2026-11-21T10:00:15.000Z');
    const rules = ipAndOrgRules('a', 2, 3);
    const verdicts = [];
    for (let i = 0; i < 4; i++) verdicts.push(await limiter.hit(rules, at));
    expect(verdicts.map((v) => v.map((x) => x.allowed))).toEqual([
      [true, true],
      [true, true],
      [false, true],
      [false, false],
    ]);
    expect(verdicts[1]![0]).toMatchObject({ hits: 2, remaining: 0, retryAfterSeconds: 45 });
    const nextWindow = await limiter.hit(rules, new Date('2026-11-21T10:01:00.000Z'));
    expect(nextWindow.map((v) => v.hits)).toEqual([1, 1]);
  });

  it('is shared by every instance on the same database, under concurrency', async () => {
    const a = new PostgresRateLimiter(t.db);
    const b = new PostgresRateLimiter(t.db);
    const at = new Date('2026-11-21T11:00:00.000Z');
    const rule = [{ bucket: 'shared', limit: 100 }];
    const results = await Promise.all(Array.from({ length: 150 }, (_, i) => (i % 2 ? a : b).hit(rule, at)));
    const allowed = results.filter((r) => r[0]!.allowed).length;
    expect(allowed).toBe(100);
    expect(Math.max(...results.map((r) => r[0]!.hits))).toBe(150);
  });

  it('hitIf: counts and judges as hit while the condition holds; counts nothing and says so when it does not', async () => {
    const limiter = new PostgresRateLimiter(t.db);
    const at = new Date('2026-11-21T12:00:30.000Z');
    const rules = ipAndOrgRules('cond', 1, 5);
    const holds = { sql: 'select 1 where ?::text = ?::text', bindings: ['a', 'a'] };
    const fails = { sql: 'select 1 where ?::text = ?::text', bindings: ['a', 'b'] };
    const first = await limiter.hitIf(rules, holds, at);
    expect(first?.map((v) => [v.hits, v.allowed, v.retryAfterSeconds])).toEqual([
      [1, true, 30],
      [1, true, 30],
    ]);
    expect(await limiter.hitIf(rules, fails, at)).toBeUndefined();
    const second = await limiter.hitIf(rules, holds, at);
    expect(second?.map((v) => [v.hits, v.allowed])).toEqual([
      [2, false],
      [2, true],
    ]);
    expect((await limiter.hit(rules, at)).map((v) => v.hits)).toEqual([3, 3]);
  });
});
