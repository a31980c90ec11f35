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

  // The same verdicts as checking with JSON.stringify every time, which it skips for small objects.
  const byStringify = (value: Record<string, unknown>): boolean =>
    JSON.stringify(value).length > 32 * 1024 && Object.values(value).some((v) => Buffer.byteLength(JSON.stringify(v) ?? '') > 32 * 1024);
  const near: Array<[string, Record<string, unknown>]> = [
    ['a 32 KiB string among others', { a: 'x'.repeat(32 * 1024 - 2), b: 1 }],
    ['a string one byte over', { a: 'x'.repeat(32 * 1024 - 1), b: true }],
    ['quotes escaped to twice their length', { a: '"'.repeat(16 * 1024) }],
    ['control characters escaped to six times', { a: '\u0001'.repeat(5462) }],
    ['an array of numbers', { a: Array.from({ length: 5000 }, (_, i) => i * 1.5e300) }],
    ['nested arrays and nulls', { a: [[null, [true, false]], { b: [undefined, 'y'.repeat(6000)] }] }],
    ['a date (toJSON)', { at: new Date(0), big: 'z'.repeat(32 * 1024 - 20) }],
    ['undefined values', { a: undefined, b: 'q'.repeat(100) }],
  ];
  it.each(near)('judges value size like JSON.stringify: %s', (_name, value) => {
    expect(softCapBreaches(value).includes('value_too_large')).toBe(byStringify(value));
  });
});
