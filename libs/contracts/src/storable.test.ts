import { describe, expect, it } from '@jest/globals';
import { Limits } from './limits';
import { toStorable } from './storable';

const nested = (depth: number): unknown => {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { k: value };
  return value;
};

describe('toStorable', () => {
  it('returns the very same object when there is nothing to repair', () => {
    const event = { a: 'x', b: [1, { c: 'y' }], d: null, e: 'emoji \u{1F600} is a valid pair' };
    expect(toStorable(event)).toEqual({ ok: true, value: event });
    expect((toStorable(event) as { value: unknown }).value).toBe(event);
  });

  it('removes U+0000 from keys and strings at any depth', () => {
    const event = { 'k\u0000': 'v\u0000al', list: ['\u0000', { deep: 'a\u0000b' }], n: 3 };
    expect(toStorable(event)).toEqual({ ok: true, value: { k: 'val', list: ['', { deep: 'ab' }], n: 3 } });
  });

  it('replaces lone surrogates (which jsonb refuses) with U+FFFD, in keys and values', () => {
    const event = { ['x\uD800']: 'a\uDC00b', list: ['\uD83D'] };
    expect(toStorable(event)).toEqual({ ok: true, value: { 'x\uFFFD': 'a\uFFFDb', list: ['\uFFFD'] } });
  });

  it('keeps __proto__ an own key and never touches a prototype', () => {
    const event = JSON.parse('{"__proto__": {"polluted\\u0000": 1}, "a": "\\u0000"}') as Record<string, unknown>;
    const result = toStorable(event);
    expect(result.ok && Object.keys(result.value)).toEqual(['__proto__', 'a']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['at the cap', Limits.maxNestingDepth, true],
    ['one past the cap', Limits.maxNestingDepth + 1, false],
    ['a million levels, without overflowing the stack', 1_000_000, false],
  ])('nesting %s', (_name, depth, ok) => {
    expect(toStorable(nested(depth)).ok).toBe(ok);
  });
});
