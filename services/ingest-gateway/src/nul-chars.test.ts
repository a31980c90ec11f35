import { describe, expect, it } from '@jest/globals';
import { withoutNulChars } from './nul-chars';

describe('withoutNulChars', () => {
  it('returns the very same object when there is nothing to remove', () => {
    const event = { a: 'x', b: [1, { c: 'y' }], d: null };
    expect(withoutNulChars(event)).toBe(event);
  });

  it('removes U+0000 from keys and strings at any depth', () => {
    const event = { 'k\u0000': 'v\u0000al', list: ['\u0000', { deep: 'a\u0000b' }], n: 3 };
    expect(withoutNulChars(event)).toEqual({ k: 'val', list: ['', { deep: 'ab' }], n: 3 });
  });
});
