import { describe, expect, it } from '@jest/globals';
import { InProcessRateLimiter } from './rate-limiter';

describe('InProcessRateLimiter', () => {
  const rules = [
    { bucket: 'a', limit: 2 },
    { bucket: 'b', limit: 3 },
  ];
  const at = (s: number) => new Date(Date.UTC(2026, 10, 27, 9, 0, s));

  it('counts each bucket in fixed one-minute windows, as the shared counters do', async () => {
    const limiter = new InProcessRateLimiter();
    const verdicts = [];
    for (const s of [1, 2, 3]) verdicts.push(await limiter.hit(rules, at(s)));
    expect(verdicts.map((v) => v.map((x) => [x.hits, x.allowed, x.remaining]))).toEqual([
      [[1, true, 1], [1, true, 2]],
      [[2, true, 0], [2, true, 1]],
      [[3, false, 0], [3, true, 0]],
    ]);
    expect(verdicts[2]![0]!.retryAfterSeconds).toBe(57);
  });

  it('starts a new window from nothing', async () => {
    const limiter = new InProcessRateLimiter();
    for (const s of [1, 2, 3]) await limiter.hit(rules, at(s));
    const next = await limiter.hit(rules, new Date(at(0).getTime() + 60_000));
    expect(next.map((v) => [v.hits, v.allowed])).toEqual([
      [1, true],
      [1, true],
    ]);
  });
});
