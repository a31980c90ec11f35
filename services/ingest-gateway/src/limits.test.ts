import { describe, expect, it } from '@jest/globals';
import { rememberedThroughOutage } from './limits';

describe('rememberedThroughOutage', () => {
  const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  const setUp = () => {
    let now = 0;
    let answer: number | Error = 41;
    const read = rememberedThroughOutage(
      () => (answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer)),
      60_000,
      () => now,
    );
    return { read, set: (a: number | Error) => (answer = a), advance: (ms: number) => (now += ms) };
  };
  const nov = new Date('2026-11-27T09:00:00Z');

  it('answers with the last reading of the month while the database is down, within the grace', async () => {
    const { read, set, advance } = setUp();
    expect(await read('o1', nov)).toBe(41);
    set(down);
    advance(60_000);
    expect(await read('o1', nov)).toBe(41);
    advance(1);
    await expect(read('o1', nov)).rejects.toThrow(down);
  });

  it.each([
    ['another organisation', 'o2', nov, down],
    ['another month', 'o1', new Date('2026-12-01T00:00:01Z'), down],
    ['an error that is no outage', 'o1', nov, new Error('relation does not exist')],
  ])('not for %s', async (_, org, at, err) => {
    const { read, set } = setUp();
    await read('o1', nov);
    set(err);
    await expect(read(org, at)).rejects.toThrow(err);
  });
});
