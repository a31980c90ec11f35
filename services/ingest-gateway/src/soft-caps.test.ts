import { describe, expect, it } from '@jest/globals';
import { softCapBreaches } from './soft-caps';

const nest = (depth: number): Record<string, unknown> => (depth === 0 ? { leaf: 1 } : { n: nest(depth - 1) });

describe('softCapBreaches', () => {
  const cases: Array<[string, Record<string, unknown> | undefined, string[]]> = [
    ['nothing', undefined, []],
    ['small object', { a: 1, b: 'two' }, []],
    ['300 keys', Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, i])), []],
    ['301 keys', Object.fromEntries(Array.from({ length: 301 }, (_, i) => [`k${i}`, i])), ['too_many_keys']],
    ['a 32 KiB value', { big: 'x'.repeat(32 * 1024 - 2) }, []],
    ['a value over 32 KiB', { big: 'x'.repeat(32 * 1024) }, ['value_too_large']],
    ['many small values adding up', Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, 'y'.repeat(1000)])), []],
    ['8 levels deep', nest(7), []],
    ['9 levels deep', nest(8), ['too_deep']],
  ];
  it.each(cases)('%s', (_name, value, breaches) => {
    expect(softCapBreaches(value)).toEqual(breaches);
  });
});
